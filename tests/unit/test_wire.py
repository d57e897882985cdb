"""models.wire.Link: serialisation at line rate plus propagation, and the MTU range.

Serialisation time = wire bytes x 8 / line rate: one 1500-byte packet = 1538 bytes = 1.2304 us
at 10 Gbps; arrival = serialisation end + propagation delay. The link is booked in virtual time:
one SimPy event per burst, its arrival.
"""
import pytest
import simpy

from models.base import DATA, Burst, Stats
from models.wire import Link, LinkParams


def test_serialisation_then_propagation():
    env, stats = simpy.Environment(), Stats()
    link = Link(env, "l", LinkParams(line_rate_gbps=10.0, mtu_bytes=1500, propagation_ns=50), stats)
    log = []
    link.deliver = lambda b: log.append(("arrive", env.now, b.packets))
    tso = Burst(DATA, 0, 2 * 1448, 2, 1, 52, 1448)   # one TSO packet of two frames
    assert link.transmit(tso) == pytest.approx(2 * 1.2304e-6)   # when the last bit leaves
    st = stats.stages["l"]
    assert (st.arrived_bytes, st.queued_bytes) == (2 * 1538, 2 * 1538)  # booked: in flight
    env.run()
    assert log == [("arrive", pytest.approx(2 * 1.2304e-6 + 50e-9), 2)]  # as frames after the wire
    assert link.busy_s == pytest.approx(2 * 1.2304e-6)
    assert (st.arrived_bytes, st.departed_bytes, st.queued_bytes) == (2 * 1538, 2 * 1538, 0)
    assert st.conservation_error() == (0, 0)


def test_faster_link_is_proportionally_faster():
    env = simpy.Environment()
    params = LinkParams(line_rate_gbps=40.0, mtu_bytes=1500, propagation_ns=0)
    link = Link(env, "l", params, Stats())
    assert link.transmit(Burst(DATA, 0, 1448, 1, 1, 52, 1448)) == pytest.approx(1.2304e-6 / 4)


def test_bursts_queue_in_virtual_time_from_when_the_link_frees_or_later():
    """Booked back to back: each starts when the one before has left, or at the sender's
    ``not_before_s`` if that is later (a burst whose first frame is not ready yet)."""
    env = simpy.Environment()
    link = Link(env, "l", LinkParams(line_rate_gbps=10.0, propagation_ns=50), Stats())
    arrivals = []
    link.deliver = lambda b: arrivals.append(env.now)
    frame = Burst(DATA, 0, 1448, 1, 1, 52, 1448)
    T = 1.2304e-6
    ends = [link.transmit(frame), link.transmit(frame), link.transmit(frame, not_before_s=5 * T)]
    assert ends == [pytest.approx(T), pytest.approx(2 * T), pytest.approx(6 * T)]
    assert link.free_at_s == ends[-1]
    env.run()
    assert arrivals == [pytest.approx(e + 50e-9) for e in ends]


def test_one_event_per_burst_at_arrival():
    """N bursts over an idle link: N SimPy events (the arrivals), none for serialisation."""
    env = simpy.Environment()
    link = Link(env, "l", LinkParams(line_rate_gbps=10.0, propagation_ns=50), Stats())
    got = []
    link.deliver = got.append
    for k in range(20):
        link.transmit(Burst(DATA, 0, 45 * 1448, 45, 1, 52, 1448, seq=k))
    assert len(env._queue) == 20
    events = 0
    while env.peek() < float("inf"):
        env.step()
        events += 1
    assert events == 20 and [b.seq for b in got] == list(range(20))
    assert all(b.packets == 45 for b in got)  # the TSO segment arrives as 45 frames


@pytest.mark.parametrize("mtu", [575, 9217])
def test_mtu_out_of_range_is_rejected(mtu):
    with pytest.raises(ValueError, match=f"mtu_bytes={mtu}"):
        LinkParams(mtu_bytes=mtu)


def test_rate_must_be_positive():
    with pytest.raises(ValueError, match="line_rate_gbps"):
        LinkParams(line_rate_gbps=0)
