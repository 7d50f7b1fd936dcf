"""How the test suite's wall time depends on the number of xdist workers (`make test`'s `-n auto`).

Run: `.venv/bin/python bench/suite_workers.py --workers 2,4,3 --rounds 2` (or `make
bench-suite-workers`; about five minutes a run). Each round runs the whole suite once per worker
count, interleaved, so a machine whose speed drifts during the session weighs on every count
alike; the anchor is one worker per core, `-n auto` before tests/conftest.py raised it. Each run
is `make suite`'s command (`pytest -q -n auto --dist worksteal`, bytecode written) with the cache
plugin off and PYTEST_XDIST_AUTO_NUM_WORKERS set; its wall time and the CPU of the whole process
tree are printed, then each count's median.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_suite(workers: int) -> tuple[float, float, str]:
    """One run of the whole suite with `workers` workers: wall seconds, CPU seconds, last line."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    env["PYTEST_XDIST_AUTO_NUM_WORKERS"] = str(workers)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "auto", "--dist", "worksteal",
         "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines()
    return wall, cpu, lines[-1] if lines else f"exit {done.returncode}"


def main() -> None:
    """Run the suite per worker count, interleaved, and print each count's median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2,4", help="worker counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each count")
    args = parser.parse_args()
    counts = [int(count) for count in args.workers.split(",")]
    print(f"cores: {len(os.sched_getaffinity(0))}; counts {counts}; {args.rounds} rounds")
    walls: dict[int, list[float]] = {count: [] for count in counts}
    cpus: dict[int, list[float]] = {count: [] for count in counts}
    for round_number in range(args.rounds):
        for count in counts:
            wall, cpu, said = run_suite(count)
            walls[count].append(wall)
            cpus[count].append(cpu)
            print(f"round {round_number + 1}, -n {count}: {wall:.0f} s wall, {cpu:.0f} s CPU "
                  f"({said})", flush=True)  # fmt: skip
    for count in counts:
        print(f"-n {count}: median {statistics.median(walls[count]):.0f} s wall, "
              f"{statistics.median(cpus[count]):.0f} s CPU over {len(walls[count])} runs")


if __name__ == "__main__":
    main()
