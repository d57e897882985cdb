"""The fluid engine's segments under TSO deferral (``sim.fluid.TSO_DEFERRAL``): a Linux sender
with ``tso_win_divisor`` whose window holds at least divisor whole TSO segments sends whole ones
(the DES's ``TcpSender._defers``), not equal pieces of the window."""
import math

import pytest

from sim import fluid
from sim.compose import compose_checked

# one RHEL6 VM sending over virtio/vhost-net, 256KB windows (0.4 s of CPU for the DES run)
KVM = ["experiment=kvm_vhost_net_tx"]


def _flow(monkeypatch, overrides: list[str], on: bool):
    monkeypatch.setattr(fluid, "TSO_DEFERRAL", on)
    return fluid.describe_network(compose_checked("configs", overrides)).flows[0]


def test_a_wide_window_goes_in_whole_tso_segments_as_in_the_des(monkeypatch):
    from sim.runner import run_experiment
    des = run_experiment(compose_checked("configs", [*KVM, "run.replications=1",
                                                     "run.warmup_s=0.02", "run.measure_s=0.02"]))
    nic = des.tables["nics"].set_index("nic").loc["nic0"]
    des_frames = nic["tx_frames_per_s"] / nic["tx_packets_per_s"]      # 45: 65160-byte segments
    on, off = _flow(monkeypatch, KVM, True), _flow(monkeypatch, KVM, False)
    assert on.seg == on.seg_max
    assert math.ceil(on.seg / on.mss) == pytest.approx(des_frames, rel=0.02)
    assert math.ceil(off.seg / off.mss) != pytest.approx(des_frames, rel=0.1)   # 37: pieces


def test_a_window_under_divisor_segments_stays_in_pieces(monkeypatch):
    # 128KB: 1/3 of the window is under one TSO segment; its segments are set by what a write
    # adds or an ACK train opens, left as the window's equal pieces
    small = [*KVM, "workload.socket_bytes=131072"]
    on, off = _flow(monkeypatch, small, True), _flow(monkeypatch, small, False)
    assert on.seg == off.seg == 131072 / 3


def test_no_deferral_without_the_divisor(monkeypatch):
    flat = [*KVM, "guest.stack.tso_win_divisor=0"]
    assert _flow(monkeypatch, flat, True).seg == _flow(monkeypatch, flat, False).seg < 65160
