"""Benchmark of the table store: read one row, update one row's status, append one row.

Run: `make bench-store` (or `.venv/bin/python bench/store.py`). Each figure is the median over
REPEATS timed operations after one warm-up, on tables of 100, 1,000 and 10,000 rows of
process_runs.md, with durable (fsync'd) writes, in a fresh temporary folder.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
from pathlib import Path

from timing import median_ms  # bench/timing.py: the script's folder is on sys.path

from multiverse.models import ProcessRun, Status
from multiverse.store import PROCESS_RUNS, Table, TableStore

SIZES = (100, 1_000, 10_000)


def _run_id(number: int) -> str:
    return f"run-20261121-{number // 1000:06d}-{number % 1000:03d}"


def _make_table(folder: Path, size: int) -> Table[ProcessRun]:
    table = TableStore().table(PROCESS_RUNS, folder / f"process_runs_{size}.md")
    table.insert(
        *[
            ProcessRun(
                run_id=_run_id(n),
                user_request=f"Analyse report {n} and write a two-page market-entry memo",
                status=Status.COMPLETED,
            )
            for n in range(size)
        ]
    )
    return table


def measure(size: int, repeats: int) -> dict[str, float]:
    """Median milliseconds of the three operations on a table of `size` rows."""
    with tempfile.TemporaryDirectory() as folder:
        table = _make_table(Path(folder), size)
        middle = _run_id(size // 2)
        statuses = [Status.FAILED, Status.COMPLETED]
        return {
            "read one row": median_ms(lambda _: table.get(middle), repeats),
            "update one status": median_ms(
                lambda n: table.update(middle, status=statuses[n % 2]), repeats
            ),
            "append one row": median_ms(
                lambda n: table.insert(
                    ProcessRun(run_id=_run_id(size + 1 + n), user_request="new request")
                ),
                repeats,
            ),
        }


def main() -> None:
    """Print a markdown table of the medians."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=25)
    args = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}; median of {args.repeats} runs, ms"
    )
    print("| rows | read one row | update one status | append one row |")
    print("| ---: | ---: | ---: | ---: |")
    for size in SIZES:
        result = measure(size, args.repeats)
        print(f"| {size:,} | " + " | ".join(f"{value:.2f}" for value in result.values()) + " |")


if __name__ == "__main__":
    main()
