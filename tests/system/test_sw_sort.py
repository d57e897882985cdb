"""The software sort of received frames a NIC queue did not sort (``hypervisor.vswitch.sort``,
term ``sw_sort``; 004: with NetQueue/VMDq "the hypervisor's virtual switch merely reroutes the
packets to the VM instead of performing the processor-intensive work of sorting data").

::

    NetQueue off:  wire -> rxq0 (all VMs) -> handler: driver + vswitch + sw_sort -> VMs
    VMDq:          wire -> rxq1 (vm0) -> handler: driver + vswitch -> vm0
                        -> rxq2 (vm1) -> ...
                        -> rxq0 (VMs beyond the filters, shared) -> ... + sw_sort
"""
from __future__ import annotations

import pytest

from models.base import Stats
from models.nic import NicParams, NicPort

W = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1",
     "workload.rate_limit_mbps=300"]
OFF = ["experiment=vmdq_low_load_off", "workload.vms=3", *W]
VMDQ = ["experiment=vmdq_low_load_q16", "workload.vms=3", *W]


def _tables(compose, run_one, overrides):
    return run_one(compose(overrides, short=False))[2]


def _terms(tables, term):
    t = tables["cost_terms"]
    return t[t["term"] == term].set_index("context")


def test_shared_queues_are_those_the_sorter_does_not_dedicate_to_one_port():
    def port(n, sort):
        import simpy
        return NicPort(simpy.Environment(), "p", NicParams(rx_queues=n, rx_sort=sort), Stats())
    assert port(1, "single").shared_queues([0, 1, 2]) == {0}
    assert port(1, "single").shared_queues([0]) == set()      # one port: nothing to sort
    assert port(16, "vmdq").shared_queues(range(15)) == set()  # a queue per VM
    assert port(16, "vmdq").shared_queues(range(17)) == {0}    # VMs 15, 16 share the default
    assert port(4, "rss").shared_queues([0, 1]) == {0, 1, 2, 3}


def test_without_netqueue_the_default_queue_pays_the_sort_per_packet(compose, compose_raw,
                                                                     run_one):
    """NetQueue off: the one queue's handler pays ``sort.per_packet_cycles`` for every packet it
    switches (as many as the vswitch term counts); setting the price to 0 removes the term."""
    vs = compose_raw(OFF, short=False)["hypervisor"]["vswitch"]
    price, fwd = vs["sort"]["per_packet_cycles"], vs["cost"]["per_packet_cycles"]
    assert price > 0 and fwd > 0
    t = _tables(compose, run_one, OFF)
    sort, vswitch = _terms(t, "sw_sort"), _terms(t, "vswitch")
    irq = "nic0.rxq0.irq"
    assert list(sort.index) == [irq]
    assert sort.loc[irq, "cycles_per_packet"] == pytest.approx(price, rel=1e-6)
    # every packet the vswitch forwarded from the wire was sorted first
    assert sort.loc[irq, "cycles_per_s"] / price == pytest.approx(
        vswitch.loc[irq, "cycles_per_s"] / fwd, rel=1e-6)
    t0 = _tables(compose, run_one, [*OFF, "hypervisor.vswitch.sort.per_packet_cycles=0"])
    assert _terms(t0, "sw_sort").empty


def test_vmdq_queues_skip_the_sort_except_the_shared_default_queue(compose, run_one):
    """VMDq with a queue per VM: no sort anywhere; with 2 queues for 3 VMs, VM 0 has queue 1
    (no sort) and VMs 1 and 2 share the default queue 0, whose handler sorts."""
    t = _tables(compose, run_one, VMDQ)
    assert _terms(t, "sw_sort").empty
    t2 = _tables(compose, run_one, [*VMDQ, "nic.rx_queues=2"])
    sort = _terms(t2, "sw_sort")
    assert list(sort.index) == ["nic0.rxq0.irq"]
    assert sort.loc["nic0.rxq0.irq", "cycles_per_s"] > 0
