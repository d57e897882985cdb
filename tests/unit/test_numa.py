"""NUMA: remote penalties, safe migration between cores, placement policies, NUMA-aware I/O.

A task on ``packets``/``n_bytes`` whose home node differs from its core's node pays
``remote_per_packet_cycles`` per packet and ``remote_per_byte_cycles`` per byte, once per
remote home. A context moves only between tasks; arriving on a core where a task is running
(even on the single-context fast path) it waits: a core never runs two tasks. NUMA I/O packs a
card's networking contexts and its VMs on the card's node while the networking contexts use
less than the threshold (% of one core). Exact (name, env.now) sequences, SimPy style.
"""
import numpy as np
import pytest
import simpy

from models.cpu import Context, Cpu, CpuParams, NumaParams
from models.numa import NumaIoGroup, NumaIoScheduler
from sim.placement import Placement

GHZ = 1e9  # 1000 cycles = 1 us
NUMA = NumaParams(remote_per_packet_cycles=100.0, remote_per_byte_cycles=0.5)


def cpu(env, sockets=2, cores=2, numa=NUMA):
    return Cpu(env, CpuParams(sockets, cores, GHZ, context_switch_cycles=0.0, jitter_cv=0.0), numa)


def ctx(env, name, core, home=None):
    return Context(env, name, core, rng=np.random.default_rng(0), home=home)


def run_task(env, c, cycles, log, name, **kw):
    c.execute(cycles, **kw).callbacks.append(lambda _e: log.append((name, round(env.now * 1e6, 6))))


def test_remote_penalty_per_packet_and_byte_once_per_remote_home():
    env = simpy.Environment()
    cores = cpu(env).cores
    c = ctx(env, "a", cores[0])               # core 0 is on node 0; home defaults to node 0
    assert c.home_node == 0
    assert c.remote_penalty_cycles(10, 1000) == 0.0
    assert c.remote_penalty_cycles(10, 1000, home=1) == 10 * 100 + 1000 * 0.5
    assert c.remote_penalty_cycles(10, 1000, home=(0, 1)) == 1500.0
    assert c.remote_penalty_cycles(10, 1000, home=(1, 1)) == 3000.0
    far = ctx(env, "b", cores[2], home=0)      # core 2 is on node 1
    assert far.remote_penalty_cycles(1, 0) == 100.0


def test_remote_work_takes_longer_and_is_counted():
    env = simpy.Environment()
    cores = cpu(env).cores
    near, far = ctx(env, "near", cores[0], home=0), ctx(env, "far", cores[2], home=0)
    log = []
    run_task(env, near, 1000, log, "near", packets=10, n_bytes=1000)
    run_task(env, far, 1000, log, "far", packets=10, n_bytes=1000)
    run_task(env, far, 1000, log, "far-nocounts")  # no counts: no penalty (old call sites)
    env.run()
    assert log == [("near", 1.0), ("far", 2.5), ("far-nocounts", 3.5)]
    assert (near.remote_cycles, far.remote_cycles) == (0.0, 1500.0)
    assert far.cycles == pytest.approx(3500)


def test_uma_host_has_no_penalty():
    env = simpy.Environment()
    cores = cpu(env, numa=NumaParams()).cores
    far = ctx(env, "far", cores[2], home=0)
    assert far.remote_penalty_cycles(1000, 10**6) == 0.0


def test_move_applies_between_tasks_and_waits_for_a_fast_path_task():
    """b moves onto core 0 while a (alone there: fast path) runs a 10 us task: b's task waits
    for it; afterwards both arbitrate through the core's resource."""
    env = simpy.Environment()
    cores = cpu(env, sockets=1, cores=2, numa=NumaParams()).cores
    a, b = ctx(env, "a", cores[0]), ctx(env, "b", cores[1])
    log = []
    run_task(env, a, 10_000, log, "a1")            # 0..10 on core 0, fast path
    run_task(env, b, 1000, log, "b1")              # 0..1 on core 1

    def later():
        yield env.timeout(2e-6)
        b.move_to(cores[0])                        # b is idle: moves now
        assert (b.core, cores[0].n_contexts, cores[1].n_contexts) == (cores[0], 2, 0)
        run_task(env, b, 1000, log, "b2")          # must wait for a1
        run_task(env, a, 1000, log, "a2")          # queued behind b2 on the resource
    env.process(later())
    env.run()
    assert log == [("b1", 1.0), ("a1", 10.0), ("b2", 11.0), ("a2", 12.0)]
    assert cores[0].busy_time_s() == pytest.approx(12e-6)
    assert cores[1].busy_time_s() == pytest.approx(1e-6)
    assert b.moves == 1


