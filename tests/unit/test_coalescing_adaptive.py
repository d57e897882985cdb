"""models.coalescing, adaptive mode: ixgbe's dynamic interrupt throttling.

At every interrupt the queue's throughput since the previous one (bytes per microsecond) moves
it between three latency classes with hysteresis (ixgbe_update_itr): lowest -> low above 10,
low -> bulk above 20, bulk -> low at or below 20, low -> lowest at or below 10; each class has a
timer (10, 50, 125 us: 100K, 20K, 8K interrupts/s) and the timer moves towards the class's by
ixgbe_set_itr's smoothing, new = 10 t c / (9 t + c) in interrupts/s = 0.9 timer + 0.1 target.
"""
import pytest
import simpy

from models.coalescing import (BULK, LOW, LOWEST, AdaptiveCoalescer, Coalescer,
                               CoalescingParams, class_timer_us, make_coalescer, next_class,
                               smoothed_timer_us, steady_class, steady_timer_us)

P = CoalescingParams(mode="adaptive", max_frames=10**6)


@pytest.mark.parametrize("current, rate, expected", [
    (LOWEST, 10.0, LOWEST), (LOWEST, 10.1, LOW), (LOWEST, 500, LOW),  # one step at a time
    (LOW, 10.0, LOWEST), (LOW, 15, LOW), (LOW, 20.0, LOW), (LOW, 20.1, BULK),
    (BULK, 20.1, BULK), (BULK, 20.0, LOW), (BULK, 0.0, LOW)])
def test_latency_class_transitions_with_hysteresis(current, rate, expected):
    assert next_class(current, rate, P) == expected


def test_class_timers():
    assert [class_timer_us(c, P) for c in (LOWEST, LOW, BULK)] == [10.0, 50.0, 125.0]


@pytest.mark.parametrize("current, target", [(50.0, 125.0), (125.0, 10.0), (10.0, 50.0)])
def test_smoothing_is_ixgbes_formula_in_interrupts_per_second(current, target):
    cur, tgt = 1e6 / current, 1e6 / target
    ixgbe = 10 * tgt * cur / (9 * tgt + cur)
    assert 1e6 / smoothed_timer_us(current, target) == pytest.approx(ixgbe)
    assert smoothed_timer_us(target, target) == target


def drive(params: CoalescingParams, gap_us: float, frame_bytes: int, until_us: float):
    """One frame every ``gap_us``, its bytes counted as the handler would take them."""
    env = simpy.Environment()
    fired = []
    co = make_coalescer(env, params, lambda: fired.append(env.now))

    def src():
        while True:
            yield env.timeout(gap_us * 1e-6)
            co.notify(1)
            co.account(1, frame_bytes)
    env.process(src())
    env.run(until=until_us * 1e-6)
    return co, fired


def test_heavy_traffic_converges_to_bulk_and_its_interrupt_rate():
    # 1500-byte frames every 1.2 us: ~1250 bytes/us, far above 20
    co, fired = drive(P, gap_us=1.2, frame_bytes=1500, until_us=20_000)
    assert co.latency_class == BULK
    assert co.timer_us == pytest.approx(125.0, abs=0.5)
    late = [t for t in fired if t > 0.015]
    rate = (len(late) - 1) / (late[-1] - late[0])
    assert rate == pytest.approx(1e6 / 125.0, rel=0.02)   # ~8K interrupts/s


def test_light_traffic_converges_to_lowest_latency():
    # 100-byte frames every 50 us: 2 bytes/us
    co, _ = drive(P, gap_us=50, frame_bytes=100, until_us=200_000)
    assert co.latency_class == LOWEST
    assert co.timer_us == pytest.approx(10.0, abs=0.5)


def test_adaptive_starts_in_low_at_20k_interrupts_per_second():
    co = make_coalescer(simpy.Environment(), P, lambda: None)
    assert isinstance(co, AdaptiveCoalescer)
    assert (co.latency_class, co.timer_us) == (LOW, 50.0)


def test_static_mode_keeps_its_timer():
    params = CoalescingParams(mode="static", timer_us=30, max_frames=10**6)
    co, fired = drive(params, gap_us=1.2, frame_bytes=1500, until_us=1000)
    assert type(co) is Coalescer and co.timer_us == 30
    assert len(fired) == pytest.approx(1000 / 30, abs=2)


@pytest.mark.parametrize("kw, key", [({"mode": "dynamic"}, "mode"),
                                     ({"adaptive_low_timer_us": 5.0}, "adaptive_\\*_timer_us"),
                                     ({"adaptive_low_bytes_per_us": 30.0},
                                      "adaptive_\\*_bytes_per_us")])
def test_bad_parameters_name_the_key(kw, key):
    with pytest.raises(ValueError, match=key):
        CoalescingParams(**kw)


@pytest.mark.parametrize("rate, expected", [(0.0, LOWEST), (10.0, LOWEST), (10.5, LOW),
                                            (20.0, LOW), (20.5, BULK), (1e9, BULK)])
def test_steady_class_is_the_fixed_point_of_the_transitions(rate, expected):
    """The steady-state engines read an adaptive queue's timer from the class a constant rate
    settles in, whatever the class it starts from."""
    p = CoalescingParams(mode="adaptive")
    assert steady_class(rate, p) == expected
    for start in (LOWEST, LOW, BULK):
        c = start
        for _ in range(5):
            c = next_class(c, rate, p)
        assert c == expected
    assert steady_timer_us(rate, p) == class_timer_us(expected, p)
