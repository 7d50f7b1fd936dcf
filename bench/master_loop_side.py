"""Our side of bench/langgraph_anchor.py: ONE master loop, timed in a fresh process.

Run in the project's environment (the anchor runs it; by hand:
`.venv/bin/python bench/master_loop_side.py --past 10000`). It is bench/orchestrator.py's
`one_run`, loaded by path and run once, in a home built in a fresh temporary folder (TMPDIR: the
anchor puts it beside LangGraph's databases) with `--past` COMPLETED past runs. As the daemon
keeps a home (DaemonConfig.live_final_runs, default 100), all but the newest `--live` final runs
are then archived by the real `Archiver` (db/archive/<YYYY-MM-DDTHH>/, runs/archive/), unless
`--all-live`; seeding and archiving are timed apart, never in the loop. Prints JSON: the master
loop's milliseconds (as bench/orchestrator.py times it), its steps and durable writes, the whole
run's, the seeding's and archiving's seconds, and one fsync'd small write's cost on this disk
just after. Like LangGraph's side, it first makes one whole warm-up run in a scratch home, so
that neither side's timed run pays a process's first-run costs (`--no-warm-up`: it does). With
`--mark DIR` it calls chdir(DIR) when the master loop's timer starts and after it stops, so
that `strace -e trace=fsync,fdatasync,chdir` can count that loop's fsyncs alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from multiverse.atomic import durable_writes  # noqa: E402
from multiverse.store import compact_tombstones  # noqa: E402
from orchestrator.archiving import Archiver, due_for_archive  # noqa: E402
from orchestrator.crew import Collaborators  # noqa: E402
from orchestrator.decide import Step, StepKind  # noqa: E402
from orchestrator.perform import StepRunner  # noqa: E402


def _bench_module(name: str) -> ModuleType:
    """A sibling module of bench/, loaded by path (bench/ is not on sys.path, see above)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", _HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# bench/orchestrator.py: one_run and its helpers (Any: two of its globals are replaced below).
bench: Any = _bench_module("orchestrator")


@dataclass
class Report:
    """What one invocation measured, printed as JSON."""

    past: int = 0
    live: int = 0
    archived: int = 0
    seed_s: float = 0.0
    archive_s: float = 0.0
    ms: float = 0.0
    steps: int = 0
    loop_writes: int = 0
    whole_ms: float = 0.0
    whole_writes: int = 0
    fsync_write_ms: float = 0.0


class Marks:
    """The master loop's start and end: a chdir for strace, the durable-write count."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.writes_at_start: int | None = None

    def start(self) -> None:
        """Called when one_run starts its master-loop timer."""
        self.writes_at_start = durable_writes()
        if self.folder is not None:
            os.chdir(self.folder)

    def end(self) -> int:
        """Called once one_run has returned; the loop's durable writes."""
        if self.folder is not None:
            os.chdir(self.folder)
        assert self.writes_at_start is not None, "the master loop never started"
        return durable_writes() - self.writes_at_start


def marking_runner(marks: Marks) -> type[StepRunner]:
    """A StepRunner that marks the moment one_run starts the master loop's timer."""

    class MarkingRunner(StepRunner):
        def advance(self, run_id: str) -> Step | None:
            step = super().advance(run_id)
            # The same test as one_run's: the first stage plan starts the master loop.
            if (
                step is not None
                and step.kind is StepKind.PLAN_STAGES
                and marks.writes_at_start is None
            ):
                marks.start()
            return step

    return MarkingRunner


def seed_then_archive(report: Report, live: int | None) -> Callable[[Collaborators, int], None]:
    """bench/orchestrator.py's seeding, then the daemon's archiving down to `live` final runs."""
    seed_history = bench._seed_history

    def seed(crew: Collaborators, size: int) -> None:
        if not size:
            return  # nothing to seed: one_run's home at 0 past runs, untouched
        began = time.perf_counter()
        seed_history(crew, size)
        rows = crew.process_runs.rows()
        for row in rows:  # a past run has its folder, which archiving moves
            (crew.home.runs / row.run_id).mkdir(parents=True, exist_ok=True)
        report.seed_s = time.perf_counter() - began
        report.live = len(rows)
        due = [] if live is None else due_for_archive(rows, datetime.now(UTC), 0, live)
        if not due:
            return
        began = time.perf_counter()
        Archiver(crew.home, crew.store, lambda home: None).archive(due)
        # Steady state: a daemon's archiving of these runs was over an hour ago, so its
        # tombstones are compacted away (the daemon keeps only the last hour's).
        crew.forget_tombstoned()
        compact_tombstones(crew.home.deleted_rows, time.time() + 1)
        report.archive_s = time.perf_counter() - began
        report.archived = len(due)
        report.live = len(crew.process_runs.rows())

    return seed


def measure(past: int, live: int | None, mark: Path | None) -> Report:
    """Build the home and time one master loop, with bench/orchestrator.py's one_run."""
    report = Report(past=past)
    marks = Marks(mark)
    # one_run looks these up as globals of its module: the home is archived after seeding,
    # and the loop's start marked, without copying one_run.
    bench._seed_history = seed_then_archive(report, live)
    bench.StepRunner = marking_runner(marks)
    timing = bench.one_run(past)
    report.loop_writes = marks.end()
    report.ms, report.steps = timing.master_ms, timing.master_steps
    report.whole_ms, report.whole_writes = timing.whole_ms, timing.writes
    report.fsync_write_ms = bench.fsynced_write_ms()
    return report


def main() -> None:
    """Time one master loop and print the measures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--past", type=int, default=0)
    parser.add_argument("--live", type=int, default=100, help="final runs the daemon keeps live")
    parser.add_argument("--all-live", action="store_true", help="archive nothing")
    parser.add_argument("--mark", type=Path, default=None)
    parser.add_argument(
        "--no-warm-up", action="store_true", help="time the process's first run (no warm-up run)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as logs:
        bench._log_as_the_daemon(Path(logs))
        if not args.no_warm_up:
            # As LangGraph's side does: one whole run in a scratch home first pays what only a
            # process's first run pays (lazy imports such as tabulate's, first validations).
            bench.one_run(0)
        report = measure(args.past, None if args.all_live else args.live, args.mark)
    print(json.dumps(asdict(report)))


if __name__ == "__main__":
    main()
