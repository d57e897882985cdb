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
# The TCP header's 16-bit window field: the largest window without RFC 1323 window scaling.
TCP_MAX_UNSCALED_WINDOW_BYTES = 65535
UDP_HEADER_BYTES = 8
# VXLAN (RFC 7348) adds, per frame, an outer IPv4 header (20), an outer UDP header (8) and the
# VXLAN header (8) around the inner Ethernet frame, whose 14-byte header then travels as payload
# (the outer Ethernet header and FCS replace the inner ones on the wire): 50 bytes in all.
VXLAN_HEADER_BYTES = 8
VXLAN_OVERHEAD_BYTES = IP_HEADER_BYTES + UDP_HEADER_BYTES + VXLAN_HEADER_BYTES + ETH_HEADER_BYTES


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


def mbps_to_bytes_per_s(mbps: float) -> float:
    return mbps * 1e6 / BITS_PER_BYTE


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


def vxlan_frame_wire_bytes(inner_ip_packet_bytes: int) -> int:
    """Wire bytes of one VXLAN-encapsulated frame carrying an inner IP packet (1588 for 1500)."""
    return frame_wire_bytes(inner_ip_packet_bytes + VXLAN_OVERHEAD_BYTES)


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


# PCI Express (PCI-SIG base specifications 1.1-5.0): transfer rate per lane in GT/s by
# generation; gens 1-2 encode 8b/10b (80% of the bits carry data), gens 3-5 128b/130b.
PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}
PCIX_BUS_WIDTH_BITS = 64


def pcie_encoding_efficiency(gen: int) -> float:
    return 8 / 10 if gen <= 2 else 128 / 130


def pcie_link_gbps(gen: int, lanes: int) -> float:
    """Data bits per second of one direction of a PCIe link, after line encoding and before
    TLP overhead (Gen2 x8: 32 Gbps; Gen3 x8: 63.0 Gbps)."""
    return PCIE_GT_PER_S[gen] * lanes * pcie_encoding_efficiency(gen)


def pcix_bus_gbps(clock_mhz: float) -> float:
    """Raw bandwidth of a 64-bit PCI-X bus, shared by both directions (266 MHz: 17.0 Gbps)."""
    return clock_mhz * 1e6 * PCIX_BUS_WIDTH_BITS / 1e9


def tlp_bytes(payload_bytes: float, max_payload_bytes: int, overhead_bytes: int) -> float:
    """Link bytes of a transfer of ``payload_bytes`` cut into TLPs of at most
    ``max_payload_bytes``, each carrying ``overhead_bytes`` of header, framing and CRC."""
    if payload_bytes <= 0:
        return 0.0
    return payload_bytes + math.ceil(payload_bytes / max_payload_bytes) * overhead_bytes
