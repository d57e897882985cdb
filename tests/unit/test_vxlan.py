"""VXLAN (models.vxlan, units.VXLAN_OVERHEAD_BYTES): wire overhead arithmetic, encapsulation of
bursts with and without NIC offload, the guests' MTU, costs, and the line-rate bound end to end.

    [preamble+SFD 8][outer Eth 14][outer IP 20][UDP 8][VXLAN 8][inner Eth 14]
        [inner IP packet][FCS 4][IFG 12]
"""
import pytest

from models import units
from models.base import DATA, Burst, CycleCost
from models.vxlan import Vtep, VxlanParams, inner_mtu_bytes
from sim.config import ConfigError

ON = VxlanParams(enabled=True)


def tso_burst(frames=45, mss=1448):
    return Burst(DATA, 0, frames * mss, frames, 1, 52, mss, seq=0)


def test_overhead_is_outer_ip_udp_vxlan_and_the_inner_ethernet_header():
    assert units.VXLAN_OVERHEAD_BYTES == 20 + 8 + 8 + 14 == 50


def test_wire_bytes_of_a_1500_byte_inner_packet():
    assert units.frame_wire_bytes(1500) == 1538
    assert units.vxlan_frame_wire_bytes(1500) == 1588    # 1500 + 50 + 38 of framing
    # A small inner packet is no longer padded: 40 + 50 + 18 = 108 > 64 bytes of frame.
    assert units.vxlan_frame_wire_bytes(40) == 40 + 50 + 14 + 4 + 8 + 12


def test_encapsulation_adds_50_bytes_per_frame_and_decapsulation_removes_them():
    vtep = Vtep(ON, 1448)
    b = tso_burst()
    e = vtep.encap(b)
    assert (e.header_bytes, e.encap_bytes, e.packets, e.frames) == (102, 50, 1, 45)
    assert e.wire_bytes - b.wire_bytes == 45 * 50
    assert e.wire_bytes == 45 * units.vxlan_frame_wire_bytes(1500)
    assert vtep.encap(e) is e                      # never twice
    d = vtep.decap(e)
    assert (d.header_bytes, d.encap_bytes, d.wire_bytes) == (52, 0, b.wire_bytes)


def test_without_offload_the_host_segments_before_the_uplink():
    vtep = Vtep(VxlanParams(enabled=True, offload=False), 1448)
    e = vtep.encap(tso_burst())
    assert (e.packets, e.frames) == (45, 45)       # one NIC descriptor per frame


def test_disabled_vtep_changes_nothing():
    vtep = Vtep(VxlanParams(), 1448)
    b = tso_burst()
    assert vtep.encap(b) is b and vtep.tx_cycles(1, 65160) == 0.0


def test_costs_with_and_without_offload():
    p = VxlanParams(enabled=True, encap=CycleCost(0, 400, 0), decap=CycleCost(0, 300, 0),
                    sw_segment=CycleCost(0, 400, 0.5), sw_rx_checksum=CycleCost(0, 0, 0.5))
    assert Vtep(p, 1448).tx_cycles(1, 45 * 1448) == 400            # one TSO packet
    no = Vtep(VxlanParams(**{**p.__dict__, "offload": False}), 1448)
    assert no.tx_cycles(1, 45 * 1448) == pytest.approx(45 * 400 + 45 * 400 + 0.5 * 45 * 1448)
    assert no.tx_cycles(3, 300) == pytest.approx(3 * 800 + 0.5 * 300)  # small packets: 3 frames
    assert Vtep(p, 1448).rx_cycles(10, 14480) == 3000
    assert no.rx_cycles(10, 14480) == pytest.approx(3000 + 0.5 * 14480)


def test_guest_mtu_shrinks_unless_the_physical_mtu_has_room():
    assert inner_mtu_bytes(VxlanParams(), 1500) == 1500            # no VXLAN
    assert inner_mtu_bytes(ON, 1500) == 1450
    assert inner_mtu_bytes(ON, 1600) == 1500
    assert inner_mtu_bytes(ON, 9000) == 1500                       # inner_mtu_bytes caps it


def test_vxlan_needs_vsphere51(compose):
    with pytest.raises(ConfigError, match="vxlan.enabled"):
        compose(["hypervisor.vswitch.vxlan.enabled=true"])         # default: ESX 3.5


def test_a_burst_larger_than_the_nic_tx_ring_does_not_stall_the_uplink():
    """Without offload a TSO segment reaches the uplink as one packet per frame; with fewer TX
    ring slots than that it must not wait forever for room the ring can never have."""
    import simpy

    from models.base import Stats
    from models.nic import NicParams, NicPort
    from models.vswitch import Vswitch, VswitchParams

    env, stats = simpy.Environment(), Stats()
    nic = NicPort(env, "nic0", NicParams(tx_desc_per_packet=0, tx_ring_slots=8), stats)
    vs = Vswitch("vs", VswitchParams(vxlan=VxlanParams(enabled=True, offload=False)), nic, stats)
    vs.transmit(tso_burst(frames=20)._copy(dst=-1))
    ring = nic.tx_queues[0].stats
    assert len(vs.pending) == 0                         # sent, not parked behind an impossible wait
    assert ring.queued_frames == 8 and ring.dropped_frames == {"tx_ring_full": 12}


def test_vxlan_without_offload_rejects_a_tx_ring_smaller_than_a_segment(compose):
    # 45 one-frame packets of 3 ixgbe descriptors each (context, header, one page)
    with pytest.raises(ConfigError, match=r"nic.tx_ring_slots=32: must be >= 135"):
        compose(["experiment=vxlan_tx", "hypervisor.vswitch.vxlan.offload=false",
                 "nic.tx_ring_slots=32"])
    compose(["experiment=vxlan_tx", "hypervisor.vswitch.vxlan.offload=false",
             "nic.tx_ring_slots=135"])                      # a whole segment fits
    compose(["experiment=vxlan_tx", "nic.tx_ring_slots=32"])  # with offload: 18 per TSO
