"""The LangGraph anchor of issue 15: our master loop and LangGraph's, measured side by side.

Run: `.venv/bin/python bench/langgraph_anchor.py [--rounds 5] [--past 0,10000]`. Creates once
LangGraph's own environment, bench/.venv-langgraph, from bench/requirements-langgraph.txt
(never a dependency of the project). Then, per number of past runs, `rounds` interleaved rounds,
each running every side once in its own fresh process, all homes and databases in one folder
on one disk (never tmpfs):
- the master loop (bench/master_loop_side.py: bench/orchestrator.py's one_run, once): 4 phases
  × 3 stages × 4 tasks with instant no-op roles, driven by the real StepRunner. With past runs,
  as the daemon keeps a home: the newest 100 final runs live, the rest archived; and, for
  comparison, the same with all of them live;
- LangGraph sync (bench/langgraph_side.py): the same 65 steps as a StateGraph of no-op nodes,
  SqliteSaver on a file, durability="sync", the results in a reducer channel; past runs are
  finished threads in the same database;
- LangGraph + DeltaChannel: the same, the results in a `DeltaChannel`.
Each side times its loop in-process (no start-up, no imports), after one warm-up run of its own
in a scratch home or database. Then a separate counting pass, never timed, runs each side once
under strace and counts the fsync/fdatasync calls of its loop alone. Prints a markdown table:
medians over the rounds, ours ÷ each LangGraph side, fsyncs per run, and one fsync'd small
write's cost on the same disk, measured in the same processes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from side_env import side_python  # bench/side_env.py: the script's folder is on sys.path

BENCH = Path(__file__).resolve().parent
LANGGRAPH_VENV = BENCH / ".venv-langgraph"
REQUIREMENTS = BENCH / "requirements-langgraph.txt"
STRACE = "/usr/bin/strace"
OURS, OURS_LIVE, SYNC, DELTA = "ours", "ours-live", "sync", "delta"
LABELS = {
    OURS: "master loop (ours)",
    OURS_LIVE: "master loop (ours), all past runs live",
    SYNC: "LangGraph sync",
    DELTA: "LangGraph + DeltaChannel",
}
SYNC_CALL = re.compile(r"\b(fsync|fdatasync)\(")
MARK_CALL = re.compile(r"\bchdir\(")


def langgraph_python() -> Path:
    """LangGraph's interpreter, in its own environment (bench/side_env.py)."""
    return side_python(LANGGRAPH_VENV, REQUIREMENTS, "LangGraph")


def file_system(path: Path) -> tuple[str, str]:
    """The device and type of the file system holding `path` (Linux: /proc/mounts)."""
    best, found = "", ("?", "?")
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return found
    resolved = str(path.resolve())
    for line in mounts:
        device, point, kind = line.split()[:3]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, found = point, (device, kind)
    return found


def work_folder(base: Path | None) -> Path:
    """A fresh folder on a real disk: the temporary folder, unless it is in memory."""
    candidates = [base] if base else [Path(tempfile.gettempdir()), BENCH.parent.parent]
    for candidate in candidates:
        if file_system(candidate)[1] not in ("tmpfs", "ramfs"):
            return Path(tempfile.mkdtemp(prefix="langgraph-anchor-", dir=candidate))
    sys.exit(f"{candidates[-1]} is in memory: give --dir a folder on a disk")


