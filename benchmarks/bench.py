"""Speed benchmark: simulated seconds per wall second and SimPy events per simulated second.

Runs the default experiment (and the receive one) for a fixed simulated time, one replication,
and prints the figures. Not a test: machines are shared and noisy; compare figures from one run.
Usage: python benchmarks/bench.py [--sim-s 0.5] [experiment ...]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from sim.compose import compose_checked
from sim.builder import build

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")


class CountingEnv:
    """Counts processed events by wrapping Environment.step."""

    def __init__(self, env):
        self.n = 0
        original = env.step

        def step():
            self.n += 1
            original()
        env.step = step


def bench(experiment: str, sim_s: float) -> dict:
    cfg = compose_checked(CONFIG_DIR, [f"experiment={experiment}"])
    model = build(cfg, 0)
    counter = CountingEnv(model.env)
    t0 = time.perf_counter()
    model.env.run(until=sim_s)
    wall = time.perf_counter() - t0
    return {"experiment": experiment, "sim_s": sim_s, "wall_s": wall,
            "sim_s_per_wall_s": sim_s / wall, "events_per_sim_s": counter.n / sim_s,
            "events_per_wall_s": counter.n / wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-s", type=float, default=0.5)
    ap.add_argument("experiments", nargs="*",
                    default=["e35_tx_single_vm", "e35_rx_single_vm", "e35_tx_small_socket"])
    args = ap.parse_args()
    print(f"{'experiment':<24} {'sim_s/wall_s':>12} {'events/sim_s':>14} {'events/wall_s':>14}")
    for name in args.experiments:
        r = bench(name, args.sim_s)
        print(f"{name:<24} {r['sim_s_per_wall_s']:>12.3f} {r['events_per_sim_s']:>14.0f} "
              f"{r['events_per_wall_s']:>14.0f}")


if __name__ == "__main__":
    main()
