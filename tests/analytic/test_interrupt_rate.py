"""Interrupt rate under a coalescing timer, and under a frame threshold.

With a steady stream of one frame every dt << T and max_frames out of reach, the first frame
after each interrupt arms the timer, so interrupts come every T + (at most) dt:
rate = 1 / T within dt / T. With the timer out of reach, they come every max_frames frames:
rate = frame rate / max_frames.
"""
import pytest
import simpy

from models.coalescing import Coalescer, CoalescingParams


def interrupt_rate(timer_us: float, max_frames: int, dt_s: float, duration_s: float) -> float:
    env = simpy.Environment()
    co = Coalescer(env, CoalescingParams(timer_us=timer_us, max_frames=max_frames), lambda: None)

    def frames():
        while True:
            co.notify(1)
            yield env.timeout(dt_s)
    env.process(frames())
    env.run(until=duration_s)
    return co.interrupts / duration_s


@pytest.mark.parametrize("timer_us,dt_us", [(10, 0.1), (50, 0.37), (125, 1.0)])
def test_timer_sets_the_interrupt_rate(timer_us, dt_us):
    rate = interrupt_rate(timer_us, 10**9, dt_us * 1e-6, 0.02)
    assert rate * timer_us * 1e-6 == pytest.approx(1.0, rel=0.03)


def test_threshold_sets_the_interrupt_rate():
    rate = interrupt_rate(1e6, 64, 1e-6, 0.02)   # 1M frames/s, timer 1 s
    assert rate == pytest.approx(1e6 / 64, rel=0.01)
