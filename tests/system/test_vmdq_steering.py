"""NetQueue's interrupt steering (``sim/placement.py::steers_vmdq_vectors``; 004: "Receive queues
can be assigned to each virtual NIC and mapped to guest memory to avoid a copy. Interrupts can
be moved to idle or optimal processor cores").

::

    16 VMDq vectors, 8 cores:  rxq0 (default) -> core irq_core, its own
                               rxq k (VM k-1)  -> VM k-1's vCPU core, buffers in VM k-1's memory
    fewer vectors than cores:  vector j -> core irq_core + j (idle cores: unchanged)
"""
from __future__ import annotations

from sim.builder import build
from sim.metrics import measure, snapshot
from sim.placement import make_plan

W = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1",
     "workload.rate_limit_mbps=300"]
VMDQ = ["experiment=vmdq_low_load_q16", *W]


def test_vmdq_vectors_follow_their_vms_when_no_core_is_left_idle(compose):
    cfg = compose(VMDQ, short=False)
    slots = make_plan(cfg).slots
    cps = cfg.host.cpu.cores_per_socket
    assert slots["nic0.rxq0.irq"].default[0] == cfg.host.irq_core
    for k in range(1, 16):
        vector, vcpu = slots[f"nic0.rxq{k}.irq"].default, slots[f"vm{k - 1}.vcpu0"].default
        assert vector == vcpu                                  # same core, same memory home
        assert vector[1] == vector[0] // cps
    # no VM context shares the default queue's core
    assert all(s.default[0] != cfg.host.irq_core for n, s in slots.items() if n.startswith("vm"))
    # with idle cores to spare (5 vectors on 12 cores) the vectors keep cores of their own
    driver = make_plan(compose(["experiment=v6_driver_native"])).slots
    assert [driver[f"nic0.rxq{k}.irq"].default[0] for k in range(5)] == [1, 2, 3, 4, 5]


def test_steered_vectors_pay_no_numa_penalty(compose):
    """A steered queue's handler runs on its VM's node and its buffers are the VM's: no
    `numa` nor `numa_copy` on the VMs' own queues (the default queue, shared by VMs 15-16, and
    the vCPUs of VMs on the far node still pay)."""
    cfg = compose(VMDQ, short=False)
    model = build(cfg)
    model.env.run(until=cfg.run.warmup_s)
    s0 = snapshot(model)
    model.env.run(until=cfg.run.warmup_s + cfg.run.measure_s)
    t = measure(model, s0, snapshot(model), cfg.run.measure_s, 0)[1]["cost_terms"]
    own = t[t["context"].str.match(r"nic0\.rxq([1-9]|1[0-5])\.irq")]
    assert own["cycles_per_s"].sum() > 0                     # they did receive
    assert own[own["term"].isin(["numa", "numa_copy"])]["cycles_per_s"].sum() == 0
