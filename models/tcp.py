"""Window-based TCP at burst granularity: a sender and a receiver per connection.

Modelled:
- Sender: send buffer (``sndbuf_bytes`` bounds unacknowledged + unsent bytes), congestion window
  with slow start and congestion avoidance (byte counting), Nagle, segments up to ``seg_max_bytes``
  (a TSO segment when the path offers TSO, else a train of MSS frames). With
  ``tso_win_divisor`` > 0 (Linux's ``tcp_tso_should_defer``, sysctl ``tcp_tso_win_divisor``)
  a TSO sender in the open state defers a segment that the window cuts short until the window
  allows a whole ``seg_max_bytes`` or a ``1/tso_win_divisor`` share of min(peer window, cwnd),
  while data is in flight (an ACK will come); 0: it sends what each ACK allows. With
  ``ack_by_ack`` a train of n ACKs is taken one ACK at a time, the sender trying to send after
  each (Linux's ``tcp_rcv_established``: ``tcp_ack`` then ``tcp_data_snd_check`` per packet);
  otherwise as one cumulative ACK. With ``hystart_low_window`` > 0, 2.6.32 CUBIC's HyStart may
  end slow start (``_hystart``). Fast retransmit after
  ``dupack_threshold`` duplicate ACKs and recovery that repairs one hole per (partial) ACK up to
  the first byte the receiver holds out of order (``sack_edge``, the first SACK block), RTO with
  exponential back-off, and a window probe when the peer's window is closed.
- Receiver: receive buffer (``rcvbuf_bytes``) whose free space is the advertised window (at
  most ``max_window_bytes``: 65535 without window scaling), one ACK per ``ack_every_frames``
  full frames, but at most one per segment the stack receives (an LRO aggregate of many frames
  is one segment: Linux ACKs it once, as more than one MSS arrived), an immediate ACK for a
  pushed burst (PSH), for data out of order and for a filled hole, a delayed-ACK timer for the
  rest, window updates after reads.
- Piggy-backing (request/response traffic): a receiver in ``interactive`` mode does not ACK a
  pushed burst at once but holds the ACK for the delayed-ACK time; the sender of the reverse
  direction on the same host takes it (``ack_source``) and carries it on its next data burst
  (``Burst.piggyback``), as TCP's ACK field does on every segment.
- RTT: sampled by the sender from the echoed send time of the segment that triggered each ACK
  (the timestamp option), so it is whatever the pipeline's delays make it.
- The application side: a blocked writer or reader is a callback registered on the socket
  (``on_space``, ``on_readable``; no SimPy event); when it may go on, the socket hands it to
  ``notify``: its host (``models.guest.StackHost.notify``) runs it at once, or, while its
  stack takes in a delivered batch, once the device's poller has queued its next pass.
  A deferral ends at the first output after more than one tick of ``timer_hz`` (the kernel's
  HZ) since the last decision to defer (2.6.32 restamps at every decision, so only a pause
  of two tick boundaries between ACKs ends it; 0 Hz: no limit).
Left out: SACK scoreboard beyond the first hole, PAWS, ECN, Nagle/delayed ACK interactions
beyond the PSH rule; the socket size is the receive window (the send buffer
holds ``stack.sndbuf_scale`` times it: Linux doubles SO_SNDBUF).
Units: bytes, frames, seconds.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Callable

import simpy

from models import units
from models.base import ACK, DATA, Burst, check


def _call(callback: Callable[[], None]) -> None:
    """The default ``notify``: run a woken application at once."""
    callback()


@dataclass(frozen=True)
class TcpParams:
    timestamps: bool = True
    initial_cwnd_segments: int = 3
    min_rto_ms: float = 200.0
    delayed_ack_ms: float = 40.0
    ack_every_frames: int = 2
    dupack_threshold: int = 3

    def __post_init__(self):
        check(self.initial_cwnd_segments >= 1, "initial_cwnd_segments",
              self.initial_cwnd_segments, ">= 1")
        check(self.min_rto_ms > 0, "min_rto_ms", self.min_rto_ms, "> 0")
        check(self.delayed_ack_ms >= 0, "delayed_ack_ms", self.delayed_ack_ms, ">= 0")
        check(self.ack_every_frames >= 1, "ack_every_frames", self.ack_every_frames, ">= 1")
        check(self.dupack_threshold >= 1, "dupack_threshold", self.dupack_threshold, ">= 1")


class TcpSender:
    """The sending half of a connection. ``emit(burst)`` hands segments to the stack below."""

    def __init__(self, env: simpy.Environment, flow: int, params: TcpParams, *, mss_bytes: int,
                 seg_max_bytes: int, sndbuf_bytes: int, tso: bool, src: int, dst: int,
                 emit: Callable[[Burst], None], peer_window_bytes: int | None = None,
                 notify: Callable[[Callable[[], None]], None] | None = None,
                 tso_win_divisor: int = 0, timer_hz: float = 0.0, ack_by_ack: bool = False,
                 hystart_low_window: int = 0):
        check(sndbuf_bytes >= mss_bytes, "socket_bytes", sndbuf_bytes,
              f">= one MSS ({mss_bytes} bytes)")
        check(tso_win_divisor >= 0, "tso_win_divisor", tso_win_divisor, ">= 0")
        check(timer_hz >= 0, "timer_hz", timer_hz, ">= 0 (0: no tick limit)")
        check(hystart_low_window >= 0, "hystart_low_window", hystart_low_window, ">= 0")
        check(not hystart_low_window or timer_hz > 0, "timer_hz", timer_hz,
              "> 0 with hystart_low_window (HyStart counts jiffies)")
        self.env, self.flow, self.params, self.emit = env, flow, params, emit
        self.tso_win_divisor = tso_win_divisor if tso else 0
        self.ack_by_ack = ack_by_ack  # a train of n ACKs taken one ACK at a time (Linux)
        self.tso_deferrals = 0  # times a window-cut TSO segment waited for more ACKs
        self.tso_deferral_timeouts = 0  # deferrals ended by the two-tick limit
        # The deferral's two-tick limit (Linux 2.6.32 ``tp->tso_deferred``): the jiffy of the
        # last decision to defer, None while no deferral is under way; 0 Hz: no limit.
        self.timer_hz = timer_hz
        self._deferred_jiffy: int | None = None
        self.notify = _call if notify is None else notify  # runs a woken writer
        self.src, self.dst = src, dst
        self.mss, self.seg_max, self.sndbuf, self.tso = mss_bytes, seg_max_bytes, sndbuf_bytes, tso
        self.header_bytes = units.tcp_header_bytes(params.timestamps)
        self.write_seq = self.snd_una = self.snd_nxt = 0
        self.cwnd = params.initial_cwnd_segments * mss_bytes
        self.ssthresh = math.inf
        # Until the first ACK: the window the receiver's SYN-ACK advertised (not this sender's
        # own buffer, which holds sndbuf_scale x the socket size). None: the buffer (unit tests
        # of a lone sender whose receiver has the same size).
        self.peer_right_edge = sndbuf_bytes if peer_window_bytes is None else peer_window_bytes
        self.dupacks = 0
        self.snd_sml = 0  # end of the last segment sent with a partial frame
        self.recover: int | None = None
        self.srtt_s: float | None = None
        self.rttvar_s = 0.0
        self.rto_s = units.ms_to_s(params.min_rto_ms)
        self.rto_deadline: float | None = None
        self.retransmits = self.timeouts = 0
        self.rtt_sum_s, self.rtt_samples = 0.0, 0
        self._space_waiter: tuple[int, Callable[[], None]] | None = None
        # The held ACK of the reverse direction, taken when a data burst leaves (piggy-back).
        self.ack_source: Callable[[], Burst | None] | None = None
        # CUBIC's HyStart as in Linux 2.6.32 (``_hystart``); 0: off (plain slow start).
        self.hystart_low_window = hystart_low_window
        self.hystart_exits = 0
        self._hs_reset()
        env.process(self._timer())

    # -- application side -------------------------------------------------------------------
    @property
    def flight(self) -> int:
        return self.snd_nxt - self.snd_una

    def space(self) -> int:
        return self.sndbuf - (self.write_seq - self.snd_una)

    def on_space(self, n_bytes: int, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once ``n_bytes`` fit in the send buffer (at once if they do):
        the blocked writer, run through ``notify`` (one waiter at a time)."""
        if self.space() >= n_bytes:
            callback()
        else:
            self._space_waiter = (n_bytes, callback)

    def write(self, n_bytes: int) -> None:
        assert n_bytes <= self.space()
        self.write_seq += n_bytes
        self.output()

    # -- output -----------------------------------------------------------------------------
    def output(self) -> None:
        while True:
            window_end = min(self.snd_una + int(self.cwnd), self.peer_right_edge)
            unsent = self.write_seq - self.snd_nxt
            size = min(self.seg_max, unsent, window_end - self.snd_nxt)
            if size <= 0:
                return
            if size < self.mss and self.flight > 0:
                return  # Nagle / silly-window avoidance: a small segment only when idle
            if size < min(self.seg_max, unsent) and size > self.mss \
                    and self.snd_sml > self.snd_una:
                # Cut by the window while a small segment is unacknowledged: whole frames, the
                # partial one waits (Linux tcp_mss_split_point with Minshall's Nagle check).
                size -= size % self.mss
            if self.tso_win_divisor and self._defers(size, unsent):
                self.tso_deferrals += 1
                return  # tcp_tso_should_defer: wait for the ACKs still in flight
            self._deferred_jiffy = None  # a segment leaves: no deferral under way
            psh = size == unsent or self.snd_nxt + size >= window_end
            self._send(self.snd_nxt, size, psh, retransmit=False)
            self.snd_nxt += size
            if size % self.mss:
                self.snd_sml = self.snd_nxt  # the end of the last small segment (tcp_minshall)

    def _defers(self, size: int, unsent: int) -> bool:
        """Linux 2.6.32 ``tcp_tso_should_defer`` for a segment the window cuts to ``size``:
        defer while data is in flight, in the open state, when less than 1/divisor of
        min(peer window, cwnd) is open, unless the last decision to defer was taken more than
        one timer tick ago (jiffies - tso_deferred > 1; each decision to defer restamps it, as
        2.6.32 does: later kernels keep the first stamp)."""
        if not (size < min(self.seg_max, unsent) and self.flight > 0 and self.recover is None
                and size * self.tso_win_divisor < min(self.peer_right_edge - self.snd_una,
                                                     self.cwnd)):
            return False
        if self.timer_hz:
            jiffy = math.floor(self.env.now * self.timer_hz)
            if self._deferred_jiffy is not None and jiffy - self._deferred_jiffy > 1:
                self.tso_deferral_timeouts += 1
                return False
            self._deferred_jiffy = jiffy
        return True

    def _send(self, seq: int, size: int, psh: bool, retransmit: bool) -> None:
        frames = units.frames_for_payload(size, self.mss)
        burst = Burst(DATA, self.flow, size, frames, 1 if self.tso else frames, self.header_bytes,
                      self.mss, seq=seq, psh=psh, sent_s=self.env.now, retransmit=retransmit,
                      dst=self.dst, src=self.src,
                      piggyback=self.ack_source() if self.ack_source is not None else None)
        if self.rto_deadline is None:
            self.rto_deadline = self.env.now + self.rto_s
        self.emit(burst)

    # -- ACK processing ---------------------------------------------------------------------
    def on_ack(self, ack: Burst) -> None:
        if self.ack_by_ack and ack.packets > 1 and ack.ack > self.snd_una \
                and self.recover is None:
            self._train_steps(ack)
        if ack.ack >= self.snd_una:  # an old ACK must not move the window (nor shrink it)
            self.peer_right_edge = max(self.peer_right_edge, ack.ack + ack.window_bytes)
        if ack.ack > self.snd_una:
            self._new_ack(ack)
        elif ack.dup and ack.ack == self.snd_una and self.flight > 0:
            self._dup_ack(ack)
        self._wake_writer()
        self.output()

    def _train_steps(self, ack: Burst) -> None:
        """The first n-1 ACKs of a train of n (Linux ``tcp_ack`` then ``tcp_data_snd_check`` per
        packet): each acknowledges its share of the train's frames (the receiver ACKed every
        ``ack_every_frames`` frames, so each point falls on an MSS boundary) with the window
        advertised from its own point, and the sender tries to send after each; the last one
        is ``ack`` itself (``on_ack``)."""
        start, acked = self.snd_una, ack.ack - self.snd_una
        per_ack_frames = -(-acked // self.mss) / ack.packets
        for i in range(1, ack.packets):
            to = start + min(acked, round(per_ack_frames * i) * self.mss)
            if to <= self.snd_una:
                continue
            self.peer_right_edge = max(self.peer_right_edge, to + ack.window_bytes)
            self._new_ack(ack, to, sample=False)
            self._wake_writer()
            self.output()
            if self.recover is not None:
                return

    def _new_ack(self, ack: Burst, to: int | None = None, sample: bool = True) -> None:
        """Acknowledge up to ``to`` (None: ``ack``'s own edge; else a point inside its train,
        which takes no RTT sample)."""
        to = ack.ack if to is None else to
        acked = to - self.snd_una
        self.snd_una = to
        self.snd_nxt = max(self.snd_nxt, self.snd_una)
        self.dupacks = 0
        if sample and ack.echo_s >= 0:
            self._rtt_sample(self.env.now - ack.echo_s)
        self.rto_deadline = self.env.now + self.rto_s if self.flight > 0 else None
        if self.recover is not None:
            if self.snd_una >= self.recover:
                self.recover = None
                self.cwnd = self.ssthresh
            else:
                self._retransmit_hole(ack)
            return
        if self.cwnd < self.ssthresh:
            if self.hystart_low_window and sample and ack.echo_s >= 0:
                self._hystart(self.env.now - ack.echo_s, ack.packets)
            if self.hystart_low_window and self.snd_una > self._hs_end_seq:
                self._hs_round()  # bictcp_cong_avoid: a new round once its end is acked
        if self.cwnd < self.ssthresh:
            self.cwnd += acked
        else:
            self.cwnd += self.mss * acked / self.cwnd

    def _dup_ack(self, ack: Burst) -> None:
        self.dupacks += ack.packets
        if self.dupacks >= self.params.dupack_threshold and self.recover is None:
            self.ssthresh = max(self.flight / 2, 2 * self.mss)
            self.cwnd = self.ssthresh
            self.recover = self.snd_nxt
            self._retransmit_hole(ack)

    def _retransmit_hole(self, ack: Burst) -> None:
        end = ack.sack_edge if ack.sack_edge > self.snd_una else self.snd_una + self.mss
        size = min(end - self.snd_una, self.seg_max, self.snd_nxt - self.snd_una)
        if size > 0:
            self.retransmits += 1
            self._send(self.snd_una, size, psh=True, retransmit=True)

    def _rtt_sample(self, rtt_s: float) -> None:
        self.rtt_sum_s += rtt_s
        self.rtt_samples += 1
        if self.srtt_s is None:
            self.srtt_s, self.rttvar_s = rtt_s, rtt_s / 2
        else:
            self.rttvar_s = 0.75 * self.rttvar_s + 0.25 * abs(self.srtt_s - rtt_s)
            self.srtt_s = 0.875 * self.srtt_s + 0.125 * rtt_s
        self.rto_s = max(units.ms_to_s(self.params.min_rto_ms), self.srtt_s + 4 * self.rttvar_s)

    # -- HyStart (Linux 2.6.32 net/ipv4/tcp_cubic.c) ------------------------------------------
    def _hs_reset(self) -> None:
        """``bictcp_reset`` (at the start and on a timeout: the CA_Loss state): forget the
        minimum delay and whether slow start was left; then a new round."""
        self._hs_found = False
        self._hs_delay_min = 0  # eighths of a jiffy, as the kernel's ca->delay_min
        self._hs_round()

    def _hs_round(self) -> None:
        """``bictcp_hystart_reset``: a round starts now and ends when ``snd_nxt`` is acked."""
        jiffy = math.floor(self.env.now * self.timer_hz) if self.timer_hz else 0
        self._hs_round_start = self._hs_last_jiffy = jiffy
        self._hs_end_seq = self.snd_nxt
        self._hs_curr_rtt = 0
        self._hs_samples = 0

    def _hystart(self, rtt_s: float, acks: int = 1) -> None:
        """``bictcp_acked`` then ``hystart_update`` for an ACK with an RTT sample in slow start
        (cwnd of at least ``hystart_low_window`` segments): leave slow start (ssthresh = cwnd)
        on an ACK train (ACKs less than 2 jiffies apart for at least delay_min>>4 jiffies since
        the round began: with a minimum RTT under 2 jiffies that threshold is 0, so the first
        such ACK ends slow start) or on a delay increase (the least of the round's first 8
        samples above the minimum by clamp(delay_min>>4, 2, 16) jiffies). Delays are in
        eighths of a jiffy, the RTT rounded up to whole jiffies (``usecs_to_jiffies``). The
        ``acks`` ACKs of a train echo one timestamp: each gives the same sample."""
        delay = max(1, math.ceil(rtt_s * self.timer_hz - 1e-9)) << 3
        if self._hs_delay_min == 0 or self._hs_delay_min > delay:
            self._hs_delay_min = delay
        if self._hs_found or self.cwnd < self.hystart_low_window * self.mss:
            return
        jiffy = math.floor(self.env.now * self.timer_hz)
        if jiffy - self._hs_last_jiffy <= 2:
            self._hs_last_jiffy = jiffy
            if jiffy - self._hs_round_start >= self._hs_delay_min >> 4:
                self._hs_found = True  # HYSTART_ACK_TRAIN
        taken = min(acks, 8 - self._hs_samples) if self._hs_samples < 8 else 0
        if taken:  # the round's first 8 samples: their least
            if self._hs_curr_rtt == 0 or self._hs_curr_rtt > delay:
                self._hs_curr_rtt = delay
            self._hs_samples += taken
        threshold = min(max(self._hs_delay_min >> 4, 2 << 3), 16 << 3)
        if acks > taken and self._hs_curr_rtt > self._hs_delay_min + threshold:
            self._hs_found = True  # HYSTART_DELAY
        if self._hs_found:
            self.ssthresh = self.cwnd
            self.hystart_exits += 1

    def _wake_writer(self) -> None:
        if self._space_waiter and self.space() >= self._space_waiter[0]:
            _, callback = self._space_waiter
            self._space_waiter = None
            self.notify(callback)

    # -- timers -----------------------------------------------------------------------------
    def _timer(self):
        """Lazy RTO / persist timer: wakes at the deadline, re-checks, sleeps again."""
        while True:
            deadline = self.rto_deadline
            if deadline is None:
                window_closed = self.write_seq > self.snd_nxt and self.flight == 0
                yield self.env.timeout(self.rto_s)
                if window_closed and self.flight == 0 and self.write_seq > self.snd_nxt \
                        and self.rto_deadline is None:
                    self._send(self.snd_nxt, min(self.mss, self.write_seq - self.snd_nxt),
                               psh=True, retransmit=False)  # window probe
                    self.snd_nxt += min(self.mss, self.write_seq - self.snd_nxt)
                continue
            if self.env.now < deadline:
                yield self.env.timeout(deadline - self.env.now)
                continue
            self._on_timeout()

    def _on_timeout(self) -> None:
        self.timeouts += 1
        if self.hystart_low_window:
            self._hs_reset()  # CUBIC's CA_Loss: bictcp_reset and a new HyStart round
        self.ssthresh = max(self.flight / 2, 2 * self.mss)
        self.cwnd = self.mss
        self.snd_nxt = self.snd_una  # go back N
        self.recover = None
        self.dupacks = 0
        self.rto_s = min(self.rto_s * 2, 60.0)
        self.rto_deadline = None
        self.output()
        if self.rto_deadline is None and self.flight > 0:
            self.rto_deadline = self.env.now + self.rto_s


class TcpReceiver:
    """The receiving half of a connection. ``emit(burst)`` hands ACK trains to the stack below."""

    def __init__(self, env: simpy.Environment, flow: int, params: TcpParams, *, mss_bytes: int,
                 rcvbuf_bytes: int, src: int, dst: int, emit: Callable[[Burst], None],
                 max_window_bytes: int | None = None,
                 notify: Callable[[Callable[[], None]], None] | None = None):
        check(rcvbuf_bytes >= mss_bytes, "socket_bytes", rcvbuf_bytes,
              f">= one MSS ({mss_bytes} bytes)")
        check(max_window_bytes is None or max_window_bytes >= mss_bytes, "max_window_bytes",
              max_window_bytes, f"None or >= one MSS ({mss_bytes} bytes)")
        self.max_window = rcvbuf_bytes if max_window_bytes is None else \
            min(rcvbuf_bytes, max_window_bytes)
        self.interactive = False  # hold the ACK of a pushed burst for a piggy-back
        self.env, self.flow, self.params, self.emit = env, flow, params, emit
        self.notify = _call if notify is None else notify  # runs a woken reader
        self.src, self.dst = src, dst
        self.mss, self.rcvbuf = mss_bytes, rcvbuf_bytes
        self.header_bytes = units.tcp_header_bytes(params.timestamps)
        self.rcv_nxt = self.read_seq = 0
        self._ooo_starts: list[int] = []   # sorted starts of out-of-order intervals
        self._ooo_ends: dict[int, int] = {}
        self._unacked_frames = 0
        self._last_echo = -1.0
        self._delack_gen = 0
        self._last_right_edge = self.max_window
        self._max_right_edge = self.max_window  # the furthest edge ever advertised
        self._reader: Callable[[], None] | None = None
        self.bytes_read = 0
        # Data received past the furthest right edge ever advertised (a window probe aside):
        # a sender bug if ever > 0 (the conservation tests assert it stays 0).
        self.beyond_window_bytes = 0
        self.acks_sent = 0
        self.acks_piggybacked = 0

    @property
    def readable(self) -> int:
        return self.rcv_nxt - self.read_seq

    def window(self) -> int:
        ooo = sum(e - s for s, e in self._ooo_ends.items())
        return max(0, min(self.max_window, self.rcvbuf - self.readable - ooo))

    def on_data(self, burst: Burst) -> None:
        start, end = burst.seq, burst.seq + burst.payload_bytes
        # A sender must stay inside the advertised window; a window probe (at most an MSS
        # at rcv_nxt while the window is closed) is allowed, as TCP does.
        if not (start == self.rcv_nxt >= self._max_right_edge and end - start <= self.mss):
            self.beyond_window_bytes += max(0, end - max(self._max_right_edge, start))
        if end <= self.rcv_nxt:
            self._ack(1, dup=True, echo=burst.sent_s)
        elif start <= self.rcv_nxt:
            had_hole = bool(self._ooo_starts)
            self.rcv_nxt = end
            self._merge_ooo()
            self._last_echo = burst.sent_s
            self._unacked_frames += burst.frames
            n = self._unacked_frames // self.params.ack_every_frames
            if burst.packets < burst.frames:  # LRO aggregates: the stack sees one segment each
                n = min(n, burst.packets)
            if had_hole or (burst.psh and not (self.interactive and n == 0)):
                n, self._unacked_frames = max(n, 1), 0
            else:
                self._unacked_frames %= self.params.ack_every_frames
            if n:
                self._ack(n, dup=False, echo=burst.sent_s)
            if self._unacked_frames:
                self._arm_delack()
            self._wake_reader()
        else:
            self._store_ooo(start, end)
            self._ack(burst.frames, dup=True, echo=-1.0)

    def _merge_ooo(self) -> None:
        while self._ooo_starts and self._ooo_starts[0] <= self.rcv_nxt:
            s = self._ooo_starts.pop(0)
            self.rcv_nxt = max(self.rcv_nxt, self._ooo_ends.pop(s))

    def _store_ooo(self, start: int, end: int) -> None:
        if start in self._ooo_ends:
            self._ooo_ends[start] = max(self._ooo_ends[start], end)
        else:
            bisect.insort(self._ooo_starts, start)
            self._ooo_ends[start] = end

    def _ack(self, n: int, dup: bool, echo: float) -> None:
        self.acks_sent += n
        self.emit(self._ack_burst(n, dup, echo))

    def _ack_burst(self, n: int, dup: bool, echo: float) -> Burst:
        self._delack_gen += 1
        wnd = self.window()
        self._last_right_edge = self.rcv_nxt + wnd
        self._max_right_edge = max(self._max_right_edge, self._last_right_edge)
        sack_edge = self._ooo_starts[0] if self._ooo_starts else 0
        return Burst(ACK, self.flow, 0, n, n, self.header_bytes, self.mss, ack=self.rcv_nxt,
                     window_bytes=wnd, sack_edge=sack_edge, dup=dup, sent_s=self.env.now,
                     echo_s=echo, dst=self.dst, src=self.src)

    def take_ack(self) -> Burst | None:
        """The held ACK, for the reverse direction's next data burst to carry (None: nothing
        unacknowledged). Cancels the delayed-ACK timer."""
        if not self._unacked_frames:
            return None
        self._unacked_frames = 0
        self.acks_piggybacked += 1
        return self._ack_burst(1, dup=False, echo=self._last_echo)

    def _arm_delack(self) -> None:
        gen = self._delack_gen
        t = self.env.timeout(units.ms_to_s(self.params.delayed_ack_ms))
        t.callbacks.append(lambda _e: self._delack_expire(gen))

    def _delack_expire(self, gen: int) -> None:
        if gen == self._delack_gen and self._unacked_frames:
            self._unacked_frames = 0
            self._ack(1, dup=False, echo=self._last_echo)

    # -- application side -------------------------------------------------------------------
    def on_readable(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once data is readable (at once if it is): the blocked reader,
        run through ``notify`` (one waiter at a time)."""
        if self.readable > 0:
            callback()
        else:
            self._reader = callback

    def _wake_reader(self) -> None:
        if self._reader is not None and self.readable > 0:
            callback, self._reader = self._reader, None
            self.notify(callback)

    def read(self, max_bytes: int) -> int:
        """Consume up to ``max_bytes``; sends a window update when the window has opened."""
        n = min(max_bytes, self.readable)
        self.read_seq += n
        self.bytes_read += n
        threshold = min(2 * self.mss, self.rcvbuf // 2)
        if self.rcv_nxt + self.window() - self._last_right_edge >= threshold:
            self._ack(1, dup=False, echo=-1.0)
        return n
