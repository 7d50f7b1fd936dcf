"""Benchmark of the shell sandbox's start-up (issue 25): `true` run directly, the anchor, and
inside the bubblewrap sandbox `run_shell_command` makes (`executor.tools.shell.sandboxed`).

Run: `make bench-sandbox` (or `.venv/bin/python bench/sandbox.py`). Median of REPEATS each,
interleaved, after a warm-up.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from executor.tools.shell import sandboxed  # noqa: E402


def main() -> None:
    """Print the benchmark's table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        runs = {"alone": ["true"], "sandboxed": sandboxed(["true"], workspace)}
        seconds: dict[str, list[float]] = {name: [] for name in runs}
        for argv in runs.values():
            subprocess.run(argv, cwd=workspace, check=True)  # warm-up
        for _ in range(args.repeats):
            for name, argv in runs.items():
                began = time.perf_counter()
                subprocess.run(argv, cwd=workspace, check=True)
                seconds[name].append(time.perf_counter() - began)
    alone, boxed = (statistics.median(seconds[name]) * 1000 for name in runs)
    print(f"| `true` alone (anchor) | in the sandbox | start-up cost |  ({args.repeats} each)")
    print("| ---: | ---: | ---: |")
    print(f"| {alone:.1f} ms | {boxed:.1f} ms | {boxed - alone:.1f} ms |")


if __name__ == "__main__":
    main()
