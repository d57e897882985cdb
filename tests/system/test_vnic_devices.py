"""vNIC devices in the whole model (moved from tests/unit/test_vnic_devices.py)."""


def test_e1000_without_tso_sends_mss_segments(compose):
    from sim.builder import build
    m = build(compose(["vnic=e1000"]))
    assert not m.vnics[0].tso
    sender = next(iter(m.vms[0].senders.values()))
    assert sender.seg_max == sender.mss          # no TSO: one frame per packet to the vNIC
