"""Unit conversions and Ethernet/TCP framing arithmetic: the one place they live.

Inside SimPy time is seconds (float). Everywhere else names carry their unit. Every
bytes->bits, cycles->seconds and frame-size computation in the project goes through here
(the ns-3 ``DataRate`` idea), so a unit error can only be made once.
"""
from __future__ import annotations

import math

BITS_PER_BYTE = 8
NS_PER_S = 1e9
US_PER_S = 1e6
MS_PER_S = 1e3

# IEEE 802.3 framing around an IP packet on the wire: preamble 7 + SFD 1 + MAC header 14 +
# FCS 4 + minimum inter-frame gap 12 = 38 bytes (claim WIRE-1500).
ETH_HEADER_BYTES = 14
ETH_FCS_BYTES = 4
ETH_PREAMBLE_SFD_BYTES = 8
ETH_IFG_BYTES = 12
ETH_FRAMING_BYTES = ETH_HEADER_BYTES + ETH_FCS_BYTES + ETH_PREAMBLE_SFD_BYTES + ETH_IFG_BYTES
ETH_MIN_FRAME_BYTES = 64  # header + payload + FCS, padded up to this
IP_HEADER_BYTES = 20
TCP_HEADER_BYTES = 20
TCP_TIMESTAMP_OPTION_BYTES = 12
UDP_HEADER_BYTES = 8


def ns_to_s(ns: float) -> float:
    return ns / NS_PER_S


def us_to_s(us: float) -> float:
    return us / US_PER_S


def ms_to_s(ms: float) -> float:
    return ms / MS_PER_S


def s_to_us(s: float) -> float:
    return s * US_PER_S


def bytes_to_bits(n_bytes: float) -> float:
    return n_bytes * BITS_PER_BYTE


def gbps_to_bytes_per_s(gbps: float) -> float:
    return gbps * 1e9 / BITS_PER_BYTE


def bytes_per_s_to_gbps(bytes_per_s: float) -> float:
    return bytes_to_bits(bytes_per_s) / 1e9


def transmit_time_s(n_bytes: float, rate_gbps: float) -> float:
    """Serialisation time of ``n_bytes`` on a link of ``rate_gbps``."""
    return n_bytes / gbps_to_bytes_per_s(rate_gbps)


def cycles_to_s(cycles: float, clock_hz: float) -> float:
    return cycles / clock_hz


def tcp_header_bytes(timestamps: bool) -> int:
    """IP + TCP header bytes per segment (52 with the timestamp option, 40 without)."""
    return IP_HEADER_BYTES + TCP_HEADER_BYTES + (TCP_TIMESTAMP_OPTION_BYTES if timestamps else 0)


def mss_bytes(mtu_bytes: int, timestamps: bool) -> int:
    """TCP payload per frame: MTU minus IP/TCP headers (1448 at MTU 1500 with timestamps)."""
    return mtu_bytes - tcp_header_bytes(timestamps)


def frame_wire_bytes(ip_packet_bytes: int) -> int:
    """Bytes one IP packet occupies on the wire, framing, padding and gap included."""
    l2 = max(ETH_MIN_FRAME_BYTES, ip_packet_bytes + ETH_HEADER_BYTES + ETH_FCS_BYTES)
    return l2 + ETH_PREAMBLE_SFD_BYTES + ETH_IFG_BYTES


def frames_for_payload(payload_bytes: int, frame_payload_bytes: int) -> int:
    """Frames needed to carry ``payload_bytes`` (at least one: a pure ACK is a frame)."""
    return max(1, math.ceil(payload_bytes / frame_payload_bytes))


def burst_wire_bytes(payload_bytes: int, frames: int, header_bytes: int, frame_payload_bytes: int) -> int:
    """Wire bytes of ``frames`` frames carrying ``payload_bytes`` in full frames plus a tail."""
    if payload_bytes <= 0:
        return frames * frame_wire_bytes(header_bytes)
    full = min(frames, payload_bytes // frame_payload_bytes)
    tail_payload = payload_bytes - full * frame_payload_bytes
    wire = full * frame_wire_bytes(header_bytes + frame_payload_bytes)
    if tail_payload > 0:
        wire += frame_wire_bytes(header_bytes + tail_payload)
    return wire


def line_rate_goodput_gbps(line_rate_gbps: float, mtu_bytes: int, timestamps: bool) -> float:
    """Best TCP goodput on a link: MSS / (MTU + framing) of the line rate (9.41 at 1500 + TS)."""
    return line_rate_gbps * mss_bytes(mtu_bytes, timestamps) / (mtu_bytes + ETH_FRAMING_BYTES)
