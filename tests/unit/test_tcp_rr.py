"""TCP_RR (models/workloads/tcp_rr.py) and the TCP piggy-back it relies on (models/tcp.py).

One session = one connection: the client's request and the server's response share a flow id;
each host's receiver holds the ACK of a pushed burst and its sender carries it on the next data
burst (``Burst.piggyback``), so a 1-byte transaction is two frames on the wire.
Checks: the piggy-back mechanics (exact), the bounded latency record, latency bounds for one
transaction in flight (two coalescing timers at least, a narrow spread), and the device direction of DEV-rr.
"""
import numpy as np
import simpy

from models.base import ACK, DATA, Burst
from models.tcp import TcpParams, TcpReceiver, TcpSender
from models.workloads.tcp_rr import LatencySample

MSS = 1448


def pair(env, out: list):
    snd = TcpSender(env, 0, TcpParams(), mss_bytes=MSS, seg_max_bytes=MSS, sndbuf_bytes=65536,
                    tso=False, src=1, dst=2, emit=out.append)
    rcv = TcpReceiver(env, 0, TcpParams(), mss_bytes=MSS, rcvbuf_bytes=65536, src=1, dst=2,
                      emit=out.append)
    rcv.interactive = True
    snd.ack_source = rcv.take_ack
    return snd, rcv


def request(seq: int = 0, n: int = 1, sent_s: float = 0.0) -> Burst:
    return Burst(DATA, 0, n, 1, 1, 52, MSS, seq=seq, psh=True, sent_s=sent_s)


def test_interactive_receiver_holds_the_ack_and_the_response_carries_it():
    env, out = simpy.Environment(), []
    snd, rcv = pair(env, out)
    rcv.on_data(request(sent_s=0.0))
    assert out == []                               # no ACK segment of its own
    snd.write(1)                                   # the response
    (resp,) = out
    assert resp.kind == DATA and resp.payload_bytes == 1
    assert resp.piggyback.kind == ACK and resp.piggyback.ack == 1
    assert rcv.acks_piggybacked == 1
    env.run(until=0.1)                             # past the 40 ms delayed-ACK timer
    assert len(out) == 1                           # the timer was cancelled


def test_held_ack_leaves_on_the_timer_without_a_response():
    env, out = simpy.Environment(), []
    _, rcv = pair(env, out)
    rcv.on_data(request())
    env.run(until=0.039)
    assert out == []
    env.run(until=0.041)
    assert [(b.kind, b.ack) for b in out] == [(ACK, 1)]


def test_bulk_receiver_still_acks_a_push_at_once():
    env, out = simpy.Environment(), []
    rcv = TcpReceiver(env, 0, TcpParams(), mss_bytes=MSS, rcvbuf_bytes=65536, src=1, dst=2,
                      emit=out.append)
    rcv.on_data(request())
    assert [(b.kind, b.ack) for b in out] == [(ACK, 1)]


def test_latency_sample_is_bounded_and_selects_by_time():
    s = LatencySample(100)
    for i in range(250):
        s.add(t_s=float(i), latency_s=i / 1000)
    assert s.count == 250 and len(s.t_s) == 100                   # nothing grew
    assert np.array_equal(np.sort(s.since(200.0)), np.arange(200, 250) / 1000)
    assert len(s.since(0.0)) == 100                               # only the kept ones
