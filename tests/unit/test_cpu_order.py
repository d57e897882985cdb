"""models.cpu event order: contexts as FIFO servers in virtual time, cores with booking queues.

In the style of SimPy's own event-order tests: each test builds a small scene and asserts the
exact sequence of (name, time in us) it produces. 1 GHz clock: 1000 cycles = 1 us. Every
parameter is given explicitly (no test depends on a default of CpuParams).
"""
import numpy as np
import pytest
import simpy

from models import costs
from models.cpu import Context, Core, Cpu, CpuParams, NumaParams

GHZ = 1e9


def params(switch=0.0, jitter=0.0, sockets=1, cores=1):
    return CpuParams(sockets=sockets, cores_per_socket=cores, clock_hz=GHZ,
                     context_switch_cycles=switch, jitter_cv=jitter)


def core(env, switch=0.0, jitter=0.0, index=0):
    return Core(env, index, 0, params(switch, jitter))


def context(env, name, on, seed=0, home=None):
    return Context(env, name, on, rng=np.random.default_rng(seed), home=home)


def us(env):
    return round(env.now * 1e6, 9)


class Counting:
    """Counts the events an environment processes (wraps ``step``)."""

    def __init__(self, env):
        self.n = 0
        step = env.step

        def counted():
            step()  # raises EmptySchedule when there is nothing left: not an event
            self.n += 1
        env.step = counted


def test_one_context_runs_its_tasks_fifo_and_a_callback_submits_behind_the_queue():
    env = simpy.Environment()
    a = context(env, "a", core(env))
    log = []

    def done(name, follow=None):
        log.append((name, us(env)))
        if follow:
            a.then(500, lambda: done(follow))
    a.then(1000, lambda: done("t1", follow="t4"))   # t4 joins the queue behind t2 and t3
    a.then(2000, lambda: done("t2"))
    a.then(500, lambda: done("t3"))
    assert a.backlog == 2                             # t1 in service, t2 and t3 waiting
    env.run()
    assert log == [("t1", 1.0), ("t2", 3.0), ("t3", 3.5), ("t4", 4.0)]
    assert (a.tasks, a.cycles, a.backlog) == (4, 4000.0, 0)


def test_then_creates_one_event_per_task_and_execute_two():
    env = simpy.Environment()
    a = context(env, "a", core(env))
    events = Counting(env)
    for _ in range(10):
        a.then(100, lambda: None)
    env.run()
    assert events.n == 10                  # the completion timeouts, nothing else
    for _ in range(10):
        a.execute(100)
    env.run()
    assert events.n == 10 + 20             # plus the returned events


def test_two_contexts_on_one_core_are_served_in_request_order_switching_on_alternation():
    env = simpy.Environment()
    c = core(env, switch=500)
    a, b, d = context(env, "a", c), context(env, "b", c), context(env, "d", c)
    log = []

    def task(ctx, name, cycles=1000):
        ctx.then(cycles, lambda: log.append((name, us(env))))
    task(a, "a1")          # 0 .. 1: the core was idle and had run nobody: no switch
    task(b, "b1")          # booked first
    task(d, "d1")          # booked second
    task(a, "a2")          # a takes it when a1 ends: booked behind b and d
    assert c.running and c.waiting == 2
    env.run()
    assert log == [("a1", 1.0), ("b1", 2.5), ("d1", 4.0), ("a2", 5.5)]
    assert c.switches == 3
    for ctx, switches in ((a, 1), (b, 1), (d, 1)):
        assert ctx.term_cycles.get(costs.WORLD_SWITCH, 0.0) == 500 * switches
    # The same context back to back pays nothing; alternating pays each time.
    log.clear()
    task(a, "a3")
    task(a, "a4")
    env.run()
    task(b, "b2")
    env.run()
    assert log == [("a3", 6.5), ("a4", 7.5), ("b2", 9.0)]   # a3: the core last ran a
    assert c.switches == 4
    assert c.busy_time_s() == pytest.approx(9e-6)
    assert sum(x.busy_time_s() for x in (a, b, d)) == pytest.approx(c.busy_time_s())


