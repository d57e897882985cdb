"""Applications as callbacks (models.workloads.base Writer/Reader) and their wake-up order.

A blocked writer or reader is a callback registered on its socket, not a SimPy event; when the
stack takes in a delivered batch (``StackHost.deliver``) the wake-ups it causes are held and
handed back to the device's poller, which runs them once its next pass is queued: the woken
application's task queues behind the stack's output and the handler's next poll, the order a
process resumed by an event had. 1 GHz clock, no jitter, no world switch: 1000 cycles = 1 us.
"""
import numpy as np
import simpy

from models import costs
from models.base import ACK, DATA, Burst, CycleCost, Ring, RingPoller, Stats
from models.cpu import Context, Core, CpuParams
from models.guest import OsStackParams, StackHost
from models.tcp import TcpParams
from models.workloads.base import Reader, Writer

MSS = 1448
STACK = OsStackParams(send_call=CycleCost(1000.0, 0.0, 0.0), recv_call=CycleCost(1000.0, 0.0, 0.0),
                      tx_segment=CycleCost(2500.0, 200.0, 0.0), rx_data=CycleCost(0.0, 4000.0, 0.0),
                      rx_ack=CycleCost(0.0, 1500.0, 0.0), tx_ack=CycleCost(800.0, 1200.0, 0.0))


def us(env) -> float:
    return round(env.now * 1e6, 9)


class Host(StackHost):
    """One context for everything (like a one-vCPU VM); the device logs what it is handed."""

    tso = False

    def __init__(self, env):
        super().__init__(env, "h", 0, STACK, TcpParams())
        ideal = CpuParams(1, 1, 1e9, context_switch_cycles=0.0, jitter_cv=0.0)
        self.cpu = Context(env, "cpu", Core(env, 0, 0, ideal), rng=np.random.default_rng(0))
        self.log: list[tuple] = []

    def app_context(self, flow):
        return self.cpu

    def send_down(self, burst, terms):
        self.cpu.then(terms, lambda: self.log.append((us(self.env), "sent", burst.kind)))


def pushed(flow: int, seq: int = 0) -> Burst:
    return Burst(DATA, flow, MSS, 1, 1, 52, MSS, seq=seq, psh=True)


def test_a_woken_reader_queues_behind_the_output_and_the_next_poll_of_the_pass_that_woke_it():
    env = simpy.Environment()
    h = Host(env)
    rcv = h.open_receiver(0, 1, mss_bytes=MSS, rcvbuf_bytes=64 * MSS)
    ring = Ring("rx", 64, Stats(), unit="frames")

    def cost(batch, is_interrupt):
        h.log.append((us(env), "pass", len(batch)))
        return {costs.STACK_RX: 1000.0}, 0, 0
    poller = RingPoller(ring, h.cpu, cost, h.deliver)
    reads = []
    Reader(h, rcv, MSS).read_some(None, lambda n: reads.append((us(env), n)))
    ring.offer(pushed(0))
    poller.kick()                                  # pass 1: 0 .. 1 us
    env.timeout(0.5e-6).callbacks.append(lambda _e: ring.offer(pushed(0, seq=MSS)))
    env.run(until=1e-3)
    # On the one context: pass 1 (claimed at 0, runs 0 .. 1); its ACK (1 .. 3); pass 2, which
    # the poller claimed at 1 (3 .. 4); the reader woken by pass 1, one recv() call of 1 us
    # (4 .. 5); pass 2's ACK (5 .. 7). The ACK tasks cost tx_ack = 2000 cycles each.
    assert h.log == [(0.0, "pass", 1), (1.0, "pass", 1), (3.0, "sent", ACK), (7.0, "sent", ACK)]
    assert reads == [(5.0, MSS)]                   # what pass 1 delivered


def test_outside_deliver_a_wake_up_runs_at_once_and_deliver_hands_back_what_it_held():
    env = simpy.Environment()
    h = Host(env)
    woken = []
    h.notify(lambda: woken.append("now"))
    assert woken == ["now"]
    rcv = h.open_receiver(0, 1, mss_bytes=MSS, rcvbuf_bytes=64 * MSS)
    rcv.on_readable(lambda: woken.append("reader"))
    assert h.deliver([Burst(ACK, 5, 0, 1, 1, 52, MSS)]) is None   # nobody woken: nothing back
    wake = h.deliver([pushed(0)])
    assert woken == ["now"] and wake is not None                  # held, not run
    wake()
    assert woken == ["now", "reader"]


def test_a_blocked_writer_and_reader_are_callbacks_not_events():
    """Registering a blocked writer or reader schedules nothing; only the tasks they run do."""
    env = simpy.Environment()
    h = Host(env)
    rcv = h.open_receiver(0, 1, mss_bytes=MSS, rcvbuf_bytes=64 * MSS)
    snd = h.open_sender(1, 1, mss_bytes=MSS, seg_max_bytes=MSS, sndbuf_bytes=2 * MSS,
                        peer_window_bytes=0)
    snd.write(snd.space())  # the send buffer is full (and the window closed: nothing leaves)
    queued = len(env._queue)
    Writer(h, snd, MSS).write_some(None, snd.write_seq, MSS, lambda n: None)
    Reader(h, rcv, MSS).read_some(None, lambda n: None)
    assert len(env._queue) == queued and snd.space() == 0 and rcv.readable == 0
    assert snd._space_waiter is not None and rcv._reader is not None


def test_a_writer_wakes_at_its_threshold_and_writes_the_free_space_in_tasks_of_64_calls():
    env = simpy.Environment()
    h = Host(env)
    snd = h.open_sender(0, 1, mss_bytes=MSS, seg_max_bytes=MSS, sndbuf_bytes=64 * MSS,
                        peer_window_bytes=0)
    snd.write(snd.space())                           # full; the window closed
    done = []
    Writer(h, snd, 100).write_some(None, snd.write_seq, 10 * MSS,
                                   lambda n: done.append((us(env), n)))
    opened = Burst(ACK, 0, 0, 1, 1, 52, MSS, ack=0, window_bytes=0)
    snd.snd_nxt = snd.snd_una = 0
    snd.on_ack(opened)                               # frees nothing: still blocked
    assert h.cpu.tasks == 0 and not done
    snd.snd_nxt = 10 * MSS                           # pretend 10 MSS were sent ...
    snd.on_ack(Burst(ACK, 0, 0, 1, 1, 52, MSS, ack=10 * MSS, window_bytes=0))  # ... and ACKed
    env.run(until=1e-3)
    free = 10 * MSS                                  # 14480 bytes in 100-byte calls: 145 calls
    assert done == [(145.0, free)]                   # 1 us per call, nothing per byte
    assert h.cpu.tasks == 3                          # 64 + 64 + 17 calls