@dataclass
class Anchor:
    """Where and with what each side runs."""

    folder: Path
    langgraph: Path
    shape: str

    def command(self, side: str, past: int, tag: str, mark: bool) -> list[str]:
        """The command running one side once (`tag` names a fresh database at 0 past runs)."""
        marking = ["--mark", str(self.folder)] if mark else []
        if side in (OURS, OURS_LIVE):
            live = ["--all-live"] if side == OURS_LIVE else []
            script = BENCH / "master_loop_side.py"
            return [sys.executable, str(script), "--past", str(past), *live, *marking]
        channel = "plain" if side == SYNC else "delta"
        return [
            str(self.langgraph),
            str(BENCH / "langgraph_side.py"),
            "run",
            "--db",
            str(self.database(channel, past, tag)),
            "--channel",
            channel,
            "--shape",
            self.shape,
            *marking,
        ]

    def database(self, channel: str, past: int, tag: str) -> Path:
        """LangGraph's database: one per channel seeded once for past runs, else a fresh one."""
        name = f"lg-{self.shape}-{channel}-{past}" + (f"-{tag}" if not past else "")
        return self.folder / f"{name}.sqlite"

    def run(self, command: Sequence[str]) -> dict[str, Any]:
        """One side's process, its JSON answer (our homes' temporary folders go in ours/)."""
        env = {**os.environ, "TMPDIR": str(self.folder / "ours")}
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=self.folder)
        if done.returncode:
            sys.exit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
        answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return answer

    def seed(self, past: int) -> dict[str, dict[str, Any]]:
        """LangGraph's two databases holding `past` finished threads each."""
        seeded = {}
        for channel in ("plain", "delta"):
            db = self.database(channel, past, "")
            command = [str(self.langgraph), str(BENCH / "langgraph_side.py"), "seed"]
            command += ["--db", str(db), "--channel", channel, "--shape", self.shape]
            seeded[channel] = self.run([*command, "--past", str(past)])
        return seeded

    def fsyncs(self, side: str, past: int) -> str:
        """fsync and fdatasync calls of one side's timed loop, counted under strace (untimed)."""
        trace = self.folder / f"strace-{side}-{past}.txt"
        strace = [STRACE, "-f", "-qq", "--seccomp-bpf", "-e", "trace=fsync,fdatasync,chdir"]
        self.run([*strace, "-o", str(trace), *self.command(side, past, "count", mark=True)])
        lines = trace.read_text().splitlines()
        marks = [n for n, line in enumerate(lines) if MARK_CALL.search(line)]
        if len(marks) != 2:
            return "?"  # the loop's start and end could not be told apart
        calls = Counter(
            found.group(1)
            for line in lines[marks[0] : marks[1]]
            if (found := SYNC_CALL.search(line))
        )
        return " + ".join(f"{n} {call}" for call, n in sorted(calls.items())) or "0"


