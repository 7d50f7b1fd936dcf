"""Benchmark of the catalog summary of a large CSV (issue 25: a 50 MB file summarised in at
most 10 s on the 2-core machine).

Run: `make bench-large-csv` (or `.venv/bin/python bench/large_csv.py`). A deterministic CSV of
`--megabytes` MB (dates, two label columns, three measures) is written to a temporary folder;
the builtin Executor's summary of it (`summarize_path`: the whole profile, every row counted)
is timed, and, as the anchor measured in the same run, pandas reading the same file alone
(`pandas.read_csv`, no profile). Median of REPEATS after a warm-up.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import platform
import random
import sys
import tempfile
from pathlib import Path

from timing import median_ms  # bench/timing.py: the script's folder is on sys.path

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from executor.builtin.sources import summarize_path  # noqa: E402


def write_table(path: Path, megabytes: float) -> int:
    """A CSV of about `megabytes` MB of sales rows; returns its row count."""
    rng = random.Random(1)
    regions = ["North", "South", "East", "West", "Central"]
    products = [f"P{n}" for n in range(50)]
    start = datetime.date(2000, 1, 1)
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["date", "region", "product", "units", "revenue", "price"])
        while handle.tell() < megabytes * 1_000_000:
            for _ in range(10_000):
                day = start + datetime.timedelta(days=rng.randint(0, 8000))
                writer.writerow([day.isoformat(), rng.choice(regions), rng.choice(products),
                                 rng.randint(1, 500), round(rng.random() * 10_000, 2),
                                 round(rng.random() * 100, 2)])  # fmt: skip
                rows += 1
    return rows


def main() -> None:
    """Print the benchmark's table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=float, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import pandas as pd

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sales.csv"
        rows = write_table(path, args.megabytes)
        size = path.stat().st_size / 1e6
        summary = median_ms(lambda _: summarize_path(path), args.repeats) / 1000
        anchor = median_ms(lambda _: pd.read_csv(path), args.repeats) / 1000
        said = summarize_path(path)
    print(f"Machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; median of {args.repeats} after a warm-up.\n")  # fmt: skip
    print("| file | rows | catalog summary (s) | anchor: pandas.read_csv alone (s) |")
    print("| ---: | ---: | ---: | ---: |")
    print(f"| {size:,.1f} MB | {rows:,} | {summary:.2f} | {anchor:.2f} |")
    print(f"\nThe summary: {said[:200]}")


if __name__ == "__main__":
    main()