def test_a_core_of_its_own_never_charges_a_switch():
    env = simpy.Environment()
    c = core(env, switch=500)
    a = context(env, "a", c)
    log = []
    for name in ("a1", "a2"):
        a.then(1000, lambda name=name: log.append((name, us(env))))
    env.run()
    assert log == [("a1", 1.0), ("a2", 2.0)] and c.switches == 0


def test_busy_time_is_exact_at_instants_inside_a_task():
    env = simpy.Environment()
    c = core(env, switch=1000)
    a, b = context(env, "a", c), context(env, "b", c)
    a.then(4000, lambda: None)     # a: 0 .. 4
    b.then(2000, lambda: None)     # b waits 0 .. 4 (not busy), switch + work: 4 .. 7
    seen = []

    def probe():
        for t in (0.0, 1.0, 2.5, 4.0, 5.5, 7.0, 9.0):
            yield env.timeout(t * 1e-6 - env.now)
            seen.append((round(env.now * 1e6, 9), a.busy_time_s() * 1e6, b.busy_time_s() * 1e6,
                         c.busy_time_s() * 1e6))
    env.process(probe())
    env.run()
    want = [(0.0, 0, 0, 0), (1.0, 1, 0, 1), (2.5, 2.5, 0, 2.5), (4.0, 4, 0, 4),
            (5.5, 4, 1.5, 5.5), (7.0, 4, 3, 7), (9.0, 4, 3, 7)]
    assert [s[0] for s in seen] == [w[0] for w in want]
    for got, w in zip(seen, want):
        assert got[1:] == pytest.approx(w[1:], abs=1e-9), got


def test_ties_at_one_instant_follow_call_order_on_every_run():
    """A task ends at the instant two processes wake and submit to contexts sharing its core:
    the completion (scheduled first) frees the core, then the processes ask in the order they
    were created; the first gets the core at once, the second books it. Same on every run."""
    def scene():
        env = simpy.Environment()
        c = core(env, switch=100)
        a, b, d = context(env, "a", c), context(env, "b", c), context(env, "d", c)
        log = []

        def task(ctx, name):
            ctx.then(1000, lambda: log.append((name, us(env))))

        def at(t, ctx, name):
            yield env.timeout(t)
            task(ctx, name)
        task(d, "d0")                                   # 0 .. 1: busy at 1 us when a1, b1 ask
        env.process(at(1e-6, b, "b1"))                  # created first: asks first
        env.process(at(1e-6, a, "a1"))
        env.run()
        return log, c.switches
    first = scene()
    assert first == ([("d0", 1.0), ("b1", 2.1), ("a1", 3.2)], 2)
    assert all(scene() == first for _ in range(3))


def test_ties_between_contexts_of_different_cores_with_jitter_repeat_exactly():
    """A busy scene (jitter, NUMA, world switches, shared and own cores): identical logs and
    counters on every run."""
    def scene():
        env = simpy.Environment()
        cpu = Cpu(env, CpuParams(sockets=2, cores_per_socket=1, clock_hz=GHZ,
                                 context_switch_cycles=300, jitter_cv=0.3),
                  NumaParams(remote_per_packet_cycles=50, remote_per_byte_cycles=0.1))
        ctxs = [context(env, f"c{i}", cpu.cores[i % 2], seed=i, home=0) for i in range(5)]
        log = []

        def chain(i, n):
            if n:
                ctxs[i].then({costs.APP: 700 + 100 * i},
                             lambda: (log.append((i, n, env.now)), chain((i + n) % 5, n - 1)),
                             packets=1, n_bytes=100)
        for i in range(5):
            chain(i, 12)
        env.run()
        return log, [(c.cycles, c.busy_time_s(), dict(c.term_cycles)) for c in ctxs]
    first = scene()
    assert len(first[0]) == 5 * 12
    assert scene() == first


