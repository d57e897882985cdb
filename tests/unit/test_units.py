"""models.units: Ethernet/TCP framing and unit conversions, exact arithmetic.

Wire bytes of an IP packet = max(64, IP + 14 + 4) + 8 (preamble, SFD) + 12 (gap).
Best TCP goodput = line rate x MSS / (MTU + 38), MSS = MTU - 40 - 12 (timestamps).
"""
import pytest

from models import units


def test_full_frame_occupies_1538_bytes_on_the_wire():
    assert units.frame_wire_bytes(1500) == 1538


def test_short_frames_are_padded_to_64_bytes():
    # A 40-byte ACK (no timestamps): 40 + 18 = 58 -> padded to 64, + 20 = 84 on the wire.
    assert units.tcp_header_bytes(timestamps=False) == 40
    assert units.frame_wire_bytes(40) == 84
    assert units.frame_wire_bytes(0) == 84
    # A 52-byte ACK (timestamps) needs no padding: 52 + 18 = 70 >= 64, + 20 = 90.
    assert units.tcp_header_bytes(timestamps=True) == 52
    assert units.frame_wire_bytes(52) == 90
    assert units.frame_wire_bytes(46) == 84   # the largest packet that is still padded
    assert units.frame_wire_bytes(47) == 85


def test_mss():
    assert units.mss_bytes(1500, timestamps=True) == 1448
    assert units.mss_bytes(1500, timestamps=False) == 1460
    assert units.mss_bytes(9000, timestamps=True) == 8948


def test_line_rate_goodput():
    assert units.line_rate_goodput_gbps(10.0, 1500, True) == pytest.approx(9.4148, abs=1e-4)
    assert units.line_rate_goodput_gbps(10.0, 1500, True) == pytest.approx(10 * 1448 / 1538)
    assert units.line_rate_goodput_gbps(40.0, 9000, False) == pytest.approx(40 * 8960 / 9038)


def test_serialisation_time():
    assert units.transmit_time_s(1538, 10.0) == pytest.approx(1.2304e-6, rel=1e-12)
    assert units.transmit_time_s(1538, 40.0) == pytest.approx(0.3076e-6, rel=1e-12)


def test_conversions():
    assert units.gbps_to_bytes_per_s(8.0) == 1e9
    assert units.bytes_per_s_to_gbps(1e9) == 8.0
    assert units.cycles_to_s(2.93e9, 2.93e9) == 1.0
    assert units.us_to_s(10) == pytest.approx(1e-5)
    assert units.s_to_us(1e-5) == pytest.approx(10)
    assert units.ns_to_s(50) == pytest.approx(5e-8)
    assert units.ms_to_s(40) == pytest.approx(0.04)


def test_frames_for_payload():
    assert units.frames_for_payload(0, 1448) == 1       # a pure ACK is one frame
    assert units.frames_for_payload(1448, 1448) == 1
    assert units.frames_for_payload(1449, 1448) == 2
    assert units.frames_for_payload(65536, 1448) == 46


def test_burst_wire_bytes_full_frames_plus_tail():
    # Two full frames (1448 + 52 = 1500 -> 1538 each) and a 100-byte tail (152 -> 190).
    assert units.burst_wire_bytes(2 * 1448 + 100, 3, 52, 1448) == 2 * 1538 + 190
    # A train of 3 pure ACKs.
    assert units.burst_wire_bytes(0, 3, 52, 1448) == 3 * 90
