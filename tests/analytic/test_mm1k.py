"""M/M/1/K blocking on a models.base.Ring: tail drop counts the arrivals a full system refuses.

A Ring of capacity K (unit frames), Poisson single-frame arrivals (rate lambda) offered to it,
one server that claims the head burst, serves it for an exponential time (rate mu) and releases
it. The ring counts the frame in service as holding its slot, so the system holds at most K:
M/M/1/K with K = capacity. Theory (Gross & Harris, Fundamentals of Queueing Theory, 2.5):
blocking probability P_K = (1 - rho) rho^K / (1 - rho^(K+1)), and by PASTA the fraction of
arrivals dropped equals P_K. Measured: dropped / arrived from ring.stats, per batch of arrivals;
the theory must lie within the 95% batch-means t-interval widened by 1.5x.
"""
import numpy as np
import pytest
import simpy

from models.base import DATA, Burst, Ring, Stats

MU = 1.0
N = 200_000
BATCHES = 20


def blocking(rho: float, k: int) -> float:
    return (1 - rho) * rho ** k / (1 - rho ** (k + 1))


@pytest.mark.parametrize("rho,k", [(0.8, 4), (1.2, 6)])
def test_mm1k_blocking_fraction(rho, k, ci):
    gen = np.random.default_rng(777)
    gaps = gen.exponential(1 / (rho * MU), N)
    services = gen.exponential(1 / MU, N)
    env, stats = simpy.Environment(), Stats()
    ring = Ring("q", k, stats)
    wake = [env.event()]

    def server():
        i = 0
        while True:
            if not len(ring):
                wake[0] = env.event()
                yield wake[0]
            burst = ring.claim()
            yield env.timeout(services[i])
            i += 1
            ring.release([burst])

    per_batch = []

    def arrivals():
        st, last = stats.stages["q"], (0, 0)
        for n in range(N):
            yield env.timeout(gaps[n])
            if ring.offer(Burst(DATA, 0, 1448, 1, 1, 52, 1448)) is not None \
                    and not wake[0].triggered:
                wake[0].succeed()
            if (n + 1) % (N // BATCHES) == 0:
                now = (st.arrived_frames, st.total_dropped_frames())
                per_batch.append((now[1] - last[1]) / (now[0] - last[0]))
                last = now
    env.process(server())
    env.process(arrivals())
    env.run()

    st = stats.stages["q"]
    assert st.arrived_frames == N
    assert st.conservation_error() == (0, 0)
    mean, half = ci(per_batch, n_batches=BATCHES)  # equal batches: mean = dropped / N
    theory = blocking(rho, k)
    assert abs(mean - theory) <= 1.5 * half, (mean, half, theory)
    assert half < 0.15 * theory