def test_a_callback_runs_at_the_completion_instant_with_the_task_accounted():
    env = simpy.Environment()
    c = core(env)
    a, b = context(env, "a", c), context(env, "b", core(env, index=1))
    log = []

    def done():
        log.append(("a1 done", us(env), a.tasks, a.busy_time_s() * 1e6, a.cycles))
        b.then(500, lambda: log.append(("b1 done", us(env))))   # starts at once, no hand-off
    a.then(1500, done)
    env.run()
    assert log == [("a1 done", 1.5, 1, pytest.approx(1.5), 1500.0), ("b1 done", 2.0)]


def test_execute_event_succeeds_at_completion_for_a_generator_caller():
    env = simpy.Environment()
    a = context(env, "a", core(env))
    log = []

    def app():
        for n in (1000, 3000):
            ev = a.execute(n)
            assert not ev.triggered
            yield ev
            log.append(("done", us(env), ev.ok, a.tasks))
    env.process(app())                  # starts when the run does: its tasks queue behind
    ev = a.execute(500)                 # this one, which starts at once (0 .. 0.5)
    ev.callbacks.append(lambda e: log.append(("cb", us(env), e.ok)))
    env.run()
    assert log == [("cb", 0.5, True), ("done", 1.5, True, 2), ("done", 4.5, True, 3)]


def test_terms_add_up_to_cycles_with_jitter_numa_and_switches():
    env = simpy.Environment()
    cpu = Cpu(env, CpuParams(sockets=2, cores_per_socket=1, clock_hz=GHZ,
                             context_switch_cycles=400, jitter_cv=0.4),
              NumaParams(remote_per_packet_cycles=100, remote_per_byte_cycles=0.5))
    near = context(env, "near", cpu.cores[0], seed=1, home=0)
    far = context(env, "far", cpu.cores[0], seed=2, home=1)       # remote: its home is node 1
    both = context(env, "both", cpu.cores[1], seed=3, home=(0, 1))
    for i in range(200):
        near.then({costs.STACK_TX: 900, costs.DRIVER_TX: 100}, lambda: None, packets=2,
                  n_bytes=3000)
        far.then({costs.STACK_RX: 700}, lambda: None, packets=1, n_bytes=1500)
        both.then(250 + i, lambda: None, packets=1, n_bytes=64)   # bare: 'unattributed'
    checks = []

    def probe():                        # the identity holds at any instant, mid-task too
        while True:
            yield env.timeout(3.3e-6)
            checks.append(all(sum(c.term_cycles.values()) == pytest.approx(c.cycles, rel=1e-12)
                              for c in (near, far, both)))
    env.process(probe())
    env.run(until=1e-3)
    assert checks and all(checks)
    for c in (near, far, both):
        assert c.tasks == 200
        assert sum(c.term_cycles.values()) == pytest.approx(c.cycles, rel=1e-12)
        assert c.term_cycles.get(costs.NUMA, 0.0) == pytest.approx(c.remote_cycles)
        assert c.cycles == pytest.approx(c.busy_time_s() * GHZ, rel=1e-9)
    assert costs.NUMA not in near.term_cycles
    assert far.remote_cycles == pytest.approx(200 * (100 + 0.5 * 1500))
    assert both.remote_cycles == pytest.approx(200 * (100 + 0.5 * 64))     # one remote home
    assert both.term_cycles[costs.UNATTRIBUTED] == sum(250 + i for i in range(200))
    switches = near.term_cycles[costs.WORLD_SWITCH] + far.term_cycles[costs.WORLD_SWITCH]
    assert switches == 400 * cpu.cores[0].switches > 0
    assert costs.WORLD_SWITCH not in both.term_cycles                     # a core of its own
    assert all(costs.JITTER in c.term_cycles for c in (near, far, both))
    assert (near.packets, near.bytes) == (400, 600_000)


def test_jitter_is_one_draw_per_task_in_start_order_from_the_contexts_stream():
    env = simpy.Environment()
    c = core(env, switch=0, jitter=0.3)
    a, b = context(env, "a", c, seed=11), context(env, "b", c, seed=12)
    starts = []
    for i in range(6):
        for ctx in (a, b):
            ctx.then(1000, lambda ctx=ctx: starts.append((ctx.name, env.now)))
    env.run()
    shape = 1 / 0.3 ** 2
    draws = {n: np.random.default_rng(s).gamma(shape, 1 / shape, 4096) for n, s in
             (("a", 11), ("b", 12))}
    # Served alternately a, b, a, b, ... (each next task of a context queues behind the other).
    assert [n for n, _ in starts] == ["a", "b"] * 6
    t, k = 0.0, {"a": 0, "b": 0}
    for name, end in starts:
        t += 1e-6 * draws[name][k[name]]
        k[name] += 1
        assert end == pytest.approx(t, rel=1e-12)


