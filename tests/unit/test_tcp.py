"""models.tcp: sender and receiver basics on small hand-wired loops, exact event sequences.

Loop: sender.emit -> (fixed one-way delay D, optional loss) -> receiver.on_data;
receiver.emit -> D -> sender.on_ack. Segments of one MSS (no TSO) so every burst is one frame.
Checked: window-limited sending, one ACK per 2 full frames with a delayed-ACK timer for the
rest, an immediate ACK for PSH, a duplicate ACK per out-of-order frame, fast retransmit of the
hole after 3 duplicates, RTO with go-back-N and slow start.
"""
import pytest
import simpy

from models.base import ACK, DATA, Burst
from models.tcp import TcpParams, TcpReceiver, TcpSender

MSS = 1448
D = 10e-6  # one-way delay of the hand-wired loop


def us(t: float) -> float:
    return round(t * 1e6, 6)


def sender(env, emit, *, sndbuf=64 * MSS, seg_max=MSS, **tcp):
    return TcpSender(env, 0, TcpParams(**tcp), mss_bytes=MSS, seg_max_bytes=seg_max,
                     sndbuf_bytes=sndbuf, tso=False, src=1, dst=2, emit=emit)


def receiver(env, emit, *, rcvbuf=64 * MSS, **tcp):
    return TcpReceiver(env, 0, TcpParams(**tcp), mss_bytes=MSS, rcvbuf_bytes=rcvbuf, src=2, dst=1,
                       emit=emit)


def frame(seq: int, psh: bool = False, frames: int = 1) -> Burst:
    return Burst(DATA, 0, frames * MSS, frames, frames, 52, MSS, seq=seq, psh=psh)


