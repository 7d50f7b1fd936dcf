"""Benchmark of issue 15, "flat cost with history": what one run costs as the history grows.

Run: `.venv/bin/python bench/history_scale.py [--past 0,10000,100000] [--repeats 3]`. Measures:
(a) at each number N of past runs, in a home as the daemon keeps it (the newest
    `live_final_runs` final runs live, the rest archived by the daemon's own policy and
    Archiver), one whole run (bench/orchestrator.py's `one_run`: intake, Phase 0 and the
    4 × 3 × 4 master loop, instant roles, driven by the real StepRunner), each in a fresh process
    on a fresh copy of the seeded home: the bytes it wrote (/proc/self/io `wchar`, bytes passed
    to write(), and `write_bytes`, bytes sent to the disk; plus the final size of the files it
    created or replaced) and the process's peak RSS; then the archive the daemon does after it
    (the run that leaves the live window), measured alike. Targets: ≤ 1 MB and ≤ 120 MB at
    100,000 past runs.
(b) the master loop's cost per task (first stage plan to COMPLETED, divided by the tasks) for
    a plan of 4 × 3 × 4 = 48 tasks and a big one (4 phases × 10 stages × 12 tasks = 480), at
    0 past runs, in this process. Target: the big plan's ≤ 1.2 × the small one's. Above it,
    the big loop is profiled against the small one (cProfile) and the functions whose cost
    per task grows are printed.
Seeded homes are built once per N (bench/status.py's `build`: N COMPLETED runs with an
instruction, two catalog rows, a request and a timeline each, and 10 live runs) and copied for
each repeat; runs/archive/ (the archived folders, only listed by a run) is shared by a link.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import importlib.util
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from multiverse.config import DaemonConfig  # noqa: E402
from multiverse.home import Home, init_home  # noqa: E402
from multiverse.models import FINAL_STATUSES  # noqa: E402
from multiverse.store import compact_tombstones  # noqa: E402
from orchestrator.archiving import Archiver, due_for_archive  # noqa: E402
from orchestrator.perform import refresh_inputs  # noqa: E402


def _load(name: str, file: str) -> ModuleType:
    """A module of bench/, loaded by path under `name` (bench/ is not on sys.path, see above)."""
    spec = importlib.util.spec_from_file_location(name, _HERE / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench_run: Any = _load("bench_orchestrator", "orchestrator.py")  # its globals are patched below
make_crew = bench_run._crew
bench_status = bench_run._bench_module("status")
NoopPlanner = bench_run.noop_roles.NoopPlanner
SMALL = (bench_run.noop_roles.STAGES, bench_run.noop_roles.TASKS)
BIG = (10, 12)
PHASES = 4  # the phase template's (db/templates/default_phases.md keeps four)
MB = 1_000_000


# -- seeding ----------------------------------------------------------------------------------


def seed(root: Path, past: int) -> float:
    """A home at `root` with `past` past runs as the daemon leaves them; seconds it took."""
    began = time.perf_counter()
    if not past:
        init_home(Home(root))
        return time.perf_counter() - began
    home = bench_status.build(root, past)
    crew = make_crew(home)
    refresh_inputs(crew)  # a home that served runs has catalogued its inputs
    live = DaemonConfig().live_final_runs
    due = due_for_archive(crew.process_runs.rows(), datetime.now(UTC), 0, live)
    Archiver(home, crew.store, lambda home: None).archive(due)
    # The history was archived long ago: the daemon has compacted its tombstones since.
    compact_tombstones(home.deleted_rows, time.time())
    return time.perf_counter() - began


def templates(folder: Path, pasts: list[int]) -> dict[int, Path]:
    """The seeded home of each N under `folder`, built unless a previous call finished it."""
    homes = {}
    for past in pasts:
        root = folder / f"past-{past}" / "home"
        done = root.parent / "seeded"
        if not done.exists():
            shutil.rmtree(root.parent, ignore_errors=True)
            root.parent.mkdir(parents=True)
            took = seed(root, past)
            done.write_text(f"{took:.1f}\n", encoding="utf-8")
            print(f"seeded {past:,} past runs in {took:.1f} s", file=sys.stderr, flush=True)
        homes[past] = root
    return homes


def copy_home(template: Path, target: Path) -> Home:
    """A copy of the seeded home; runs/archive/ (a run only lists it) links to the template's."""
    archive = template / "runs" / "archive"

    def skip(folder: str, names: list[str]) -> list[str]:
        return ["archive"] if Path(folder) == archive.parent else []

    shutil.copytree(template, target, symlinks=True, ignore=skip)
    if archive.is_dir():
        os.symlink(archive, target / "runs" / "archive")
    return Home(target)


