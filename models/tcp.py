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
  end slow start (``_hystart``). ``congestion``: ``reno`` (halve on loss, one MSS per round
  trip) or ``cubic`` (Linux 2.6.32 tcp_cubic.c: the 717/1024 back-off, fast convergence, the
  cubic curve, its TCP-friendly floor and delayed-ACK compensation, ``_cubic_*``; with either,
  2.6.32's ``tcp_is_cwnd_limited`` under ``cubic``: no growth unless the window is used).
  Fast retransmit after
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

# Receiver ACK rules (``OsStackParams.ack_rule``): ``frames``, one ACK per ``ack_every_frames``
# frames, at most one per segment the stack receives, at once for a pushed burst, a window
# update after a read that opens 2 MSS; ``rcv_mss``, Linux's (``TcpReceiver``).
ACK_RULES = ("frames", "rcv_mss")
# Linux include/net/tcp.h (2.6.32): the smallest receive-MSS estimate a segment of this size
# (with its TCP header) may set, and the floor of any MSS.
TCP_MIN_RCVMSS = 536
TCP_MIN_MSS = 88
TCP_MAX_QUICKACKS = 16
# Congestion control (``TcpSender(congestion=...)``): ``reno``, or ``cubic`` as in Linux 2.6.32
# net/ipv4/tcp_cubic.c with its module defaults: beta 717/1024, bic_scale 41 (C = 0.4
# segments/s^3), fast_convergence 1, tcp_friendliness 1; ACK_RATIO_SHIFT 4.
CONGESTION = ("reno", "cubic")
CUBIC_C = 41 * 10 / 1024          # cube_rtt_scale >> (10 + 3 BICTCP_HZ), times 2^(3 BICTCP_HZ)
CUBIC_BETA_SCALE = 8 * (1024 + 717) // 3 // (1024 - 717)   # beta_scale (15): TCP-friendly pace
TCP_MAX_BURST = 3                 # tcp_max_burst: tp->reordering (sysctl_tcp_reordering, 3)


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
                 hystart_low_window: int = 0, congestion: str = "reno"):
        check(sndbuf_bytes >= mss_bytes, "socket_bytes", sndbuf_bytes,
              f">= one MSS ({mss_bytes} bytes)")
        check(tso_win_divisor >= 0, "tso_win_divisor", tso_win_divisor, ">= 0")
        check(timer_hz >= 0, "timer_hz", timer_hz, ">= 0 (0: no tick limit)")
        check(hystart_low_window >= 0, "hystart_low_window", hystart_low_window, ">= 0")
        check(not hystart_low_window or timer_hz > 0, "timer_hz", timer_hz,
              "> 0 with hystart_low_window (HyStart counts jiffies)")
        check(congestion in CONGESTION, "congestion", congestion, f"one of {CONGESTION}")
        check(congestion != "cubic" or timer_hz > 0, "timer_hz", timer_hz,
              "> 0 with congestion cubic (CUBIC counts jiffies)")
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
        self.cubic = congestion == "cubic"
        self._cubic_reset()
        self._rto_backoff = False  # a timeout with no ACK progress since (tcp_enter_loss)
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
        prior_flight = self.flight  # tcp_ack's prior_in_flight, before this ACK
        self._rto_backoff = False
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
        if self.cubic:
            # One call is one ACK, or a train of ``ack.packets`` taken whole.
            n_acks = 1 if to != ack.ack or self.ack_by_ack else max(1, ack.packets)
            self._cubic_acked(acked, n_acks, self.env.now - ack.echo_s
                              if sample and ack.echo_s >= 0 else None)
            if not self._cwnd_limited(prior_flight):
                return  # bictcp_cong_avoid: no growth unless the window was used
            if self.cwnd < self.ssthresh:
                self.cwnd += acked  # slow start (byte counting; 2.6.32 counts ACKs)
            else:
                for _ in range(n_acks):
                    self._cubic_avoid()
            return
        if self.cwnd < self.ssthresh:
            self.cwnd += acked
        else:
            self.cwnd += self.mss * acked / self.cwnd

    def _dup_ack(self, ack: Burst) -> None:
        self.dupacks += ack.packets
        if self.dupacks >= self.params.dupack_threshold and self.recover is None:
            if self.cubic:
                self.ssthresh = self._cubic_ssthresh() * self.mss
            else:
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

    # -- CUBIC (Linux 2.6.32 net/ipv4/tcp_cubic.c, net/ipv4/tcp_cong.c) ----------------------
    def _jiffy(self) -> int:
        return math.floor(self.env.now * self.timer_hz)

    def _cwnd_segments(self) -> int:
        return max(1, int(self.cwnd // self.mss))

    def _cubic_reset(self) -> None:
        """``bictcp_reset`` (at the start and on entering CA_Loss): no last maximum, no epoch,
        the delayed-ACK ratio back to 2 (x16: ACK_RATIO_SHIFT), no minimum delay."""
        self._cu_last_max = 0       # last_max_cwnd [segments]
        self._cu_last_cwnd = 0
        self._cu_last_time = 0      # jiffies
        self._cu_epoch: int | None = None   # epoch_start [jiffies]; None: no epoch
        self._cu_origin = 0         # bic_origin_point [segments]
        self._cu_k_s = 0.0          # bic_K [s]
        self._cu_delay_min = 0      # delay_min [jiffies]
        self._cu_ack_cnt = 0
        self._cu_tcp_cwnd = 0       # the Reno estimate [segments]
        self._cu_cnt = 0            # ACKs per cwnd increment
        self._cu_delayed_ack = 2 << 4   # packets per ACK, x16
        self._cu_cwnd_cnt = 0       # snd_cwnd_cnt

    def _cubic_ssthresh(self) -> int:
        """``bictcp_recalc_ssthresh``: end the epoch, remember the window at the loss (fast
        convergence: (1 + beta)/2 of it when below the last maximum) and back off to beta x
        cwnd, at least 2 segments."""
        cwnd = self._cwnd_segments()
        self._cu_epoch = None
        if cwnd < self._cu_last_max:
            self._cu_last_max = cwnd * (1024 + 717) // (2 * 1024)
        else:
            self._cu_last_max = cwnd
        return max(cwnd * 717 // 1024, 2)

    def _cubic_acked(self, acked: int, n_acks: int, rtt_s: float | None) -> None:
        """``bictcp_acked`` for ``n_acks`` ACKs covering ``acked`` bytes in the open state: the
        packets-per-ACK average (delayed_ack += cnt - delayed_ack >> 4, per ACK) and the least
        delay (in jiffies, at least 1; samples within a second of the epoch's start dropped)."""
        per_ack = max(1, round(acked / self.mss / n_acks))
        for _ in range(n_acks):
            self._cu_delayed_ack += per_ack - (self._cu_delayed_ack >> 4)
        if rtt_s is None:
            return
        now = self._jiffy()
        if self._cu_epoch is not None and now - self._cu_epoch < self.timer_hz:
            return
        delay = max(1, math.ceil(rtt_s * self.timer_hz - 1e-9))
        if self._cu_delay_min == 0 or self._cu_delay_min > delay:
            self._cu_delay_min = delay

    def _cwnd_limited(self, prior_flight_bytes: int) -> bool:
        """2.6.32 ``tcp_is_cwnd_limited`` for the packets in flight before the ACK: the window
        was full, or what was left of it is what TSO deferral holds back (under 1/divisor of
        cwnd and under one full segment), or at most ``tcp_max_burst`` (3) packets."""
        cwnd = self._cwnd_segments()
        in_flight = -(-prior_flight_bytes // self.mss)
        if in_flight >= cwnd:
            return True
        left = cwnd - in_flight
        if self.tso_win_divisor and left * self.tso_win_divisor < cwnd \
                and left * self.mss < self.seg_max:
            return True
        return left <= TCP_MAX_BURST

    def _cubic_avoid(self) -> None:
        """One ACK in congestion avoidance: ``bictcp_update`` (the ACKs per increment ``cnt``
        from the cubic curve W(t) = origin + C (t - K)^3, at most 20 while no loss was seen,
        at most what the Reno estimate needs to catch up, divided by the packets per ACK),
        then ``tcp_cong_avoid_ai`` (cwnd + 1 segment once ``cnt`` ACKs have come)."""
        cwnd = self._cwnd_segments()
        self._cu_ack_cnt += 1
        now = self._jiffy()
        if not (self._cu_last_cwnd == cwnd
                and now - self._cu_last_time <= int(self.timer_hz) // 32):
            self._cu_last_cwnd, self._cu_last_time = cwnd, now
            if self._cu_epoch is None:
                self._cu_epoch, self._cu_ack_cnt, self._cu_tcp_cwnd = now, 1, cwnd
                if self._cu_last_max <= cwnd:
                    self._cu_k_s, self._cu_origin = 0.0, cwnd
                else:
                    self._cu_k_s = ((self._cu_last_max - cwnd) / CUBIC_C) ** (1 / 3)
                    self._cu_origin = self._cu_last_max
            t_s = (now + self._cu_delay_min - self._cu_epoch) / self.timer_hz
            delta = int(CUBIC_C * abs(t_s - self._cu_k_s) ** 3)
            target = self._cu_origin - delta if t_s < self._cu_k_s else self._cu_origin + delta
            cnt = cwnd // (target - cwnd) if target > cwnd else 100 * cwnd
            if self._cu_last_max == 0 and cnt > 20:
                cnt = 20  # the initial growth: 5% per round trip
            d = (cwnd * CUBIC_BETA_SCALE) >> 3  # tcp_friendliness
            while self._cu_ack_cnt > d:
                self._cu_ack_cnt -= d
                self._cu_tcp_cwnd += 1
            if self._cu_tcp_cwnd > cwnd:
                cnt = min(cnt, cwnd // (self._cu_tcp_cwnd - cwnd))
            self._cu_cnt = max(1, (cnt << 4) // self._cu_delayed_ack)
        if self._cu_cwnd_cnt >= self._cu_cnt:  # tcp_cong_avoid_ai
            self.cwnd = (cwnd + 1) * self.mss
            self._cu_cwnd_cnt = 0
        else:
            self._cu_cwnd_cnt += 1

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
        if self.cubic:
            # tcp_enter_loss: a new ssthresh unless this timeout repeats one with no ACK
            # progress since (Loss state, icsk_retransmits > 0); then CA_Loss: bictcp_reset.
            if not self._rto_backoff:
                self.ssthresh = self._cubic_ssthresh() * self.mss
            self._cubic_reset()
            self._rto_backoff = True
        else:
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


def _segment_lengths(burst: Burst) -> list[int]:
    """The payload lengths of the segments a burst's receiver takes in: its ``packets`` (an LRO
    burst's aggregates, or single frames) share its frames evenly, the longer ones first; the
    last ends with the burst's partial frame."""
    p = min(burst.packets, burst.frames)
    if p <= 1:
        return [burst.payload_bytes]
    k, r = divmod(burst.frames, p)
    mss = burst.frame_payload_bytes
    lengths = [(k + 1) * mss] * r + [k * mss] * (p - r)
    lengths[-1] += burst.payload_bytes - burst.frames * mss
    return lengths


class TcpReceiver:
    """The receiving half of a connection. ``emit(burst)`` hands ACK trains to the stack below."""

    def __init__(self, env: simpy.Environment, flow: int, params: TcpParams, *, mss_bytes: int,
                 rcvbuf_bytes: int, src: int, dst: int, emit: Callable[[Burst], None],
                 max_window_bytes: int | None = None,
                 notify: Callable[[Callable[[], None]], None] | None = None,
                 ack_rule: str = "frames", rx_gso_size: bool = False):
        check(rcvbuf_bytes >= mss_bytes, "socket_bytes", rcvbuf_bytes,
              f">= one MSS ({mss_bytes} bytes)")
        check(ack_rule in ACK_RULES, "ack_rule", ack_rule, f"one of {ACK_RULES}")
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
        # The ``rcv_mss`` rule's state (Linux's icsk_ack): the receive-MSS estimate (2.6.32
        # tcp_initialize_rcv_mss: at most TCP_MIN_RCVMSS until a segment says more), the
        # length of the last segment that could lower it, the PUSHED flags (1: PUSHED, 2:
        # PUSHED2), rcv_wup (the sequence the last ACK sent), and pingpong (interactive mode).
        self.ack_rule = ack_rule
        self.rx_gso_size = rx_gso_size  # aggregates come with their segment size (gso_size)
        self.rcv_mss = max(TCP_MIN_MSS, min(mss_bytes, rcvbuf_bytes // 2, TCP_MIN_RCVMSS))
        self._tcp_header = units.TCP_HEADER_BYTES + (
            units.TCP_TIMESTAMP_OPTION_BYTES if params.timestamps else 0)
        self._last_seg = 0
        self._pushed = 0
        self._rcv_wup = 0
        self._pingpong = False
        self._last_rcv_s = -math.inf
        # Quick-ACK mode (icsk_ack.quick): immediate ACKs left, granted at the first data
        # (tcp_incr_quickack), after data out of order, and one per step of the receive
        # window's growth (tcp_grow_window: rcv_ssthresh from tcp_select_initial_window's
        # 4 MSS, +2 MSS per segment of 128 bytes or more, up to the window).
        self._quick = 0
        self._rcv_ssthresh = min(4 * mss_bytes, self.max_window)
        self._got_data = False

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
            if self.ack_rule == "rcv_mss":
                self._in_order_rcv_mss(burst, start, had_hole)
                self._wake_reader()
                return
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
            if self.ack_rule == "rcv_mss":  # tcp_data_queue: tcp_enter_quickack_mode
                self._pingpong = False
                self._incr_quickack()
            self._ack(burst.frames, dup=True, echo=-1.0)

    # -- the ``rcv_mss`` rule (Linux 2.6.32, net/ipv4/tcp_input.c) --------------------------
    def _in_order_rcv_mss(self, burst: Burst, start: int, had_hole: bool) -> None:
        """In-order data under Linux's rule: each segment the stack receives goes through
        ``tcp_measure_rcv_mss`` (an LRO aggregate counts by its gso_size, one frame's
        payload, when the device hands it up with one: ``rx_gso_size``; else whole), then
        ``__tcp_ack_snd_check`` ACKs at once when more than ``rcv_mss`` bytes arrived since
        the last ACK (rcv_nxt - rcv_wup > rcv_mss); PSH plays no part; outside pingpong mode
        a quick ACK left (``_quick``) ACKs the segment at once. Data that fill a hole are
        ACKed at once (the out-of-order queue was not empty); the rest waits for the
        delayed-ACK timer or the reader (``read``)."""
        self._last_rcv_s = self.env.now
        pingpong = self._pingpong or self.interactive
        n, ack_at, pos = 0, start, start
        for length in _segment_lengths(burst):
            pos += length
            self._measure_rcv_mss(min(length, burst.frame_payload_bytes) if self.rx_gso_size
                                  else length, burst.psh)
            if not self._got_data:
                self._got_data = True
                self._incr_quickack()
            if length >= 128 and self._rcv_ssthresh < self.max_window:
                self._rcv_ssthresh = min(self._rcv_ssthresh + 2 * self.mss, self.max_window)
                self._quick |= 1
            if pos - self._rcv_wup > self.rcv_mss or (self._quick and not pingpong):
                n, ack_at = n + 1, pos
                self._rcv_wup, self._pushed = pos, 0  # tcp_send_ack: rcv_wup, pending cleared
                self._quick = max(0, self._quick - 1)  # tcp_dec_quickack_mode
        if had_hole:
            n, ack_at = max(n, 1), self.rcv_nxt
            self._pingpong = False  # the hole is filled: out of pingpong mode
        if n:
            quick = self._quick
            self._ack(n, dup=False, echo=burst.sent_s, upto=ack_at)
            self._quick = quick  # already counted down ACK by ACK
        self._unacked_frames = 1 if self.rcv_nxt > self._rcv_wup else 0
        if self._unacked_frames:
            self._arm_delack()

    def _incr_quickack(self) -> None:
        """2.6.32 ``tcp_incr_quickack``: rcv_wnd / (2 rcv_mss) quick ACKs (2 if none), at most
        TCP_MAX_QUICKACKS (16)."""
        quick = self.window() // (2 * self.rcv_mss) or 2
        self._quick = max(self._quick, min(quick, TCP_MAX_QUICKACKS))

    def _measure_rcv_mss(self, length: int, psh: bool) -> None:
        """2.6.32 ``tcp_measure_rcv_mss`` for a segment of ``length`` payload bytes: a longer
        one raises rcv_mss to its length; a shorter one lowers it only when the one before had
        the same length (and either is at least TCP_MIN_RCVMSS with its header, or at least
        TCP_MIN_MSS without PSH); otherwise it sets PUSHED (PUSHED2 if PUSHED was set)."""
        lss, self._last_seg = self._last_seg, 0
        if length >= self.rcv_mss:
            self.rcv_mss = length
            return
        with_header = length + self._tcp_header
        if with_header >= TCP_MIN_RCVMSS + units.TCP_HEADER_BYTES or (
                with_header >= TCP_MIN_MSS + units.TCP_HEADER_BYTES and not psh):
            self._last_seg = length
            if length == lss:
                self.rcv_mss = length
                return
        self._pushed |= 3 if self._pushed & 1 else 1

    def data_sent(self) -> None:
        """The reverse direction of this connection sent data (2.6.32 tcp_event_data_sent):
        within ``delayed_ack_ms`` (the ato) of the last data received, the connection enters
        pingpong (interactive) mode."""
        if self.env.now - self._last_rcv_s < units.ms_to_s(self.params.delayed_ack_ms):
            self._pingpong = True

    def _cleanup_rbuf(self) -> None:
        """2.6.32 ``tcp_cleanup_rbuf`` after a read: a pending ACK goes now if more than
        rcv_mss bytes are unacknowledged, or if the read emptied the queue after a short
        segment (PUSHED2, or PUSHED outside pingpong mode); else a window update if the window
        now offered is at least twice what the sender still has and that is at most half the
        largest window."""
        pingpong = self._pingpong or self.interactive
        if self._unacked_frames and (
                self.rcv_nxt - self._rcv_wup > self.rcv_mss or (self.readable == 0 and (
                    self._pushed & 2 or (self._pushed & 1 and not pingpong)))):
            self._unacked_frames = 0
            self._ack(1, dup=False, echo=self._last_echo)
            return
        offered = max(0, self._last_right_edge - self.rcv_nxt)
        if 2 * offered <= self.max_window:
            wnd = self.window()
            if wnd and wnd >= 2 * offered:
                self._ack(1, dup=False, echo=-1.0)

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

    def _ack(self, n: int, dup: bool, echo: float, upto: int | None = None) -> None:
        self.acks_sent += n
        self.emit(self._ack_burst(n, dup, echo, upto))

    def _ack_burst(self, n: int, dup: bool, echo: float, upto: int | None = None) -> Burst:
        """An ACK train acknowledging ``upto`` (default: everything received, rcv_nxt); its
        window keeps the right edge rcv_nxt + free space."""
        self._delack_gen += 1
        ack = self.rcv_nxt if upto is None else upto
        wnd = self.window()
        if ack != self.rcv_nxt:
            wnd = min(self.max_window, wnd + self.rcv_nxt - ack)
        self._last_right_edge = ack + wnd
        self._max_right_edge = max(self._max_right_edge, self._last_right_edge)
        self._rcv_wup, self._pushed = ack, 0
        self._quick = max(0, self._quick - n)  # tcp_event_ack_sent: tcp_dec_quickack_mode
        sack_edge = self._ooo_starts[0] if self._ooo_starts else 0
        return Burst(ACK, self.flow, 0, n, n, self.header_bytes, self.mss, ack=ack,
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
            self._pingpong = False  # 2.6.32 tcp_delack_timer: a missed delayed ACK
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
        if self.ack_rule == "rcv_mss":
            if n:
                self._cleanup_rbuf()
            return n
        threshold = min(2 * self.mss, self.rcvbuf // 2)
        if self.rcv_nxt + self.window() - self._last_right_edge >= threshold:
            self._ack(1, dup=False, echo=-1.0)
        return n