def test_move_requested_mid_task_happens_after_it():
    env = simpy.Environment()
    cores = cpu(env, sockets=1, cores=2, numa=NumaParams()).cores
    a = ctx(env, "a", cores[0])
    log = []
    run_task(env, a, 5000, log, "a1")
    run_task(env, a, 1000, log, "a2")

    def later():
        yield env.timeout(1e-6)
        a.move_to(cores[1])
        assert a.core is cores[0]                  # still running a1 there
    env.process(later())
    env.run()
    assert log == [("a1", 5.0), ("a2", 6.0)]
    assert cores[0].busy_time_s() == pytest.approx(5e-6)
    assert cores[1].busy_time_s() == pytest.approx(1e-6)


# -- placement --------------------------------------------------------------------------------
def place(policy, n_vms=2, per_vm=2, numa_active=False, card_node=1):
    p = Placement(policy, sockets=2, cores_per_socket=4, irq_core=1, ports=1, rx_queues=1,
                  ports_per_card=2, card_node=lambda c: card_node, numa_active=numa_active)
    cores = {}
    for i in range(n_vms):
        p.start_vm(i, port=0)
        cores[i] = [p.next() for _ in range(per_vm)]
    return p, cores


def test_pinned_is_the_sources_set_up():
    p, cores = place("pinned")
    assert p.vector_core(0) == 1
    assert cores == {0: [0, 2], 1: [3, 4]}


def test_spread_deals_vms_round_the_sockets():
    p, cores = place("spread", n_vms=3)
    assert p.vector_core(0) == 1
    assert cores == {0: [0, 2], 1: [4, 5], 2: [3, 0]}   # node 0 has 3 free cores, then wraps


def test_numa_io_layout_packs_on_the_card_node():
    p, cores = place("numa_io", numa_active=True)
    assert p.vector_core(0) == 4                          # node 1 = cores 4..7
    assert cores == {0: [5, 6], 1: [7, 4]}
    assert p.layouts[0] == [(0, 5), (2, 6)]               # (default, NUMA) per context


# -- NUMA I/O ---------------------------------------------------------------------------------
def numa_io(threshold_pct, load):
    """A networking context busy ``load`` of every 100 us, first placed on node 0; the card on
    node 1. Returns its core's node after 2 ms."""
    env = simpy.Environment()
    cores = cpu(env).cores
    net = ctx(env, "net", cores[0], home=(0, 1))
    g = NumaIoGroup(card_node=1, networking=[net])
    g.layouts = {False: {net: (cores[0], (0, 1))}, True: {net: (cores[2], 1)}}

    def load_gen():
        while True:
            net.execute(100_000 * load)
            yield env.timeout(100e-6)
    env.process(load_gen())
    sched = NumaIoScheduler(env, [g], threshold_pct, period_s=1e-3)
    env.run(until=2.05e-3)
    return net.core.node, net.home_node, sched


@pytest.mark.parametrize("threshold, load, node", [(0, 0.3, 0), (50, 0.3, 1), (20, 0.3, 0),
                                                    (200, 0.9, 1)])
def test_numa_io_applies_below_the_threshold(threshold, load, node):
    got_node, home, sched = numa_io(threshold, load)
    assert got_node == node
    assert home == (1 if node == 1 else (0, 1))
    assert sched.last_load_pct[0] == pytest.approx(100 * load, rel=0.02)


def test_card_node_must_exist(compose):
    from sim.config import ConfigError
    with pytest.raises(ConfigError, match=r"host.numa.card_node=2: must be in 0..1"):
        compose(["host=r720", "host.numa.card_node=2"])


def test_pinned_keeps_a_vm_that_fits_a_node_on_its_home_node():
    """ESX's NUMA scheduler runs a VM that fits in one node only on its home node: 4 vCPUs do
    not straddle the sockets when the next free cores would (vSphere Resource Management,
    "How ESXi NUMA Scheduling Works")."""
    def vm_cores(vcpus):
        p = Placement("pinned", sockets=2, cores_per_socket=6, irq_core=1, ports=1, rx_queues=4,
                      ports_per_card=2, card_node=lambda c: 0, numa_active=False)
        p.start_vm(0, port=0, vcpus=vcpus)
        return [p.next() for _ in range(vcpus + 1)]      # the vCPUs, then a networking context
    # vectors on 1-4; free 0, 5 on node 0: 4 vCPUs go to node 1, the skipped cores come later
    assert vm_cores(4) == [6, 7, 8, 9, 10]
    assert vm_cores(2) == [0, 5, 6]                     # two fit on node 0: as before
    assert vm_cores(1) == [0, 5]
