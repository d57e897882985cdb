"""Every TCP connection of every workload starts where its receiver's SYN-ACK put it: the
sender's right edge is the window the receiver advertises (not the sender's own buffer), on
both halves of each connection and on every host (``models.workloads.base.open_connection``)."""
import pytest

from sim.builder import build

CASES = {
    "stream-tx": ["experiment=e35_tx_single_vm"],
    "stream-rx-windows": ["experiment=e35_rx_windows"],     # no window scaling: <= 64KB
    "stream-8k": ["experiment=e35_tx_small_socket"],
    "rr": ["experiment=dev_vmxnet_64_10g_rr"],
    "http": ["workload=http", "workload.vms=2"],
}


@pytest.mark.parametrize("case", CASES)
def test_senders_start_at_the_receivers_advertised_window(case, compose):
    model = build(compose(CASES[case]))
    hosts = {h.endpoint: h for h in [*model.vms, *model.peers]}
    pairs = [(s, hosts[s.dst].receivers[flow]) for h in hosts.values()
             for flow, s in h.senders.items()]
    assert pairs
    for s, r in pairs:
        assert s.peer_right_edge == r.rcv_nxt + r.window(), (case, s.flow)
        assert r.window() <= s.sndbuf       # the sender's buffer is never the binding edge
