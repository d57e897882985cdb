"""A multi-vCPU guest whose vNIC has one receive queue (vSphere 5.5, V6-vnic-rx)::

    RX vector -> vNIC queue 0 -> vCPU0: driver, TCP input, ACKs out (the softirq's CPU)
                                   |  wakes the reader of flow f (reschedule IPI: an exit here)
                                   v
                              vCPU f mod 4: recv() (halted: woken first, as by an interrupt)

The ACKs of every flow leave from vCPU0, which took the data in; each wake-up of a reader on a
halted vCPU costs vCPU0 one exit (``hypervisor.vm_exit_cycles``) and the reader's vCPU one
halt wake-up (``hypervisor.vcpu_halt_wakeup_cycles``). With a queue per vCPU (vSphere 6.0's
RSS into the vNIC) each flow's input and reader share a vCPU and no IPI is sent.
"""
import pytest

SHORT = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1"]
ONE_QUEUE = ["experiment=v6_vnic_rx_55", *SHORT]


def test_a_reader_on_a_halted_vcpu_is_woken_by_an_ipi(compose, compose_raw, run_one):
    wake = compose_raw(ONE_QUEUE, short=False)["hypervisor"]["vcpu_halt_wakeup_cycles"]
    assert wake > 0
    model, _, _ = run_one(compose(ONE_QUEUE, short=False))
    vm = model.vms[0]
    vcpus = {c.name: c for c in model.contexts if c.name.startswith("vm0.vcpu")}
    assert len(vcpus) == 4 and vm.ipi_wakeups > 0
    others = [vcpus[f"vm0.vcpu{k}"] for k in (1, 2, 3)]
    # vCPUs 1-3 get no virtual interrupt: every halt wake-up they pay is an IPI's
    paid = sum(c.term_cycles.get("halt_wakeup", 0.0) for c in others)
    assert paid == pytest.approx(wake * vm.ipi_wakeups, rel=1e-9)
    # the ACKs leave from the vCPU that took the data in; the readers' vCPUs send only the
    # window updates their reads open (a few per read, against one per aggregate)
    acks = {n: c.term_cycles.get("stack_ack_tx", 0.0) for n, c in vcpus.items()}
    assert acks["vm0.vcpu0"] > 5 * max(acks[c.name] for c in others)


def test_no_ipi_when_each_flow_has_its_own_queue_on_its_readers_vcpu(compose, run_one):
    model, _, _ = run_one(compose(["experiment=v6_vnic_rx_60", *SHORT], short=False))
    assert model.vms[0].ipi_wakeups == 0