def disk(home: Home) -> dict[str, float]:
    """Sizes (MB) of the live tables, the archive shards and the tombstones; archived folders."""
    sizes = {f"db/{path.name}": path.stat().st_size / MB for path in sorted(home.db.glob("*.md"))}
    shards = [path for path in home.archive_db.rglob("*") if path.is_file()]
    sizes["db/archive/ (all shards)"] = sum(path.stat().st_size for path in shards) / MB
    biggest = max(shards, key=lambda path: path.stat().st_size, default=None)
    if biggest is not None:
        name = home.relative(biggest)
        sizes[f"biggest shard table {name}"] = biggest.stat().st_size / MB
    tombstones = home.deleted_rows
    sizes[home.relative(tombstones)] = tombstones.stat().st_size / MB if tombstones.exists() else 0
    with contextlib.suppress(FileNotFoundError):
        sizes["runs/archive/ folders (count)"] = len(os.listdir(home.archive_runs))
    return sizes


# -- measuring one run in its own process (--one N) -------------------------------------------


def proc_io() -> dict[str, int]:
    """This process's I/O counters (empty where /proc/self/io is missing)."""
    try:
        lines = Path("/proc/self/io").read_text().splitlines()
    except OSError:
        return {}
    return {key: int(value) for key, value in (line.split(": ") for line in lines)}


