"""models.vswitch.Vswitch: uplink transmit through a bounded pending queue, local switching.

A burst goes straight into the NIC's TX ring when it has room and nothing waits before it;
otherwise into the pending queue (pending_tx_limit_packets), FIFO; a full pending queue drops
(pending_tx_full). Freed NIC slots drain the pending queue in order.
"""
import pytest
import simpy

from models.base import DATA, Burst, CycleCost, Stats
from models.nic import NicParams, NicPort
from models.vswitch import Vswitch, VswitchParams


def tso(seq, dst=-1):
    return Burst(DATA, 0, 45 * 1448, 45, 1, 52, 1448, seq=seq, dst=dst)


def test_pending_queue_fills_drains_in_order_and_drops_when_full():
    env, stats = simpy.Environment(), Stats()
    nic = NicPort(env, "nic", NicParams(tx_desc_per_packet=0, tx_ring_slots=1), stats)
    vs = Vswitch("vs", VswitchParams(cost=CycleCost(per_packet_cycles=600),
                                      pending_tx_limit_packets=2), nic, stats)
    wire = []
    nic.tx_link.deliver = lambda b: wire.append(b.seq)
    for seq in range(5):
        vs.transmit(tso(seq))
    # seq 0 -> NIC ring (1 slot), 1 and 2 -> pending, 3 and 4 dropped (45 frames each).
    assert stats.stages["vs.pending_tx"].dropped_frames == {"pending_tx_full": 90}
    env.run(until=1e-3)
    assert wire == [0, 1, 2]
    assert all(st.conservation_error() == (0, 0) for st in stats.stages.values())
    assert vs.cycles(packets=3, n_bytes=1000) == 1800


def test_local_traffic_is_switched_between_ports():
    env, stats = simpy.Environment(), Stats()
    nic = NicPort(env, "nic", NicParams(tx_desc_per_packet=0), stats)
    vs = Vswitch("vs", VswitchParams(), nic, stats)
    got = []

    class Port:  # a vNIC: what the vswitch hands a port
        deliver = got.extend
        takes_aggregates = False

    class LroPort(Port):  # a vNIC that takes large packets (vmxnet3, Linux LRO)
        takes_aggregates = True

    vs.connect(3, Port)
    vs.connect(4, LroPort)
    vs.transmit(tso(7, dst=3))
    assert [(b.seq, b.packets) for b in got] == [(7, 45)]   # as frames, not via the uplink
    vs.transmit(tso(8, dst=4))
    assert [(b.seq, b.packets, b.frames) for b in got[1:]] == [(8, 1, 45)]  # the segment whole
    env.run(until=1e-3)
    assert nic.tx_frames == 0


def test_local_delivery_pays_the_destination_vnics_backend_receive_on_the_senders_context():
    from models.cpu import Context, Core, CpuParams

    class Vnic:  # the port holds its vNIC
        takes_aggregates = False

        def __init__(self):
            self.got = []

        def rx_backend_cycles(self, packets, n_bytes):
            return 1000.0 * packets

        def deliver(self, batch):
            self.got.extend(batch)

    env, stats = simpy.Environment(), Stats()
    nic = NicPort(env, "nic", NicParams(tx_desc_per_packet=0), stats)
    vs = Vswitch("vs", VswitchParams(), nic, stats)
    dst = Vnic()
    vs.connect(3, dst)
    ideal = CpuParams(1, 1, 1e9, context_switch_cycles=0.0, jitter_cv=0.0)
    sender_net = Context(env, "vm0.net", Core(env, 0, 0, ideal), rng=None)
    vs.transmit(tso(7, dst=3), sender_net)
    assert dst.got == []                       # not before the backend receive work ran
    env.run(until=1e-3)
    assert [(b.seq, b.packets) for b in dst.got] == [(7, 45)]
    assert sender_net.cycles == 45 * 1000.0    # charged on the sending context


def test_only_traffic_leaving_through_the_uplink_pays_encapsulation_and_the_driver():
    from models.vxlan import VxlanParams

    env, stats = simpy.Environment(), Stats()
    nic = NicPort(env, "nic", NicParams(tx_desc_per_packet=0), stats)
    vs = Vswitch("vs", VswitchParams(vxlan=VxlanParams(enabled=True)), nic, stats)
    vs.connect(3, object())
    driver = lambda packets, n_bytes: {"driver_tx": 7000.0 * packets}  # noqa: E731
    local, out = [tso(1, dst=3)], [tso(2, dst=-1)]
    switching = vs.cycles(1, local[0].payload_bytes)
    assert vs.tx_terms(local, driver) == {"vswitch": switching}   # VM to VM: switching only
    up = vs.tx_terms(out, driver)
    assert up == {"vswitch": switching, "vxlan": vs.vtep.tx_cycles(1, out[0].payload_bytes),
                  "driver_tx": 7000.0}
    both = vs.tx_terms(local + out, driver)
    assert both == pytest.approx({**up, "vswitch": vs.cycles(2, 2 * local[0].payload_bytes)})