def test_move_to_happens_between_tasks_and_prices_numa_on_the_new_core():
    env = simpy.Environment()
    cpu = Cpu(env, CpuParams(sockets=2, cores_per_socket=1, clock_hz=GHZ,
                             context_switch_cycles=0, jitter_cv=0),
              NumaParams(remote_per_packet_cycles=1000, remote_per_byte_cycles=0))
    c0, c1 = cpu.cores
    a = context(env, "a", c0, home=0)
    log = []
    for name in ("a1", "a2"):
        a.then(2000, lambda name=name: log.append(
            (name, us(env), round(c0.busy_time_s() * 1e6, 9), round(c1.busy_time_s() * 1e6, 9))),
            packets=1)

    def mover():
        yield env.timeout(1e-6)
        a.move_to(c1)                          # mid-a1: applied when a takes a2
        log.append(("move", us(env), a.core.index))
    env.process(mover())
    env.run()
    # a2 runs on node 1 while a's home is node 0: +1000 cycles of NUMA penalty.
    # (the callback of a1 runs after a took a2, on core 1: busy there from 2 us)
    assert log == [("move", 1.0, 0), ("a1", 2.0, 2.0, 0.0), ("a2", 5.0, 2.0, 3.0)]
    assert (c0.busy_time_s(), c1.busy_time_s()) == (pytest.approx(2e-6), pytest.approx(3e-6))
    assert (a.moves, c0.n_contexts, c1.n_contexts, a.remote_cycles) == (1, 0, 1, 1000)
    a.move_to(c0)                              # idle: at once
    assert (a.core, a.moves, c0.n_contexts) == (c0, 2, 1)


def test_a_move_requested_while_waiting_for_the_core_waits_for_that_task():
    env = simpy.Environment()
    c0, c1 = core(env, switch=0), core(env, switch=0, index=1)
    a, b = context(env, "a", c0), context(env, "b", c0)
    log = []
    a.then(3000, lambda: log.append(("a1", us(env))))
    b.then(1000, lambda: log.append(("b1", us(env))))   # booked behind a1
    b.then(1000, lambda: log.append(("b2", us(env))))
    b.move_to(c1)                              # b holds a task for c0: not now
    assert b.core is c0
    env.run()
    assert log == [("a1", 3.0), ("b1", 4.0), ("b2", 5.0)]
    assert (c0.busy_time_s(), c1.busy_time_s()) == (pytest.approx(4e-6), pytest.approx(1e-6))
    assert (b.core, b.moves, c0.n_contexts, c1.n_contexts) == (c1, 1, 1, 1)


def test_a_context_moved_onto_a_running_core_never_overlaps_its_task():
    """a has core 0 to itself (no arbitration, no switch); b moves in mid-task and submits:
    b waits for a's task, pays one switch, and a's next task queues behind b's."""
    env = simpy.Environment()
    c0, c1 = core(env, switch=500), core(env, switch=500, index=1)
    a, b = context(env, "a", c0), context(env, "b", c1)
    log = []
    a.then(10_000, lambda: log.append(("a1", us(env))))
    a.then(1000, lambda: log.append(("a2", us(env))))

    def move_b():
        yield env.timeout(2e-6)
        b.move_to(c0)
        b.then(1000, lambda: log.append(("b1", us(env))))
        assert c0.running and c0.waiting == 1
    env.process(move_b())
    env.run()
    assert log == [("a1", 10.0), ("b1", 11.5), ("a2", 13.0)]
    assert c0.busy_time_s() == pytest.approx(13e-6) and c0.switches == 2


