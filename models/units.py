"""Unit conversions and Ethernet/TCP framing arithmetic: the one place they live.

Inside SimPy time is seconds (float). Everywhere else names carry their unit. Every
bytes->bits, cycles->seconds and frame-size computation in the project goes through here
(the ns-3 ``DataRate`` idea), so a unit error can only be made once.
"""
from __future__ import annotations

import math
from typing import Callable

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
ICMP_HEADER_BYTES = 8  # type, code, checksum, identifier, sequence (RFC 792 echo)
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


def s_to_cycles(s: float, clock_hz: float) -> float:
    return s * clock_hz


def s_to_ms(s: float) -> float:
    return s * MS_PER_S


def gbps_to_bits_per_s(gbps: float) -> float:
    return gbps * 1e9


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


def tso_segment_payload_bytes(tso_max_bytes: int, mss: int, header_bytes: int) -> int:
    """Largest TSO segment payload: whole MSS only (Linux's tcp_tso_autosize), headers included
    in ``tso_max_bytes`` (64KB -> 45 x 1448 = 65160 at MTU 1500), at least one MSS."""
    return max(mss, (tso_max_bytes - header_bytes) // mss * mss)


def frames_for_payload(payload_bytes: int, frame_payload_bytes: int) -> int:
    """Frames needed to carry ``payload_bytes`` (at least one: a pure ACK is a frame)."""
    return max(1, math.ceil(payload_bytes / frame_payload_bytes))


def sum_over_frames(payload_bytes: int, frames: int, header_bytes: int, frame_payload_bytes: int,
                    per_frame: Callable[[int], float]) -> float:
    """``per_frame(ip_bytes)`` summed over ``frames`` frames carrying ``payload_bytes`` in full
    frames of ``frame_payload_bytes`` plus a tail (header-only frames when there is no payload)."""
    if payload_bytes <= 0:
        return frames * per_frame(header_bytes)
    full = min(frames, payload_bytes // frame_payload_bytes)
    tail_payload = payload_bytes - full * frame_payload_bytes
    total = full * per_frame(header_bytes + frame_payload_bytes)
    if tail_payload > 0:
        total += per_frame(header_bytes + tail_payload)
    return total


def burst_wire_bytes(payload_bytes: int, frames: int, header_bytes: int, frame_payload_bytes: int) -> int:
    """Wire bytes of ``frames`` frames carrying ``payload_bytes`` in full frames plus a tail."""
    return sum_over_frames(payload_bytes, frames, header_bytes, frame_payload_bytes,
                           frame_wire_bytes)


def frame_l2_bytes(ip_bytes: int) -> int:
    """A frame as DMA'd: MAC header + IP packet, padded to 60 (the FCS is stripped)."""
    return max(ETH_MIN_FRAME_BYTES - ETH_FCS_BYTES, ip_bytes + ETH_HEADER_BYTES)


def rx_dma_bytes(payload_bytes: int, frames: int, header_bytes: int) -> int:
    """Bytes of received frames in host memory: payload plus a MAC + IP + transport header per
    frame (no padding, no FCS)."""
    return payload_bytes + frames * (header_bytes + ETH_HEADER_BYTES)


def tx_dma_bytes(payload_bytes: int, packets: int, header_bytes: int) -> int:
    """Bytes a NIC reads to send: payload plus one MAC + IP + transport header per packet (a
    TSO segment's header is replicated onto its frames by the card)."""
    return payload_bytes + packets * (header_bytes + ETH_HEADER_BYTES)


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


def pcix_bus_gbps(rate_mtps: float) -> float:
    """Raw bandwidth of a 64-bit PCI-X bus, shared by both directions (PCI-X 266: 266 million
    transfers per second, 17.0 Gbps)."""
    return rate_mtps * 1e6 * PCIX_BUS_WIDTH_BITS / 1e9


def tlp_bytes(payload_bytes: float, max_payload_bytes: int, overhead_bytes: int) -> float:
    """Link bytes of a transfer of ``payload_bytes`` cut into TLPs of at most
    ``max_payload_bytes``, each carrying ``overhead_bytes`` of header, framing and CRC."""
    if payload_bytes <= 0:
        return 0.0
    return payload_bytes + math.ceil(payload_bytes / max_payload_bytes) * overhead_bytes