def peak_rss_mb() -> float:
    """This process's peak resident set so far (VmHWM; not ru_maxrss, which a child started by
    vfork and exec inherits from its parent's)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class WriteTally:
    """Bytes passed to os.write (the project's atomic writes, tombstones, timelines) per file."""

    def __init__(self) -> None:
        self.by_file: dict[str, int] = defaultdict(int)
        self._write = os.write

    def __enter__(self) -> WriteTally:
        def write(fd: int, data: Any) -> int:
            written = self._write(fd, data)
            try:
                name = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                name = "?"
            self.by_file[_stable_name(name)] += written
            return written

        os.write = write
        return self

    def __exit__(self, *exc: object) -> None:
        os.write = self._write


def _stable_name(name: str) -> str:
    """The file an atomic write's temporary file replaces (`.NAME.PID-N.tmp` → NAME)."""
    folder, _, base = name.rpartition("/")
    if base.startswith(".") and base.endswith(".tmp"):
        base = base[1:].rsplit(".", 2)[0]
    return f"{folder}/{base}"


def files(root: Path) -> dict[str, tuple[int, int, int]]:
    """Path → (inode, mtime, size) of every file under root (links not followed)."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            stat = os.lstat(path)
            found[path] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return found


def _changed_bytes(before: dict[str, tuple[int, int, int]], root: Path) -> int:
    """Final size of the files under root created or replaced since `before`."""
    return sum(now[2] for path, now in files(root).items() if before.get(path) != now)


def _where(path: str, home: Home) -> str:
    """A written file's group: a live table, a shard, the tombstones, a run folder, the log."""
    relative = path.removeprefix(str(home.root) + "/")
    if relative == path:
        return "daemon log" if path.endswith("daemon.jsonl") else "outside the home"
    parts = relative.split("/")
    if parts[0] == "runs" and len(parts) > 2 and parts[1] != "archive":
        return "runs/<the run>/" + ("db/*.md" if parts[2] == "db" else "other files")
    return relative


def measure_one(template: Path, log: bool = True) -> dict[str, Any]:
    """One whole run on a copy of `template`, then the archive the daemon would do after it."""
    with tempfile.TemporaryDirectory() as folder:
        home = copy_home(template, Path(folder) / "home")
        if log:
            bench_run._log_as_the_daemon(Path(folder))
        # one_run makes its home in a temporary folder: here it is the seeded copy (init_home
        # leaves an existing home as it is; 0 past runs to seed).
        bench_run.tempfile = SimpleNamespace(
            TemporaryDirectory=lambda: contextlib.nullcontext(str(home.root))
        )
        # The daemon archives with the collaborators that served the run (one per daemon).
        crews: list[Any] = []

        def kept_crew(home: Home) -> Any:
            crews.append(make_crew(home))
            return crews[-1]

        bench_run._crew = kept_crew
        before = files(home.root)
        io_before = proc_io()
        with WriteTally() as tally:
            timing = bench_run.one_run(0)
        io_after = proc_io()
        rss_run = peak_rss_mb()
        result: dict[str, Any] = {
            "whole_ms": timing.whole_ms,
            "steps": timing.steps,
            "durable_writes": timing.writes,
            "rss_run_mb": rss_run,
            "replaced_mb": _changed_bytes(before, home.root) / MB,
            "io": {key: io_after[key] - io_before[key] for key in io_after},
            "tally": _grouped(tally.by_file, home),
        }
        # The daemon then archives the final run that left the live window and compacts the
        # tombstones (orchestrator/daemon.py `_start_archive`, `_archive`), with its warm store
        # and indexes, as they were brought up to date after the run (`warm_indexes`).
        (crew,) = crews
        crew.warm_indexes()
        live_final = DaemonConfig().live_final_runs
        rows = crew.process_runs.rows()
        due = due_for_archive(rows, datetime.now(UTC), 0, live_final)
        if not due:  # the batch the daemon archives once the window overflows by a quarter
            final = sorted(row.run_id for row in rows if row.status in FINAL_STATUSES)
            due = final[: live_final // 4 + 1]
        if home.archive_runs.is_symlink():  # the move must not land in the template
            home.archive_runs.unlink()
        before = files(home.root)
        io_before = proc_io()
        began = time.perf_counter()
        with WriteTally() as tally:
            archived = Archiver(home, crew.store, lambda home: None).archive(due).archived
            crew.forget_tombstoned()  # as the daemon does after each archive
        result["archive"] = {
            "runs": len(archived),
            "ms": (time.perf_counter() - began) * 1000,
            "io": {key: value - io_before[key] for key, value in proc_io().items()},
            "replaced_mb": _changed_bytes(before, home.root) / MB,
            "tally": _grouped(tally.by_file, home),
            "rss_mb": peak_rss_mb(),
        }
        return result


def _grouped(by_file: dict[str, int], home: Home) -> dict[str, int]:
    groups: dict[str, int] = defaultdict(int)
    for path, size in by_file.items():
        groups[_where(path, home)] += size
    return dict(groups)


def one_in_subprocess(template: Path) -> dict[str, Any]:
    """`measure_one` in a fresh process of this script (its own peak RSS)."""
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(template)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"--one {template} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- (b) the master loop per task --------------------------------------------------------------


@contextlib.contextmanager
def shape(stages: int, tasks: int) -> Iterator[None]:
    """one_run's roles plan `stages` stages per phase and `tasks` tasks per stage."""
    bench_run.NoopPlanner = functools.partial(NoopPlanner, stages=stages, tasks=tasks)
    try:
        yield
    finally:
        bench_run.NoopPlanner = NoopPlanner


def loop_ms(stages: int, tasks: int) -> tuple[float, int]:
    """Master-loop milliseconds and steps of one run of that shape, at 0 past runs."""
    with shape(stages, tasks):
        timing = bench_run.one_run(0)
        return timing.master_ms, timing.master_steps


def profile(stages: int, tasks: int) -> pstats.Stats:
    """cProfile of one whole run of that shape."""
    profiler = cProfile.Profile()
    with shape(stages, tasks):
        profiler.runcall(bench_run.one_run, 0)
    return pstats.Stats(profiler)


def growth(small: pstats.Stats, big: pstats.Stats, n_small: int, n_big: int) -> list[str]:
    """Lines for the functions whose cost per task grows most from the small plan to the big."""
    a: dict[Any, Any] = small.stats  # type: ignore[attr-defined]
    b: dict[Any, Any] = big.stats  # type: ignore[attr-defined]

    def where(key: tuple[str, int, str]) -> str:
        file, line, name = key
        file = file.removeprefix(str(_ROOT) + "/")
        if "site-packages/" in file:
            file = file.split("site-packages/")[1]
        return f"{name} {file}:{line}"

    lines = []
    for column, label in ((2, "self"), (3, "cumulative")):
        grown = []
        for key, stats in b.items():
            per_big = stats[column] / n_big * 1000
            per_small = a[key][column] / n_small * 1000 if key in a else 0.0
            calls_big, calls_small = stats[1] / n_big, (a[key][1] / n_small if key in a else 0)
            grown.append((per_big - per_small, per_small, per_big, calls_small, calls_big, key))
        grown.sort(key=lambda item: item[0], reverse=True)
        lines.append(f"growth of {label} time per task (ms/task at 48 → at {n_big}, calls/task):")
        lines += [
            f"  +{d:.3f} ms  {s:.3f} → {g:.3f}  calls {cs:.1f} → {cb:.1f}  {where(key)}"
            for d, s, g, cs, cb, key in grown[:12]
        ]
    return lines


# -- the report ---------------------------------------------------------------------------------


def main() -> None:
    """Print the results as markdown."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--past", default="0,10000,100000", help="numbers of past runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--homes", type=Path, help="keep the seeded homes here, and reuse them")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # internal: one measure
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one)))
        return
    pasts = [int(part) for part in args.past.split(",")]
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}\n")
    with contextlib.ExitStack() as stack:
        folder = args.homes or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        homes = templates(folder, pasts)
        report_history(homes, args.repeats)
        bench_run._log_as_the_daemon(Path(stack.enter_context(tempfile.TemporaryDirectory())))
        report_loop(args.repeats)


def report_history(homes: dict[int, Path], repeats: int) -> None:
    """(a): bytes written and peak RSS of one whole run at each N, and the home's sizes."""
    found = {
        past: [one_in_subprocess(home) for _ in range(repeats)] for past, home in homes.items()
    }

    def med(past: int, pick: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(pick(result) for result in found[past])

    print(f"(a) one whole run in a fresh process, median of {repeats}:\n")
    print(
        "| past runs | whole run | steps | wchar | write_bytes | files created or replaced "
        "| peak RSS | then: the daemon's next archive batch: runs, wchar, write_bytes, RSS, ms "
        "| wchar per run with its share of the batch |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for past in homes:
        runs = found[past][0]["archive"]["runs"]
        share = med(past, lambda r: r["archive"]["io"].get("wchar", 0)) / max(runs, 1)
        archive = (
            "none due"
            if not runs
            else (
                f"{runs}, "
                f"{med(past, lambda r: r['archive']['io'].get('wchar', 0)) / MB:.2f} MB, "
                f"{med(past, lambda r: r['archive']['io'].get('write_bytes', 0)) / MB:.2f} MB, "
                f"{med(past, lambda r: r['archive']['rss_mb']):.0f} MB, "
                f"{med(past, lambda r: r['archive']['ms']):.0f} ms"
            )
        )
        print(
            f"| {past:,} | {med(past, lambda r: r['whole_ms']):.0f} ms "
            f"| {found[past][0]['steps']} "
            f"| {med(past, lambda r: r['io'].get('wchar', 0)) / MB:.2f} MB "
            f"| {med(past, lambda r: r['io'].get('write_bytes', 0)) / MB:.2f} MB "
            f"| {med(past, lambda r: r['replaced_mb']):.2f} MB "
            f"| {med(past, lambda r: r['rss_run_mb']):.0f} MB | {archive} "
            f"| {(med(past, lambda r: r['io'].get('wchar', 0)) + share) / MB:.2f} MB |"
        )
    print(
        "\ntargets at 100,000 past runs: ≤ 1 MB written per whole run, RSS ≤ 120 MB. The past "
        "runs are bench/status.py's, one every 7 s from 2026-10-01: ~514 share an hour's "
        "shard, whose tables an archive batch rewrites.\n"
    )
    print("the home before the run (MB; last row: a count):\n")
    sizes = {past: disk(Home(root)) for past, root in homes.items()}
    names = list(dict.fromkeys(name for past in sorted(homes)[::-1] for name in sizes[past]))
    print("| | " + " | ".join(f"{past:,} past" for past in homes) + " |")
    print("| --- |" + " ---: |" * len(homes))
    for name in names:
        cells = [sizes[past].get(name) for past in homes]
        shown = ["" if cell is None else f"{cell:,.2f}".removesuffix(".00") for cell in cells]
        print(f"| {name} | " + " | ".join(shown) + " |")
    biggest = max(homes)
    for label, pick in (("the run", lambda r: r["tally"]), ("the archive", _archive_tally)):
        tally: dict[str, int] = pick(found[biggest][0])
        total = sum(tally.values())
        print(
            f"\nwhat {label} passed to os.write at {biggest:,} past runs (first repeat, "
            f"{total / MB:.2f} MB; the rest of wchar is the log and file objects):"
        )
        for name, size in sorted(tally.items(), key=lambda item: -item[1])[:8]:
            print(f"  {size / MB:8.3f} MB  {name}")


def _archive_tally(result: dict[str, Any]) -> dict[str, int]:
    tally: dict[str, int] = result["archive"]["tally"]
    return tally


def report_loop(repeats: int) -> None:
    """(b): master-loop milliseconds per task, 48 tasks against the big plan."""
    small_n, big_n = PHASES * SMALL[0] * SMALL[1], PHASES * BIG[0] * BIG[1]
    loop_ms(*SMALL)  # warm-up: what only a first run pays (imports, model builds)
    found: dict[tuple[int, int], list[tuple[float, int]]] = {SMALL: [], BIG: []}
    for _ in range(repeats):  # interleaved, so that the machine's drift hits both alike
        for plan in found:
            found[plan].append(loop_ms(*plan))
    print(f"\n(b) master loop (first stage plan to COMPLETED), 0 past runs, median of {repeats}:\n")
    print("| plan | tasks | steps | master loop | per task | per step |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    per_task = {}
    for (stages, tasks), results in found.items():
        count, steps = PHASES * stages * tasks, results[0][1]
        loop = statistics.median(ms for ms, _ in results)
        per_task[stages, tasks] = loop / count
        print(
            f"| 4 phases × {stages} stages × {tasks} tasks | {count} | {steps} | {loop:.0f} ms "
            f"| {loop / count:.2f} ms | {loop / steps:.2f} ms |"
        )
    ratio = per_task[BIG] / per_task[SMALL]
    print(f"| per task, {big_n} against {small_n} | | | | {ratio:.2f} × (target ≤ 1.2) | |")
    if ratio > 1.2:
        print(f"\nprofile (cProfile of one whole run of each plan; {big_n} against {small_n}):")
        print("\n".join(growth(profile(*SMALL), profile(*BIG), small_n, big_n)))


if __name__ == "__main__":
    main()