@dataclass
class Sample:
    """Every round's answer of one side, and its counted fsyncs."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    fsyncs: str = "?"

    def median(self, key: str) -> float:
        """The median of one measure over the rounds."""
        return statistics.median(float(answer[key]) for answer in self.answers)

    def spread(self, key: str) -> str:
        """The lowest and highest of one measure over the rounds."""
        values = [float(answer[key]) for answer in self.answers]
        return f"{min(values):.0f}–{max(values):.0f}"


def sides_for(past: int) -> list[str]:
    """The sides measured at `past` past runs (all live differs from ours only with past runs)."""
    return [OURS, *([OURS_LIVE] if past else []), SYNC, DELTA]


def measure(anchor: Anchor, past: int, rounds: int) -> tuple[dict[str, Sample], dict[str, Any]]:
    """Interleaved rounds of every side at `past` past runs, then the counting pass."""
    seeded = anchor.seed(past) if past else {}
    samples = {side: Sample() for side in sides_for(past)}
    for number in range(rounds):
        for side, sample in samples.items():
            tag = f"r{number}"
            sample.answers.append(anchor.run(anchor.command(side, past, tag, mark=False)))
            _drop_fresh_databases(anchor, past)
        print(f"{past:,} past runs: round {number + 1}/{rounds} done", file=sys.stderr)
    for side, sample in samples.items():
        sample.fsyncs = anchor.fsyncs(side, past)
        _drop_fresh_databases(anchor, past)
    for db in anchor.folder.glob(f"lg-*-{past}.sqlite*"):
        db.unlink()  # a seeded database takes gigabytes at 10,000 threads
    return samples, seeded


def _drop_fresh_databases(anchor: Anchor, past: int) -> None:
    """Remove the fresh databases of runs at 0 past runs (each round has its own)."""
    if not past:
        for db in anchor.folder.glob("lg-*-0-*.sqlite*"):
            db.unlink()


def ratio(ours: float, theirs: float) -> str:
    """Ours ÷ theirs, as the issue writes it."""
    return f"{ours / theirs:.2f}×"


def print_table(results: dict[int, tuple[dict[str, Sample], dict[str, Any]]]) -> None:
    """The markdown table: medians over the rounds, the ratios, the fsyncs."""
    print(
        "| past runs | side | median ms | range | ours ÷ LangGraph sync | ours ÷ + Delta"
        " | fsyncs per run | our durable writes |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for past, (samples, _) in results.items():
        sync, delta = samples[SYNC].median("ms"), samples[DELTA].median("ms")
        for side, sample in samples.items():
            ms = sample.median("ms")
            ours = side in (OURS, OURS_LIVE)
            mine = (ratio(ms, sync), ratio(ms, delta)) if ours else ("", "")
            writes = f"{sample.median('loop_writes'):.0f}" if ours else ""
            print(
                f"| {past:,} | {LABELS[side]} | {ms:.1f} | {sample.spread('ms')} | {mine[0]} "
                f"| {mine[1]} | {sample.fsyncs} | {writes} |"
            )


def print_context(results: dict[int, tuple[dict[str, Sample], dict[str, Any]]]) -> None:
    """What the table rests on: the disk's cost now, the seeding, LangGraph's checkpoints."""
    costs = [a["fsync_write_ms"] for s, _ in results.values() for a in s[OURS].answers]
    print(
        f"\none fsync'd small write on this disk (in our side's processes, after each loop): "
        f"median {statistics.median(costs):.2f} ms, {min(costs):.2f}–{max(costs):.2f} ms"
    )
    for past, (samples, seeded) in results.items():
        lg = samples[SYNC].answers[0]
        line = (
            f"{past:,} past runs: ours {samples[OURS].answers[0]['steps']} steps; LangGraph "
            f"{lg['steps']} super-steps, {lg['checkpoints']} checkpoints and {lg['writes']} "
            f"write rows a run (PRAGMA synchronous={lg['synchronous']})"
        )
        if past:
            ours = samples[OURS]
            line += (
                f"; seeding, not timed: ours {ours.median('seed_s'):.1f} s for {past:,} runs, "
                f"then archiving {ours.answers[0]['archived']:,} of them "
                f"{ours.median('archive_s'):.1f} s ({ours.answers[0]['live']} live); LangGraph "
                + ", ".join(
                    f"{channel} {s['seconds']:.1f} s ({s['threads']:,} threads, "
                    f"{s['db_mb']:,.0f} MB)"
                    for channel, s in seeded.items()
                )
            )
        print(line)


def print_targets(results: dict[int, tuple[dict[str, Sample], dict[str, Any]]]) -> None:
    """The target that stands (issue 23: ≤ 1.3× LangGraph sync at 0 past runs; the earlier
    0.5× DeltaChannel target is withdrawn with the write-behind it drove), where measured."""
    checks = [(0, SYNC, 1.3, "LangGraph sync at 0 past runs")]
    for past, side, target, name in checks:
        if past in results:
            samples = results[past][0]
            value = samples[OURS].median("ms") / samples[side].median("ms")
            verdict = "✓" if value <= target else "✗"
            print(f"target: master loop ≤ {target}× {name}: {value:.2f}× {verdict}")


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--past", default="0,10000", help="past-run counts, comma-separated")
    parser.add_argument(
        "--shape",
        choices=["loop", "chain"],
        default="loop",
        help="LangGraph graph's shape (langgraph_side.py; chain: ~6 GB at 10,000)",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the folder goes (a disk)")
    parser.add_argument("--keep", action="store_true", help="keep the folder")
    args = parser.parse_args()
    pasts = [int(n) for n in args.past.split(",")]
    anchor = Anchor(work_folder(args.dir), langgraph_python(), args.shape)
    (anchor.folder / "ours").mkdir()
    try:
        results = {past: measure(anchor, past, args.rounds) for past in pasts}
    finally:
        if not args.keep:
            shutil.rmtree(anchor.folder, ignore_errors=True)
    device, kind = file_system(anchor.folder.parent)
    first = next(iter(results.values()))[0][SYNC].answers[0]
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; {first['langgraph']}, "
        f"graph shape {args.shape!r}; folder {anchor.folder} ({kind} on {device}); "
        f"{args.rounds} interleaved rounds, each side a fresh process\n"
    )
    print_table(results)
    print_context(results)
    print_targets(results)


if __name__ == "__main__":
    main()
