"""Benchmark of T03's cataloguing of many inputs with a slow summarizer (issue 15).

Run: `make bench-catalog` (or `.venv/bin/python bench/catalog.py`). A home of N assets, the
builtin Executor's summaries delayed by `--latency` seconds each (standing for a model's
summary call), catalogued by the real `refresh_inputs`, which summarises SUMMARY_WORKERS files
at once. For comparison, the same summaries one at a time would take (N + 1) × latency
(computed, not measured). Median of REPEATS, each on a fresh home.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from app.team import build_collaborators  # noqa: E402
from multiverse.config import load_runtime_mapping  # noqa: E402
from multiverse.home import Home, init_home  # noqa: E402
from orchestrator.perform import SUMMARY_WORKERS, refresh_inputs  # noqa: E402


class SlowSummaries:
    """The builtin Executor, each summary taking `latency` seconds more (a model's call)."""

    def __init__(self, executor: Any, latency: float) -> None:
        self._executor = executor
        self.latency = latency

    def __getattr__(self, name: str) -> Any:
        return getattr(self._executor, name)

    def summarize(self, path: Path) -> str:
        time.sleep(self.latency)
        return str(self._executor.summarize(path))


def catalogue_seconds(assets: int, latency: float) -> float:
    """Seconds for T03 to catalogue a fresh home of `assets` files."""
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder))
        init_home(home)
        for n in range(assets):
            text = f"# Quarterly note {n}\n\nRevenue grew {n % 17} % in region {n % 5}.\n"
            (home.assets / f"note_{n:03d}.md").write_text(text, encoding="utf-8")
        crew = build_collaborators(home, load_runtime_mapping(home.root), os.environ, console=print)
        crew.executor = SlowSummaries(crew.executor, latency)  # type: ignore[assignment]
        started = time.perf_counter()
        count = refresh_inputs(crew)
        took = time.perf_counter() - started
        assert count == assets + 1, count  # and guidelines/mcp_list.md
        return took


def main() -> None:
    """Print the results as markdown."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--assets", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    times = [catalogue_seconds(args.assets, args.latency) for _ in range(args.repeats)]
    serial = (args.assets + 1) * args.latency
    print("| measure | median | target |")
    print("| --- | ---: | ---: |")
    print(
        f"| {args.assets} assets catalogued, {args.latency} s a summary, "
        f"{SUMMARY_WORKERS} at once | {statistics.median(times):.2f} s | ≤ 2 s |"
    )
    print(f"| one at a time, computed: {args.assets + 1} × {args.latency} s | {serial:.2f} s | |")


if __name__ == "__main__":
    main()