class Loop:
    """Sender and receiver joined by two delay lines; ``lose(burst)`` True drops a data burst."""

    def __init__(self, lose=lambda b: False, **tcp):
        self.env = simpy.Environment()
        self.log: list[tuple] = []
        self.lose = lose
        self.snd = sender(self.env, self._data, **tcp)
        self.rcv = receiver(self.env, self._ack, **tcp)

    def _later(self, fn, burst):
        self.env.timeout(D).callbacks.append(lambda _e: fn(burst))

    def _data(self, b: Burst):
        self.log.append(("data", us(self.env.now), b.seq // MSS, b.frames, b.retransmit))
        if not self.lose(b):
            self._later(self.rcv.on_data, b)

    def _ack(self, b: Burst):
        self.log.append(("ack", us(self.env.now), b.ack // MSS, b.packets, b.dup))
        self._later(self.snd.on_ack, b)


def test_sender_is_limited_by_the_window_and_refills_on_ack():
    env, out = simpy.Environment(), []
    s = sender(env, out.append, sndbuf=4 * MSS, initial_cwnd_segments=10)
    s.write(4 * MSS)
    assert [b.seq // MSS for b in out] == [0, 1, 2, 3]
    assert s.flight == 4 * MSS and s.space() == 0
    s.on_ack(Burst(ACK, 0, 0, 1, 1, 52, MSS, ack=2 * MSS, window_bytes=4 * MSS))
    assert s.space() == 2 * MSS and len(out) == 4       # freed space, nothing written yet
    s.write(2 * MSS)
    assert [b.seq // MSS for b in out[4:]] == [4, 5]
    assert out[-1].psh                                    # fills the window: pushed


def test_sender_respects_the_advertised_window_which_never_shrinks():
    env, out = simpy.Environment(), []
    s = sender(env, out.append, sndbuf=8 * MSS, initial_cwnd_segments=20)
    s.on_ack(Burst(ACK, 0, 0, 1, 1, 52, MSS, ack=0, window_bytes=2 * MSS))
    s.write(8 * MSS)            # right edge stays at the socket size: it is never pulled back
    assert [b.seq // MSS for b in out] == list(range(8))
    s.on_ack(Burst(ACK, 0, 0, 1, 1, 52, MSS, ack=8 * MSS, window_bytes=2 * MSS))
    s.write(8 * MSS)            # right edge 8 + 2: two more segments, the rest waits
    assert [b.seq // MSS for b in out[8:]] == [8, 9]
    assert s.write_seq - s.snd_nxt == 6 * MSS


def test_receiver_acks_every_second_frame_and_delays_the_rest():
    env, acks = simpy.Environment(), []
    r = receiver(env, lambda b: acks.append((us(env.now), b.ack // MSS, b.packets)),
                 delayed_ack_ms=40)

    def feed():
        for k in range(3):
            r.on_data(frame(k * MSS))
            yield env.timeout(1e-3)
    env.process(feed())
    env.run(until=0.1)
    # frame 0: held; frame 1 (t=1ms): ACK 2; frame 2 (t=2ms): held until its timer at 42 ms.
    assert acks == [(1000.0, 2, 1), (42000.0, 3, 1)]


def test_receiver_acks_a_multi_frame_burst_per_two_frames():
    env, acks = simpy.Environment(), []
    r = receiver(env, lambda b: acks.append((us(env.now), b.ack // MSS, b.packets)))
    r.on_data(frame(0, frames=5))
    env.run(until=0.1)
    assert acks == [(0.0, 5, 2), (40000.0, 5, 1)]  # 2 ACKs at once, the odd frame delayed


def test_receiver_acks_a_pushed_frame_at_once():
    env, acks = simpy.Environment(), []
    r = receiver(env, lambda b: acks.append((us(env.now), b.ack // MSS, b.packets)))
    r.on_data(frame(0, psh=True))
    env.run(until=0.1)
    assert acks == [(0.0, 1, 1)]


def test_out_of_order_data_gives_dup_acks_and_fast_retransmit_repairs_the_hole():
    lost = set()

    def lose_first_copy_of_segment_2(b):
        if b.seq == 2 * MSS and b.seq not in lost:
            lost.add(b.seq)
            return True
        return False
    loop = Loop(lose_first_copy_of_segment_2, initial_cwnd_segments=10)
    loop.snd.write(10 * MSS)
    loop.env.run(until=0.01)
    expected = [("data", 0.0, k, 1, False) for k in range(10)]
    expected += [("ack", 10.0, 2, 1, False)]                       # frames 0, 1
    expected += [("ack", 10.0, 2, 1, True)] * 7                    # frames 3..9: out of order
    expected += [("data", 20.0, 2, 1, True)]                       # 3rd dup ACK: the hole
    expected += [("ack", 30.0, 10, 1, False)]                      # hole filled: ACK all
    assert loop.log == expected
    assert (loop.snd.retransmits, loop.snd.timeouts) == (1, 0)
    assert loop.snd.snd_una == 10 * MSS and loop.snd.recover is None
    assert loop.rcv.rcv_nxt == 10 * MSS


def test_rto_goes_back_n_and_restarts_in_slow_start():
    # Everything sent before 5 ms is lost; the RTO (10 ms) then resends from snd_una.
    loop = Loop(lambda b: b.sent_s < 5e-3, initial_cwnd_segments=4, min_rto_ms=10)
    loop.snd.write(4 * MSS)
    loop.env.run(until=0.05)
    data = [e for e in loop.log if e[0] == "data"]
    assert data == [("data", 0.0, k, 1, False) for k in range(4)] + [
        ("data", 10000.0, 0, 1, False),   # timeout: cwnd 1 MSS, go back to snd_una
        ("data", 10020.0, 1, 1, False),   # ACK of 0: slow start, cwnd 2
        ("data", 10020.0, 2, 1, False),
        ("data", 10040.0, 3, 1, False)]   # ACK of 1, 2
    assert loop.snd.timeouts == 1
    assert loop.snd.snd_una == 4 * MSS
    assert loop.snd.rto_deadline is None   # nothing in flight, no timer pending


def test_rtt_is_sampled_from_the_echoed_send_time():
    loop = Loop(initial_cwnd_segments=10)
    loop.snd.write(2 * MSS)     # last frame pushed: acked on arrival, echo of its send time
    loop.env.run(until=0.01)
    assert loop.snd.rtt_samples == 1
    assert loop.snd.rtt_sum_s == pytest.approx(2 * D)


def test_socket_smaller_than_one_mss_is_rejected():
    with pytest.raises(ValueError, match="socket_bytes"):
        sender(simpy.Environment(), print, sndbuf=MSS - 1)


def _flight_without_acks(peer_window_bytes):
    """A sender whose buffer is 2 x the receiver's 8 KB socket (Linux's SO_SNDBUF doubling),
    its data delivered at once, no ACK back: what it sends before the first ACK."""
    env = simpy.Environment()
    rcv = TcpReceiver(env, 0, TcpParams(), mss_bytes=MSS, rcvbuf_bytes=8192, src=2, dst=1,
                      emit=lambda b: None)
    snd = TcpSender(env, 0, TcpParams(initial_cwnd_segments=16), mss_bytes=MSS,
                    seg_max_bytes=MSS, sndbuf_bytes=16384, tso=False, src=1, dst=2,
                    emit=rcv.on_data, peer_window_bytes=peer_window_bytes)
    snd.write(snd.space())
    return snd, rcv


def test_sender_starts_at_the_receivers_advertised_window_not_its_own_buffer():
    snd, rcv = _flight_without_acks(peer_window_bytes=8192)
    assert snd.snd_nxt <= 8192 and rcv.beyond_window_bytes == 0
    # What the bug did (the right edge at its own 16 KB buffer): the receiver sees the overrun.
    snd, rcv = _flight_without_acks(peer_window_bytes=None)
    assert rcv.beyond_window_bytes > 0


def test_open_connection_gives_every_workload_the_syn_ack_window():
    from models.guest import OsStackParams
    from models.workloads.base import open_connection

    class Host:  # the StackHost surface open_connection uses
        def __init__(self, endpoint):
            self.endpoint, self.stack, self.env = endpoint, OsStackParams(), simpy.Environment()
            self.opened = {}

        def open_receiver(self, flow, dst, *, mss_bytes, rcvbuf_bytes, peer_scales):
            return TcpReceiver(self.env, flow, TcpParams(), mss_bytes=mss_bytes,
                               rcvbuf_bytes=rcvbuf_bytes, src=self.endpoint, dst=dst,
                               emit=lambda b: None)

        def open_sender(self, flow, dst, *, mss_bytes, seg_max_bytes, sndbuf_bytes,
                        peer_window_bytes):
            self.opened[flow] = (sndbuf_bytes, peer_window_bytes)
            return None

    a, b = Host(0), Host(-1)
    _, rcv = open_connection(a, b, 7, mss_bytes=MSS, seg_max_bytes=MSS, socket_bytes=8192)
    assert a.opened[7] == (8192, 8192) and rcv.dst == 0


class _App:
    """A host's application side for ``write_some`` / ``read_some``: one context on a 1 GHz
    core, 1000 cycles per send()/recv() call and nothing per byte."""

    def __init__(self, env):
        from models.base import CycleCost
        from models.cpu import Context, Core, CpuParams
        from models.guest import OsStackParams
        ideal = CpuParams(1, 1, 1e9, context_switch_cycles=0.0, jitter_cv=0.0)
        self.ctx = Context(env, "app", Core(env, 0, 0, ideal), rng=None)
        self.stack = OsStackParams(send_call=CycleCost(1000.0, 0.0, 0.0),
                                   recv_call=CycleCost(1000.0, 0.0, 0.0))

    def app_context(self, flow):
        return self.ctx

    def app_woken(self, ctx):
        """No price for waking the application (``StackHost.app_woken``)."""

    def rx_data_home(self, flow):
        return None  # the data are at the reader's own home (``StackHost.rx_data_home``)


def test_tiny_messages_reach_tcp_in_tasks_of_at_most_64_calls():
    """1-byte send() calls: the first 64 bytes reach TCP after 64 calls (64 us), not after the
    whole free buffer's worth of calls (was one task of 92,672 calls, 93 ms)."""
    from models.workloads.base import MAX_CALLS_PER_TASK, read_some, write_some

    loop = Loop()
    app = _App(loop.env)
    free = loop.snd.space()
    proc = loop.env.process(write_some(app, loop.snd, None, 1, offset=0, need=1))
    loop.env.run(until=proc)
    assert proc.value == free
    assert app.ctx.tasks == free // MAX_CALLS_PER_TASK and app.ctx.cycles == free * 1000.0
    assert loop.log[0][:2] == ("data", 64.0)          # 64 calls of 1 us, then TCP sends
    reader = loop.env.process(read_some(app, loop.rcv, None, 1))
    loop.env.run(until=reader)
    assert reader.value == loop.rcv.bytes_read > 0
    assert app.ctx.tasks == free // MAX_CALLS_PER_TASK + -(-reader.value // MAX_CALLS_PER_TASK)


def _tso_sender(env, sent, divisor, **kw):
    """A TSO sender with a 24-frame peer window and 200 frames to send (its first window
    already out), deferring at 1/``divisor`` of the window; ``kw``: more TcpSender options."""
    s = TcpSender(env, 0, TcpParams(initial_cwnd_segments=1000), mss_bytes=MSS,
                  seg_max_bytes=44 * MSS, sndbuf_bytes=400 * MSS, tso=True, src=1, dst=2,
                  emit=sent.append, peer_window_bytes=24 * MSS, tso_win_divisor=divisor, **kw)
    s.write(200 * MSS)
    return s


def _ack(snd, frames=2):
    """The receiver's next ACK, for ``frames`` more frames (its ACK ratio)."""
    return Burst(ACK, 0, 0, 1, 1, 52, MSS, ack=snd.snd_una + frames * MSS,
                 window_bytes=24 * MSS)


@pytest.mark.parametrize("divisor, sizes, deferrals", [
    (0, [2, 2, 2, 2, 2, 2], 0),  # each ACK lets out what it opened: 2 frames
    # Deferral: wait until 1/3 of the 24-frame window (8 frames) is open; the 4 frames the
    # last two ACKs opened wait for the next ACK.
    (3, [8], 5),
])
def test_tso_defers_a_segment_the_window_cuts_short(divisor, sizes, deferrals):
    env = simpy.Environment()
    sent: list[Burst] = []
    snd = _tso_sender(env, sent, divisor)
    assert [b.frames for b in sent] == [24]  # the whole window at once (nothing in flight)
    sent.clear()
    for _ in range(6):  # 6 ACKs of 2 frames each
        snd.on_ack(_ack(snd))
    assert [b.frames for b in sent] == sizes
    assert snd.tso_deferrals == deferrals
    assert snd.snd_nxt - snd.snd_una == (24 - 12 + sum(sizes)) * MSS


def _acks_at(times_s, timer_hz):
    """A deferring sender (divisor 3, 24-frame window) given 2-frame ACKs at ``times_s``:
    the frames of each segment it sent after the first window, and its deferral timeouts."""
    env = simpy.Environment()
    sent: list[Burst] = []
    s = _tso_sender(env, sent, 3, timer_hz=timer_hz)
    sent.clear()

    def acks():
        for t in times_s:
            yield env.timeout(t - env.now)
            s.on_ack(_ack(s))
    env.process(acks())
    env.run(until=times_s[-1] + 1e-6)
    return [b.frames for b in sent], s.tso_deferral_timeouts


def test_tso_deferral_ends_after_two_timer_ticks():
    # HZ 1000: an ACK 2.5 ms after the one that deferred (jiffy 0 -> 2) sends what is open.
    assert _acks_at([0.0001, 0.0026], 1000.0) == ([4], 1)
    # No tick limit: the 4 open frames keep waiting for 1/3 of the window (8 frames).
    assert _acks_at([0.0001, 0.0026], 0.0) == ([], 0)
    # 2.6.32 restamps at every decision to defer: ACKs 1-1.4 ms apart never span two ticks
    # (jiffies 0, 1, 2), so the 6 open frames still wait (a kept first stamp would send them).
    assert _acks_at([0.0001, 0.0015, 0.0025], 1000.0) == ([], 0)


def _train(snd, acks, frames_each=2):
    """A train of ``acks`` ACKs (one Burst, as the NIC and vNIC deliver them), the last one
    acknowledging ``acks * frames_each`` more frames."""
    return Burst(ACK, 0, 0, acks, acks, 52, MSS, ack=snd.snd_una + acks * frames_each * MSS,
                 window_bytes=24 * MSS)


@pytest.mark.parametrize("ack_by_ack, sizes", [
    # One cumulative ACK: the 12 frames the train opened leave as one segment.
    (False, [12]),
    # ACK by ACK (Linux's tcp_rcv_established per packet): deferral cuts at 1/3 of the 24-frame
    # window, 8 frames; the last two ACKs' 4 frames wait for more ACKs.
    (True, [8]),
])
def test_an_ack_train_taken_ack_by_ack_cuts_tso_segments_at_the_deferral_share(ack_by_ack,
                                                                                  sizes):
    env = simpy.Environment()
    sent: list[Burst] = []
    snd = _tso_sender(env, sent, 3, ack_by_ack=ack_by_ack)
    sent.clear()
    snd.on_ack(_train(snd, 6))
    assert [b.frames for b in sent] == sizes
    assert snd.snd_una == 12 * MSS  # the whole train acknowledged either way


def _slow_start(hystart_low_window, rtt_s, rounds=6):
    """A sender in slow start whose every window comes back as one train of ACKs (one per
    2 frames) ``rtt_s`` after it left: its cwnd (segments) and ssthresh after ``rounds``."""
    env = simpy.Environment()
    sent: list[Burst] = []
    snd = TcpSender(env, 0, TcpParams(initial_cwnd_segments=4), mss_bytes=MSS,
                    seg_max_bytes=44 * MSS, sndbuf_bytes=4000 * MSS, tso=True, src=1, dst=2,
                    emit=sent.append, peer_window_bytes=4000 * MSS, timer_hz=1000.0,
                    hystart_low_window=hystart_low_window)
    snd.write(4000 * MSS)

    def clock():
        for _ in range(rounds):
            yield env.timeout(rtt_s)
            flight = snd.flight // MSS
            snd.on_ack(Burst(ACK, 0, 0, flight // 2, flight // 2, 52, MSS, ack=snd.snd_nxt,
                             window_bytes=4000 * MSS, echo_s=env.now - rtt_s))
    env.process(clock())
    env.run(until=rounds * rtt_s + 1e-9)
    return snd.cwnd / MSS, snd.ssthresh / MSS, snd.hystart_exits


def test_hystart_ends_slow_start_at_the_low_window_on_a_lan():
    # No HyStart: cwnd doubles every round, 4 -> 256 segments, no ssthresh.
    assert _slow_start(0, 100e-6) == (256, float("inf"), 0)
    # 2.6.32 HyStart, RTT 0.1 ms (delay_min>>4 = 0 jiffies): the first ACK train at cwnd >= 16
    # ends slow start there (ssthresh = cwnd = 16, round 3); congestion avoidance then adds one
    # MSS a round (rounds 3-6).
    assert _slow_start(16, 100e-6) == (20, 16, 1)
    # A 5-ms RTT (delay_min 5 jiffies, >>4 = 2): ACK trains 5 jiffies apart never make a train
    # and the delay never rises: slow start goes on.
    assert _slow_start(16, 5e-3)[:2] == (256, float("inf"))


def _cubic_sender(env, congestion, *, cwnd_segments=100, peer_window=4000):
    sent: list[Burst] = []
    snd = TcpSender(env, 0, TcpParams(initial_cwnd_segments=cwnd_segments), mss_bytes=MSS,
                    seg_max_bytes=MSS, sndbuf_bytes=8000 * MSS, tso=False, src=1, dst=2,
                    emit=sent.append, peer_window_bytes=peer_window * MSS, timer_hz=1000.0,
                    ack_by_ack=True, congestion=congestion)
    snd.write(8000 * MSS)
    return snd


def _rounds(env, snd, rounds, rtt_s=1e-3, window=4000):
    """Every ``rtt_s`` the whole flight comes back as one train of ACKs (one per 2 frames)."""
    def clock():
        for _ in range(rounds):
            yield env.timeout(rtt_s)
            n = max(1, snd.flight // MSS // 2)
            snd.on_ack(Burst(ACK, 0, 0, n, n, 52, MSS, ack=snd.snd_nxt,
                             window_bytes=window * MSS, echo_s=env.now - rtt_s))
    env.process(clock())
    env.run(until=env.now + rounds * rtt_s + 1e-9)


def _loss(snd):
    """Three duplicate ACKs for the first segment in flight: fast retransmit."""
    snd.on_ack(Burst(ACK, 0, 0, 3, 3, 52, MSS, ack=snd.snd_una, dup=True,
                     window_bytes=4000 * MSS))


@pytest.mark.parametrize("congestion,ssthresh,after_60", [
    ("reno", 50, 109),    # halve the flight, then about one MSS a round trip (byte counting)
    ("cubic", 70, 79),    # 717/1024 of cwnd, then the TCP-friendly estimate's pace
])
def test_cubic_backs_off_to_0_7_and_grows_slowly_near_the_last_maximum(congestion, ssthresh,
                                                                         after_60):
    # 2.6.32 tcp_cubic.c: bictcp_recalc_ssthresh returns cwnd * 717 / 1024 and remembers
    # last_max_cwnd = cwnd. Back in congestion avoidance the cubic curve starts K =
    # cbrt((100 - 70) / 0.4) = 4.2 s below its plateau (its integer target is 71 at once, then
    # flat), so growth is the TCP-friendly estimate's: one segment per 70 x 15 / 8 = 131 ACKs,
    # brought up to date every HZ/32 (31 jiffies): +8 at 32 ms of 35 ACKs a 1-ms round. The
    # model's Reno adds about one MSS a round.
    env = simpy.Environment()
    snd = _cubic_sender(env, congestion)
    _loss(snd)
    assert snd.ssthresh == ssthresh * MSS and snd.cwnd == ssthresh * MSS
    _rounds(env, snd, 1)  # the recovery ends: cwnd = ssthresh
    assert snd.recover is None and round(snd.cwnd / MSS) == ssthresh
    _rounds(env, snd, 60)
    assert round(snd.cwnd / MSS) == after_60
    if congestion == "cubic":
        assert snd._cu_last_max == 100
        _loss(snd)  # fast convergence: a loss below the last maximum remembers (1+beta)/2 of it
        assert snd._cu_last_max == after_60 * (1024 + 717) // 2048
        assert snd.ssthresh == after_60 * 717 // 1024 * MSS


@pytest.mark.parametrize("congestion,grows", [("reno", True), ("cubic", False)])
def test_cwnd_does_not_grow_while_the_peer_window_limits_the_flight(congestion, grows):
    # 2.6.32 tcp_is_cwnd_limited: with 20 segments in flight (the peer's window) and a cwnd of
    # 100 the sender is not cwnd-limited, and bictcp_cong_avoid returns before any increase.
    env = simpy.Environment()
    snd = _cubic_sender(env, congestion, peer_window=20)
    assert snd.flight == 20 * MSS
    _rounds(env, snd, 5, window=20)
    assert (snd.cwnd > 100 * MSS) == grows


def test_cubic_timeout_keeps_ssthresh_on_a_repeated_timeout():
    # tcp_enter_loss: a new ssthresh (717/1024 of cwnd) at the first timeout; a second one with
    # no ACK progress in between keeps it (icsk_retransmits > 0), where the model's Reno
    # recomputes it from what is in flight.
    env = simpy.Environment()
    snd = _cubic_sender(env, "cubic")
    snd._on_timeout()
    assert snd.ssthresh == 70 * MSS and snd.cwnd == MSS and snd._cu_last_max == 0
    snd._on_timeout()
    assert snd.ssthresh == 70 * MSS
