"""models.wire.Link: serialisation at line rate plus propagation, and the MTU range.

Serialisation time = wire bytes x 8 / line rate: one 1500-byte packet = 1538 bytes = 1.2304 us
at 10 Gbps; arrival = serialisation end + propagation delay.
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
    link.transmit(tso).callbacks.append(lambda _e: log.append(("sent", env.now, None)))
    env.run()
    assert log == [("sent", pytest.approx(2 * 1.2304e-6), None),
                   ("arrive", pytest.approx(2 * 1.2304e-6 + 50e-9), 2)]  # as frames after the wire
    assert link.busy_s == pytest.approx(2 * 1.2304e-6)
    st = stats.stages["l"]
    assert (st.arrived_bytes, st.departed_bytes, st.queued_bytes) == (2 * 1538, 2 * 1538, 0)


def test_faster_link_is_proportionally_faster():
    env = simpy.Environment()
    params = LinkParams(line_rate_gbps=40.0, mtu_bytes=1500, propagation_ns=0)
    link = Link(env, "l", params, Stats())
    ev = link.transmit(Burst(DATA, 0, 1448, 1, 1, 52, 1448))
    env.run(ev)
    assert env.now == pytest.approx(1.2304e-6 / 4)


@pytest.mark.parametrize("mtu", [575, 9217])
def test_mtu_out_of_range_is_rejected(mtu):
    with pytest.raises(ValueError, match=f"mtu_bytes={mtu}"):
        LinkParams(mtu_bytes=mtu)


def test_rate_must_be_positive():
    with pytest.raises(ValueError, match="line_rate_gbps"):
        LinkParams(line_rate_gbps=0)
