"""M/M/1 and M/D/1 on one Context: the CPU model is an exact FIFO single server.

One models.cpu.Context on one Core (no jitter, no switch cost), Poisson arrivals of rate lambda,
service of rate mu (cycles drawn by the test, from its own seeded generator). Theory, mean
sojourn time W (Kleinrock, Queueing Systems vol. 1, eq. 3.26 and the Pollaczek-Khinchine mean):
  M/M/1 (exponential service):   W = 1 / (mu - lambda)
  M/D/1 (deterministic service): W = 1/mu + rho / (2 mu (1 - rho)),   rho = lambda / mu.
The simulated mean comes with a 95% batch-means t-interval (20 batches); the theory must lie
inside that interval widened by 1.5x (one fixed-seed run; the widening covers the residual
correlation between batches, not a biased server), and the interval must be tight (< 10% of W).
"""
import numpy as np
import pytest
import simpy

from models.cpu import Context, Core, CpuParams

CLOCK_HZ = 1e9
MU = 1e6          # services per second (mean 1000 cycles = 1 us)
N = 100_000       # customers after the warm-up
WARMUP = 2_000


def simulate(lam: float, cycles: np.ndarray, gaps: np.ndarray):
    env = simpy.Environment()
    core = Core(env, 0, 0, CpuParams(sockets=1, cores_per_socket=1, clock_hz=CLOCK_HZ,
                                     context_switch_cycles=0, jitter_cv=0))
    ctx = Context(env, "server", core, rng=np.random.default_rng(0))
    sojourn = np.full(len(gaps), np.nan)

    def arrivals():
        for i in range(len(gaps)):
            yield env.timeout(gaps[i])
            t0 = env.now
            ctx.execute(cycles[i]).callbacks.append(
                lambda _e, i=i, t0=t0: sojourn.__setitem__(i, env.now - t0))
    env.process(arrivals())
    env.run()
    return env, ctx, sojourn


@pytest.mark.parametrize("rho", [0.5, 0.7])
def test_mm1_mean_sojourn(rho, ci):
    lam = rho * MU
    gen = np.random.default_rng(20240611)
    gaps = gen.exponential(1 / lam, N + WARMUP)
    cycles = gen.exponential(CLOCK_HZ / MU, N + WARMUP)
    env, ctx, sojourn = simulate(lam, cycles, gaps)

    assert not np.isnan(sojourn).any()
    mean, half = ci(sojourn[WARMUP:], n_batches=20)
    theory = 1 / (MU - lam)
    assert abs(mean - theory) <= 1.5 * half, (mean, half, theory)
    assert half < 0.1 * theory
    # The server is busy for exactly the sampled service times; utilisation ~ rho.
    assert ctx.busy_time_s() == pytest.approx(cycles.sum() / CLOCK_HZ, rel=1e-9)
    assert ctx.busy_time_s() / env.now == pytest.approx(rho, rel=0.03)


def test_md1_mean_sojourn(ci):
    rho = 0.7
    lam = rho * MU
    gaps = np.random.default_rng(99).exponential(1 / lam, N + WARMUP)
    env, ctx, sojourn = simulate(lam, np.full(N + WARMUP, CLOCK_HZ / MU), gaps)
    mean, half = ci(sojourn[WARMUP:], n_batches=20)
    theory = 1 / MU + rho / (2 * MU * (1 - rho))
    assert abs(mean - theory) <= 1.5 * half, (mean, half, theory)
    assert half < 0.1 * theory
    assert sojourn.min() == pytest.approx(1 / MU)   # nobody is served faster than 1/mu
