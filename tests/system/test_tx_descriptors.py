"""A NIC's TX ring counts its driver's descriptors (models.nic.tx_descriptors).

ixgbe (the 82598/82599 of 000, 001, 003, 004) takes, per packet, a context descriptor and one
for the linear header, plus one per 4 KB page fragment of the payload: a 64 KB TSO segment
takes 18 of the ring's 512 descriptors, an ACK 2. Counted in packets, the same ring held 512
TSO segments (~33 MB, 27 ms of a 10GbE wire) in front of the wire.
"""
import simpy

from models.base import ACK, DATA, Burst, Ring, Stats
from models.nic import NicParams, NicPort, TxBacklog, tx_descriptors
from models.wire import LinkParams

MSS = 1448


def tso_segment(frames: int, flow: int = 0) -> Burst:
    return Burst(DATA, flow, frames * MSS, frames, 1, 52, MSS)


def ack() -> Burst:
    return Burst(ACK, 0, 0, 1, 1, 52, MSS)


def test_descriptors_per_packet_follow_ixgbe():
    """Context + header + one per page: 64 KB TSO (45 frames, 65160 bytes) 18, one MSS frame
    3, an ACK 2; a train of 4 MSS frames (no TSO) 12."""
    assert tx_descriptors(45 * MSS, 1, 2, 4096) == 18
    assert tx_descriptors(MSS, 1, 2, 4096) == 3
    assert tx_descriptors(0, 1, 2, 4096) == 2
    assert tx_descriptors(4 * MSS, 4, 2, 4096) == 12


def _port(env, per_packet):
    params = NicParams(link=LinkParams(line_rate_gbps=10.0, propagation_ns=0.0),
                       tx_ring_slots=512, tx_desc_per_packet=per_packet)
    return NicPort(env, "p", params, Stats())


def test_a_512_descriptor_ring_holds_28_full_tso_segments():
    """Behind a busy wire, a 512-descriptor ixgbe ring takes 28 64 KB segments (28 x 18 =
    504) and a software queue in front of it holds the rest; counted in packets it took all
    40. Freed descriptors (a segment has left) drain the queue."""
    env = simpy.Environment()
    nic = _port(env, per_packet=2)
    ring = nic.tx_queues[0]
    assert ring.unit == "descriptors"
    backlog = TxBacklog(Ring("pending", 200, Stats(), unit="packets"), nic)
    for k in range(40):
        backlog.send(tso_segment(45, flow=k))
    # The first segment went onto the wire at once (its slots are held until it has left).
    assert ring.used == 28 * 18
    assert len(backlog.ring) == 12
    assert ring.size_of(ack()) == 2
    env.run()
    assert nic.tx_packets == 40 and ring.used == 0 and len(backlog.ring) == 0

    env = simpy.Environment()
    nic = _port(env, per_packet=0)
    backlog = TxBacklog(Ring("pending", 200, Stats(), unit="packets"), nic)
    for k in range(40):
        backlog.send(tso_segment(45, flow=k))
    assert nic.tx_queues[0].unit == "packets" and len(backlog.ring) == 0


def test_g80_send_keeps_the_host_tx_ring_within_its_descriptors(compose):
    """001's send test (82599, two VMs on a port): the host's TX ring never holds more than its
    512 descriptors, so the payload waiting in it for the wire stays under 512 pages (2 MB;
    counted in packets it held up to 512 segments, ~33 MB), and it does fill: the ring binds."""
    from sim.builder import build
    cfg = compose(["experiment=g80_send", "host.nic_ports=1", "workload.sessions_per_vm=20"])
    model = build(cfg, 0)
    ring = model.nics[0].tx_queues[0]
    assert ring.unit == "descriptors" and ring.capacity == 512
    most_used = most_bytes = 0
    for k in range(1, 81):
        model.env.run(until=k * 0.0005)
        waiting = sum(b.payload_bytes for b in ring._pending)
        most_used, most_bytes = max(most_used, ring.used), max(most_bytes, waiting)
    assert model.nics[0].tx_packets > 0
    assert 400 < most_used <= 512
    assert 0 < most_bytes <= 512 * 4096
