"""The tables of bench/workers.py: what a case is, what one pass measured, and the markdown
printed from the passes (the machine, the times beside the model's floor, the daemon's CPU).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL_SECONDS = 1.0
TARGET = 0.6  # 2 workers ≤ 0.6 × the time of 1, for 8 runs (issue 28)


@dataclass(frozen=True)
class Case:
    """One way of doing the Executor's steps."""

    key: str  # also its queue
    label: str
    model: bool = True  # the slow model, else builtin
    workers: tuple[str, ...] = ()  # remote: the workers serving its queue
    netns: bool = False


@dataclass(frozen=True)
class Pass:
    """What one timed `start --once` did, and the CPU of a `start --once` with nothing to do."""

    wall: float
    cpu: float
    idle_cpu: float
    steps: int
    sent: int
    taken: Counter[str]
    model_calls: int
    step_cpu: list[tuple[float, float]]  # each Executor call: CPU in its thread, wall
    desk: float  # the rate desk threads' CPU


def machine() -> str:
    """The machine, the interpreter and the commit, as BENCHMARKS.md states them."""
    info = Path("/proc/cpuinfo").read_text()
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in info.splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = int(Path("/proc/meminfo").read_text().split()[1]) / (1 << 20)
    cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return (
        f"{cores} cores (nproc) {model}, {memory:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


def commit() -> str:
    """The checkout's commit, and whether tracked files differ from it (git is only read)."""
    git = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}  # no index refresh: another may be working

    def say(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO, env=git)
        return done.stdout.strip()

    dirty = say("status", "--porcelain", "--untracked-files=no")
    return say("rev-parse", "--short", "HEAD") + (" with uncommitted changes" if dirty else "")


def floor(case: Case, calls: float, args: argparse.Namespace) -> str:
    """The model's seconds alone, spread over the steps that run at once."""
    if not case.model:
        return "—"
    at_once = len(case.workers) or min(args.runs, args.parallel)
    return f"{calls * MODEL_SECONDS / at_once:.1f} s"


def report(
    args: argparse.Namespace,
    cases: list[Case],
    passes: dict[str, list[Pass]],
    notes: list[str],
    load: tuple[str, str],
) -> None:
    """The markdown tables."""
    median = {
        key: {
            name: statistics.median(getattr(p, name) for p in found)
            for name in ("wall", "cpu", "idle_cpu", "steps", "model_calls")
        }
        for key, found in passes.items()
    }
    print(f"machine: {machine()}; load average {load[0]} before, {load[1]} after")
    now = commit()
    print(
        f"commit: {args.commit}"
        + ("" if now == args.commit else f" at the start, {now} at the end")
    )
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"model: every answer after {MODEL_SECONDS:g} s; {args.runs} runs, "
        f"max_parallel_runs {args.parallel}; medians of {args.repeat} interleaved rounds\n"
    )
    one = median.get("one", {}).get("wall")
    print(
        f"| Executor steps done | {args.runs} runs: `start --once` | min–max | model's floor "
        "| × 1 worker |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    for case in cases:
        walls = [p.wall for p in passes[case.key]]
        ratio = f"{median[case.key]['wall'] / one:.2f}×" if one else ""
        print(
            f"| {case.label} | {median[case.key]['wall']:.1f} s | {min(walls):.1f}–"
            f"{max(walls):.1f} s | {floor(case, median[case.key]['model_calls'], args)} | {ratio} |"
        )
    cpu_table(cases, median)
    calls_table(cases, passes)
    print()
    if one and "two" in median:
        ratio = median["two"]["wall"] / one
        print(
            f"target: 2 workers ≤ {TARGET}× 1 worker, {args.runs} runs: {ratio:.2f}× "
            f"{'✓' if ratio <= TARGET else '✗'}"
        )
    for case in cases:
        if case.workers:
            taken = sum((p.taken for p in passes[case.key]), Counter[str]())
            shares = ", ".join(f"{name} {count}" for name, count in sorted(taken.items()))
            print(f"steps taken over the rounds, {case.key}: {shares}")
    for note in notes:
        print(note)


def cpu_table(cases: list[Case], median: dict[str, dict[str, float]]) -> None:
    """The daemon's CPU: the whole pass, its start-up (the same `start --once` again, nothing
    left to do), and what is left a step, beside the builtin anchor's."""
    print(
        "\n| Executor steps done | daemon CPU (user+sys) | start-up alone | Executor steps "
        "| model calls | CPU a step, start-up aside | a step, minus builtin's |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    each = {
        key: (found["cpu"] - found["idle_cpu"]) / found["steps"] * 1000
        for key, found in median.items()
    }
    for case in cases:
        found = median[case.key]
        more = "" if case.key == "builtin" else f"{each[case.key] - each['builtin']:+.1f} ms"
        print(
            f"| {case.label} | {found['cpu']:.2f} s | {found['idle_cpu']:.2f} s "
            f"| {found['steps']:.0f} | {found['model_calls']:.0f} | {each[case.key]:.1f} ms "
            f"| {more} |"
        )


def calls_table(cases: list[Case], passes: dict[str, list[Pass]]) -> None:
    """The CPU the daemon spent in the Executor's calls themselves (bench/step_cpu.py)."""
    if not any(p.step_cpu for found in passes.values() for p in found):
        return
    print(
        "\n| Executor steps done | calls a pass | a call's wall, median | daemon CPU in a call, "
        "median | mean | max | rate desk's threads, a model call |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case in cases:
        found = passes[case.key]
        spent = [cpu * 1000 for p in found for cpu, _ in p.step_cpu]
        walls = [wall for p in found for _, wall in p.step_cpu]
        desk = [p.desk / p.model_calls * 1000 for p in found if p.model_calls]
        shown = f"{statistics.median(desk):.1f} ms" if case.workers and desk else ""
        print(
            f"| {case.label} | {statistics.median(len(p.step_cpu) for p in found):.0f} "
            f"| {statistics.median(walls):.2f} s | {statistics.median(spent):.1f} ms "
            f"| {statistics.mean(spent):.1f} ms | {max(spent):.0f} ms | {shown} |"
        )