def test_a_charge_books_cycles_without_an_event_and_the_next_task_starts_after_it():
    """``charge``: work nobody waits for. On an idle context with its core free it is booked
    (no event): the context and the core are busy until it ends, a task submitted meanwhile
    starts then; its cycles are credited at once; busy time stays exact at every instant."""
    env = simpy.Environment()
    c = core(env)
    a = context(env, "a", c)
    events = Counting(env)
    log = []
    a.charge({costs.EXITS: 2000.0})                                  # 0 .. 2, no event
    assert len(env._queue) == 0 and a.tasks == 1 and a.cycles == 2000.0
    assert a.term_cycles == {costs.EXITS: 2000.0}
    seen = []

    def probe():
        yield env.timeout(0.5e-6)
        seen.append((us(env), a.busy_time_s() * 1e6, c.busy_time_s() * 1e6))
        a.then(1000, lambda: log.append(("t1", us(env))))            # starts at 2: 2 .. 3
        yield env.timeout(1e-6)
        seen.append((us(env), a.busy_time_s() * 1e6, c.busy_time_s() * 1e6))
        yield env.timeout(1e-6)
        seen.append((us(env), a.busy_time_s() * 1e6, c.busy_time_s() * 1e6))
        yield env.timeout(2e-6)
        seen.append((us(env), a.busy_time_s() * 1e6, c.busy_time_s() * 1e6))
    env.process(probe())
    env.run()
    assert log == [("t1", 3.0)]
    assert seen == [(0.5, pytest.approx(0.5), pytest.approx(0.5)),
                    (1.5, pytest.approx(1.5), pytest.approx(1.5)),
                    (2.5, pytest.approx(2.5), pytest.approx(2.5)),
                    (4.5, pytest.approx(3.0), pytest.approx(3.0))]
    assert events.n == 1 + 6       # t1's completion; the probe (start, 4 timeouts, end)
    assert (a.tasks, a.cycles) == (2, 3000.0)


def test_a_charge_keeps_fifo_order_and_is_a_plain_task_on_a_shared_core():
    env = simpy.Environment()
    c = core(env, switch=500)
    a = context(env, "a", c)
    events = Counting(env)
    log = []
    a.then(1000, lambda: log.append(("a1", us(env))))   # 0 .. 1
    a.charge(1000)                                      # behind a1: booked at 1, 1 .. 2
    a.then(1000, lambda: log.append(("a2", us(env))))   # behind the charge: 2 .. 3
    env.run()
    assert log == [("a1", 1.0), ("a2", 3.0)] and a.tasks == 3 and events.n == 2
    # On a core shared with b a charge is an ordinary task (one event): the core's booking
    # order, and the alternation it gives, stay those of ``then``.
    b = context(env, "b", c)
    a.charge(1000)                                      # 3 .. 4: a plain task
    b.then(1000, lambda: log.append(("b1", us(env))))   # booked: switch + work 4 .. 5.5
    a.then(1000, lambda: log.append(("a3", us(env))))   # a's next, behind b: 5.5 .. 7
    env.run()
    assert log[-2:] == [("b1", 5.5), ("a3", 7.0)] and events.n == 2 + 3
    assert c.busy_time_s() == pytest.approx(7e-6) and c.switches == 2
    assert a.busy_time_s() + b.busy_time_s() == pytest.approx(c.busy_time_s())
    for ctx in (a, b):
        assert sum(ctx.term_cycles.values()) == pytest.approx(ctx.cycles)


def test_a_context_moved_onto_a_core_waits_for_the_charge_booked_there():
    env = simpy.Environment()
    c0, c1 = core(env, index=0), core(env, index=1)
    a, b = context(env, "a", c0), context(env, "b", c1)
    log = []
    a.charge(2000)                                      # c0 busy 0 .. 2, no event
    b.move_to(c0)                                       # b is idle: moves now
    b.then(1000, lambda: log.append(("b1", us(env))))   # waits for the charge: 2 .. 3
    env.run()
    assert log == [("b1", 3.0)]
    assert c0.busy_time_s() == pytest.approx(3e-6) and c1.busy_time_s() == 0.0
