"""The hypervisor scheduler's time slice (``hypervisor.sched_quantum_us``, ``models.cpu``).

A context on a shared core keeps it while it has work (queued, or submitted by its task's own
callback, as a poll loop does) until its slice has run; then the core goes to the context that
booked it. With no quantum the core hands over after every task.
"""
import numpy as np
import simpy

from models.cpu import Context, Core, CpuParams
from sim.compose import compose_checked

GHZ = 1e9  # 1000 cycles = 1 us


def _run(quantum_s: float) -> tuple[float, float]:
    """A runs a poll loop of 10 passes of 10 us (each pass submitted by the previous one's
    callback); B asks for one 10-us task 1 us after A started. Returns B's and A's end (us)."""
    env = simpy.Environment()
    params = CpuParams(sockets=1, cores_per_socket=1, clock_hz=GHZ, context_switch_cycles=0.0,
                       jitter_cv=0.0)
    core = Core(env, 0, 0, params, quantum_s=quantum_s)
    a = Context(env, "a", core, rng=np.random.default_rng(0))
    b = Context(env, "b", core, rng=np.random.default_rng(1))
    ends = {}
    left = [10]

    def pass_done():
        left[0] -= 1
        if left[0]:
            a.then(10_000.0, pass_done)
        else:
            ends["a"] = env.now * 1e6

    a.then(10_000.0, pass_done)
    env.timeout(1e-6).callbacks.append(
        lambda _e: b.then(10_000.0, lambda: ends.__setitem__("b", env.now * 1e6)))
    env.run()
    return ends["b"], ends["a"]


def test_a_context_keeps_its_core_for_its_slice():
    b_end, a_end = _run(0.0)  # per task: B gets the core after A's first pass
    assert round(b_end, 6) == 20.0 and round(a_end, 6) == 110.0
    b_end, a_end = _run(0.05)  # 50 ms: A's loop runs to its end (it blocks), then B
    assert round(a_end, 6) == 100.0 and round(b_end, 6) == 110.0
    b_end, a_end = _run(35e-6)  # a 35-us slice: A keeps the core for 4 passes (40 us)
    assert round(b_end, 6) == 50.0 and round(a_end, 6) == 110.0


def test_the_quantum_is_off_by_default_and_reaches_the_cores():
    cfg = compose_checked(["experiment=mc_split_40k"])
    assert cfg.hypervisor.sched_quantum_us == 0.0  # off until wake-up preemption is modelled
    cfg = compose_checked(["experiment=mc_split_40k", "hypervisor.sched_quantum_us=50000"])
    from sim.builder import build
    assert build(cfg).cpu.cores[0].quantum_s == 0.05
