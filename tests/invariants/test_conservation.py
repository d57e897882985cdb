"""Conservation: no frame or byte appears or vanishes.

At every buffering stage (rings, FIFOs, pending queue, links): arrived = departed + dropped +
queued, for frames and bytes (StageStats.conservation_error() == (0, 0)). Across each cable:
what one side's link delivered reached the other side's port, and every frame that reached a
port was delivered up, is still held in its receive stages, or was dropped there. Per
connection: read <= received in order <= sent <= written, and nothing arrives beyond the
advertised window. Run for transmit, receive, several
VMs, queues and ports, and for configs that lose frames (so the drop path runs: drops > 0).
"""
import pytest

TX, RX = "experiment=e35_tx_single_vm", "experiment=e35_rx_single_vm"
CASES = {  # id: (overrides, must drop)
    "tx": ([TX], False),
    "rx": ([RX], False),
    "rx-3vm-vmdq": ([RX, "workload.vms=3", "nic.rx_queues=4", "nic.rx_sort=vmdq"], False),
    "tx-2port": ([TX, "workload.vms=2", "host.nic_ports=2"], False),
    "rx-tiny-nic-ring": ([RX, "nic.rx_ring_slots=16"], True),
    "rx-tiny-vnic-ring": ([RX, "vnic.rx_ring_slots=16"], True),
    # LRO aggregates into a vNIC ring that holds few of them: cut at whole aggregates
    "rx-lro-small-vnic-ring": (["experiment=v6_vnic_rx_55", "vnic.rx_ring_slots=32"], True),
    "tx-8vm-tiny-pending": ([TX, "workload.vms=8", "hypervisor.vswitch.pending_tx_limit_packets=2",
                             "nic.tx_ring_slots=40"], True),  # ixgbe descriptors: two 64KB TSO packets
    # UDP multicast: copies in the receiving context (default) or in each member's (split);
    # one-datagram sockets that get bursts of 4 (a 100 us sender timer at 40K/s) drop most.
    "mc-default-lossy": (["workload=udp_multicast", "workload.vms=2", "workload.socket_bytes=1448",
                          "workload.multicast.burst_interval_us=100"], True),
    "mc-split": (["experiment=mc_split_40k", "workload.vms=2"], False),
}


@pytest.mark.parametrize("case", CASES)
def test_conservation(case, compose, run_one):
    overrides, lossy = CASES[case]
    model, _, _ = run_one(compose(overrides))
    stages = model.stats.stages
    errors = {name: st.conservation_error() for name, st in stages.items()}
    assert errors == {name: (0, 0) for name in stages}
    for st in stages.values():
        assert st.queued_frames >= 0 and st.queued_bytes >= 0
    for vs in model.vswitches:  # a stage's count of what it holds is what its ring holds
        ring = vs.pending
        assert stages[ring.name].queued_frames == sum(b.frames for b in ring._pending)
        assert ring.used == sum(b.packets for b in ring._pending)
    dropped = {n: st.total_dropped_frames() for n, st in stages.items()
               if st.total_dropped_frames()}
    assert bool(dropped) == lossy, dropped

    for nic, peer in zip(model.nics, model.peers):
        for src, dst in ((nic, peer.nic), (peer.nic, nic)):
            check_cable_and_receive_path(stages, src, dst)

    for r in getattr(model.workload, "receivers", []):  # UDP multicast: a datagram that
        # reached a VM's stack was taken by its socket (a socket drop is not a delivery)
        st = r.socket.stage
        assert r.vm.frames_delivered == st.arrived_frames - st.total_dropped_frames(), r.index

    for conn in getattr(model.workload, "connections", []):  # TCP workloads
        s, r = conn.sender, conn.receiver
        assert r.bytes_read == r.read_seq <= r.rcv_nxt <= s.snd_nxt <= s.write_seq
        assert s.snd_una <= r.rcv_nxt
        assert r.beyond_window_bytes == 0   # the sender kept within the advertised window


def check_cable_and_receive_path(stages, src, dst):
    """What ``src``'s link delivered reached ``dst``; each frame that reached ``dst`` was
    delivered up, is still waiting in one of its receive stages (DMA FIFO, RX rings), or was
    dropped there."""
    assert src.tx_link.stats.departed_frames == dst.rx_frames
    assert src.tx_link.stats.departed_bytes == dst.rx_wire_bytes
    rx_stages = [st for name, st in stages.items()
                 if name.startswith(dst.name + ".") and ".rx" in name]
    assert rx_stages
    held = sum(st.queued_frames + st.total_dropped_frames() for st in rx_stages)
    assert dst.rx_frames == dst.rx_delivered_frames + held
