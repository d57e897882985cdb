"""models.coalescing.Coalescer: the interrupt fires on the frame threshold or on the timer.

The first frame after an interrupt arms a timer of timer_us; the interrupt fires when it expires
or as soon as max_frames frames are pending, whichever comes first; a fired interrupt disarms the
timer. Exact (event, env.now) sequences.
"""
import pytest
import simpy

from models.coalescing import Coalescer, CoalescingParams


def setup(timer_us: float, max_frames: int):
    env = simpy.Environment()
    fired = []
    params = CoalescingParams(timer_us=timer_us, max_frames=max_frames)
    co = Coalescer(env, params, lambda: fired.append(env.now))
    return env, co, fired


def frames_at(env, co, times_us, n=1):
    def src():
        for t in times_us:
            yield env.timeout(t * 1e-6 - env.now)
            co.notify(n)
    env.process(src())


def test_fires_on_threshold_and_the_disarmed_timer_stays_silent():
    env, co, fired = setup(timer_us=10, max_frames=4)
    frames_at(env, co, [0, 1, 2, 3])
    env.run(until=50e-6)
    assert fired == [pytest.approx(3e-6)]
    assert co.interrupts == 1 and co.pending_frames == 0


def test_fires_on_timer_armed_by_the_first_frame():
    env, co, fired = setup(timer_us=10, max_frames=64)
    frames_at(env, co, [0, 3, 6, 12, 25])
    env.run(until=50e-6)
    # 0 arms -> fires at 10 (3 frames); 12 arms -> fires at 22; 25 arms -> fires at 35.
    assert fired == [pytest.approx(t * 1e-6) for t in (10, 22, 35)]


def test_a_burst_of_frames_counts_every_frame():
    env, co, fired = setup(timer_us=10, max_frames=64)
    frames_at(env, co, [0, 1], n=40)
    env.run(until=50e-6)
    assert fired == [pytest.approx(1e-6)]


def test_zero_timer_fires_at_once():
    env, co, fired = setup(timer_us=0, max_frames=64)
    frames_at(env, co, [0, 1, 2])
    env.run(until=50e-6)
    assert fired == [pytest.approx(t * 1e-6) for t in (0, 1, 2)]


def test_params_are_validated():
    with pytest.raises(ValueError, match="max_frames"):
        CoalescingParams(timer_us=10, max_frames=0)
    with pytest.raises(ValueError, match="timer_us"):
        CoalescingParams(timer_us=-1, max_frames=4)
