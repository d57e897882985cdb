"""`python -m sim path`: the declared data path of a flow, hop by hop, with its priced terms.

The default experiment's path lists every hop of the data-path diagram in docs/models.md, and
what a hop declares is what its pass-cost function charges."""
import re

import pytest

from models import costs
from models.base import DATA, Burst
from sim.fluid import POLL_BEYOND

# The diagram's hops (docs/models.md), in order: data VM -> peer, then the ACKs back.
DATA_HOPS = ["vm0.vcpu0", "vm0.vnic.tx_ring", "vm0.net", "vswitch0.pending_tx",
             "nic0.txq0.tx_ring", "card0.down", "nic0.wire_tx", "peer0.nic.rxqN.rx_ring",
             "peer0.softirq", "peer0.app0"]
ACK_HOPS = ["peer0.softirq", "peer0.nic.txq0.tx_ring", "peer0.nic.wire_tx", "nic0.rxq0.rx_ring",
            "card0.up", "nic0.rxq0.irq", "vm0.vnic.rx_ring", "vm0.vcpu0"]


def test_default_path_lists_every_hop_of_the_diagram(sim_cli):
    proc = sim_cli("path")
    assert proc.returncode == 0, proc.stderr
    hops = [line.split("]")[1].split()[0] for line in proc.stdout.splitlines()
            if line.strip().startswith("[")]
    # the client spreads flows over RSS queues: the flow's queue and softirq, whichever it is
    hops = [re.sub(r"^peer0\.softirq\d*$", "peer0.softirq",
                   re.sub(r"^peer0\.nic\.rxq\d+", "peer0.nic.rxqN", h)) for h in hops]
    first_flow = hops[:len(DATA_HOPS) + len(ACK_HOPS)]
    assert first_flow == DATA_HOPS + ACK_HOPS
    for term in ("app_send", "stack_tx", "backend_tx", "vswitch", "driver_tx", "driver_rx",
                 "backend_rx", "guest_driver_rx", "stack_ack_rx", "app_recv"):
        assert term in proc.stdout, term


def test_bad_flow_is_one_line(sim_cli):
    proc = sim_cli("path", "--flow", "99")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--flow=99" in proc.stderr


@pytest.mark.parametrize("experiment", ["e35_rx_single_vm", "mc_split_30k", "g80_send",
                                        "vxlan_rx", "dev_e1000_32_1g_rr"])
def test_every_kind_of_path_builds(compose, experiment):
    from sim.builder import build
    from sim.path import CONTEXT, describe, flow_paths
    model = build(compose([f"experiment={experiment}"]))
    paths = flow_paths(model)
    assert paths and all(any(h.kind == CONTEXT and h.charges for h in p.data) for p in paths)
    assert describe(model)


def test_declared_rx_vector_charges_are_what_its_pass_costs(compose):
    """The RX vector's declared charges, applied to a batch's counts, give the terms
    ``HypervisorRx.cost`` charges for it (no software LRO, no NUMA: e35)."""
    from sim.builder import build
    model = build(compose(["experiment=e35_rx_single_vm"]))
    rx, vnic, vswitch = model.hv_rx[0], model.vnics[0], model.vswitches[0]
    batch = [Burst(DATA, 0, 10 * 1448, 10, 10, 52, 1448, dst=0)]
    got = rx.cost(rx.prepare(batch, None), is_interrupt=True)
    declared = [*model.cfg.hypervisor.driver_charges("rx"), *vswitch.charges("rx"),
                *vnic.backend_charges("rx")]
    want: dict = {}
    for c in declared:  # one interrupt, one pass, 10 packets of 1448 bytes
        if c.per == POLL_BEYOND:  # the poll budget: max(passes, packets / budget) polls
            costs.add(want, c.term, max(c.fixed_cycles, 10 * c.per_packet_cycles))
            continue
        costs.add(want, c.term, c.fixed_cycles + 10 * c.per_packet_cycles
                  + 10 * 1448 * c.per_byte_cycles)
    assert "driver_poll" in want and got == pytest.approx(want)
