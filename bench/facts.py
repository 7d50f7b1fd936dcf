"""Benchmark of computed facts over a long daily series: what a table's facts cost a step.

Run: `.venv/bin/python bench/facts.py` (or `make bench-facts`); `--baseline DIR` times a checkout
of an older commit the same way, in the same run. A deterministic CSV of `--days` daily rows (a
date, a region, a measure) is written to a temporary folder. Timed, median of REPEATS after a
warm-up, each in a fresh process of the code measured:
- one fact (the day of the highest revenue) of a table no step has read yet (a fresh copy);
- ten facts of one table, as a step computing a table's standard facts asks for them.
The anchor, measured in the same run: pandas alone reading the file and finding the same day.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import median_ms  # bench/timing.py: the script's folder is on sys.path

_HERE = Path(__file__).resolve().parent
KINDS = ("max", "min", "first", "last", "mean", "change", "growth", "cagr", "max", "min")


def write_table(path: Path, days: int) -> None:
    """A CSV of `days` daily rows from 2000-01-01: date, region, revenue."""
    rng = random.Random(7)
    start = datetime.date(2000, 1, 1)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["date", "region", "revenue"])
        for day in range(days):
            writer.writerow([(start + datetime.timedelta(days=day)).isoformat(),
                             rng.choice(["North", "South"]), round(rng.random() * 1000, 2)])


def measure(folder: Path, repeats: int) -> dict[str, float]:
    """Milliseconds of one fact of a fresh table and of ten facts of one table (this process)."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
    from multiverse.tabular import ComputeQuery, compute

    def query(kind: str, file: str) -> ComputeQuery:
        return ComputeQuery(kind=kind, file=file, measure="revenue", frequency="day")

    def one_fresh(number: int) -> None:
        name = f"copy{number + 1}.csv"
        shutil.copy(folder / "daily.csv", folder / name)
        compute(query("max", name), root=folder)

    def ten_of_one(_number: int) -> None:
        for kind in KINDS:
            compute(query(kind, "daily.csv"), root=folder)

    return {"one": median_ms(one_fresh, repeats), "ten": median_ms(ten_of_one, repeats)}


def anchor(folder: Path, repeats: int) -> float:
    """Milliseconds of pandas alone reading the file and finding the day of the highest value."""
    import pandas as pd

    def once(_number: int) -> None:
        frame = pd.read_csv(folder / "daily.csv")
        frame.groupby("date")["revenue"].sum().idxmax()

    return median_ms(once, repeats)


def in_process_of(code: Path | None, folder: Path, repeats: int) -> dict[str, float]:
    """`measure` in a fresh interpreter importing the project from `code` (None: this one)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure", str(folder),
         "--repeats", str(repeats)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Print the benchmark's table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", default="3650,18250")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout of an older commit")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.repeats)))
        return
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, median of {args.repeats} after a warm-up\n")
    print("| daily rows | one fact, fresh table | ten facts, one table | "
          + ("baseline: one | baseline: ten | " if args.baseline else "")
          + "anchor: pandas read + max |")
    print("| ---: | ---: | ---: | " + ("---: | ---: | " if args.baseline else "") + "---: |")
    for days in (int(part) for part in args.days.split(",")):
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            write_table(folder / "daily.csv", days)
            now = in_process_of(None, folder, args.repeats)
            before = in_process_of(args.baseline, folder, args.repeats) if args.baseline else {}
            pandas = anchor(folder, args.repeats)
        shown = [f"{now['one']:,.0f} ms", f"{now['ten']:,.0f} ms"]
        if before:
            shown += [f"{before['one']:,.0f} ms", f"{before['ten']:,.0f} ms"]
        print(f"| {days:,} | " + " | ".join(shown) + f" | {pandas:,.0f} ms |")


if __name__ == "__main__":
    main()
