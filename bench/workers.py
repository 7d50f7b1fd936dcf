"""Benchmark of remote steps (issue 28): N runs whose Executor calls a 1-second model, their
steps done by one `multiverse worker` process and by two, beside the same runs done in the daemon.

Run: `.venv/bin/python bench/workers.py [--runs 8] [--repeat 3] [--netns]`. Real parts only, all
children of the bench and all stopped, with every folder removed, however it ends (Ctrl-C
included; bench/workers_parts.py): a `redis-server` on a free port, saving nothing; the 1-second
model (bench/slow_openai.py: OpenAI chat completions, every answer after 1 s); `multiverse
worker` processes (`--broker`, `--queue`, `--concurrency 1`: one prefork child each); the daemon,
`multiverse start --once`, a child process per pass (run through bench/step_cpu.py, which
counts its Executor's calls). The tables are bench/workers_report.py's.

The Executor's tier, MEDIUM, is `openai/bench-model` at the slow server, `executor_mode:
single_shot` (one written answer a task; the deliverable's verdict a second call), `concurrency`
as many as runs at once; HIGH and LOW stay builtin. One pass, in a fresh home: N requests
submitted, one `start --once` makes their proposals, all are confirmed, then the timed `start
--once` performs them all (`daemon.max_parallel_runs: 8`) and exits once every run is COMPLETED.
The cases, one pass of each per round, the rounds interleaved so the machine's drift hits them
alike: the Executor in the daemon, builtin (no model: the anchor of the daemon's CPU); in the
daemon, on the slow model (the anchor of time: up to 8 steps at once); `remote:` to 1 worker; to
2 workers; with `--netns`, to 2 workers each in a network namespace of its own on a bridge (two
hosts' stand-ins, reaching Redis and the model over the bridge, never loopback). A case's
workers are started once and warmed by an untimed pass: a worker's pool child imports litellm
on its first step, which a worker that served before has done.

The daemon's CPU is the user+sys time of its process (`os.wait4`), less that of the same
`start --once` again with nothing left to do (its start-up), over the Executor steps it ran
(their `step_finished` lines in the runs' timelines; remote: also the "sent" lines of
runs/*/logs/remote.jsonl, which must match); and, closer, the CPU of the step threads inside
each Executor call (`time.thread_time`, bench/step_cpu.py), with the rate desk's threads apart.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from workers_parts import (
    CLI,
    PYTHON,
    BenchError,
    Children,
    SlowModel,
    cli,
    namespaces,
    redis_server,
    slow_model,
    workers,
)
from workers_report import MODEL_SECONDS, Case, Pass, commit, report

from multiverse.home import Home
from multiverse.store import PROCESS_RUNS, TableStore

REPO = Path(__file__).resolve().parent.parent
ASSETS = REPO / "tests" / "fixtures" / "assets"
EXECUTOR_STEPS = ("FIRST_ANALYSIS", "EXECUTE_TASK", "EXECUTE_TOOL_TASK")
REQUEST = "Analyse these reports and write a 2-page market-entry memo for the board (copy {n})."
DAEMON_SECONDS = 1800  # a pass that takes longer is stuck
BENCH = REPO / "bench"


@dataclass(frozen=True)
class Ran:
    """One `start --once`: wall and CPU seconds, and what bench/step_cpu.py counted."""

    wall: float
    cpu: float
    step_cpu: list[tuple[float, float]]
    desk: float


@dataclass(frozen=True)
class Setup:
    """How a case's passes are made: the home's mapping, the model's server, its Executor."""

    mapping: str
    model: SlowModel
    kind: str  # builtin, model or remote (bench/step_cpu.py)
    as_is: bool  # the daemon as `python -m app.cli`, nothing counted nor imported first

    def launch(self, counts: Path) -> list[str]:
        """The daemon's argv before its arguments. A remote case's imports Celery first: its
        step threads' first sends, all at once, import it in parallel, and Celery's lazy
        package then fails now and then ("cannot import name 'Celery' from 'celery'":
        RemoteExecutor.app makes its app unlocked), failing the step. Its CPU counts either way.
        """
        if self.as_is:
            return CLI
        imports = "celery" if self.kind == "remote" else "none"
        return [PYTHON, str(BENCH / "step_cpu.py"), str(counts), self.kind, imports]


CASES = [
    Case("builtin", "in the daemon, builtin (no model): CPU anchor", model=False),
    Case("local", "in the daemon, on the 1 s model: time anchor"),
    Case("one", "1 worker process (`--concurrency 1`)", workers=("w1",)),
    Case("two", "2 worker processes", workers=("w2a", "w2b")),
]
NETNS = Case(
    "netns",
    "2 worker processes, each in its own network namespace",
    workers=("n1", "n2"),
    netns=True,
)


def mapping(case: Case, api_base: str, broker: str, parallel: int) -> str:
    """The home's runtime-mapping.yaml for the case: MEDIUM on the slow model (or builtin),
    remote to the case's queue when it has workers; HIGH and LOW builtin."""
    lines = ["tier_mapping:", "  MEDIUM:"]
    if case.model:
        lines += [
            "    model: openai/bench-model",
            f"    api_base: {api_base}",
            "    executor_mode: single_shot",
            f"    concurrency: {parallel}",
        ]
    else:
        lines.append("    model: builtin")
    if case.workers:
        lines.append(f'    remote: {{broker: "{broker}", queue: {case.key}}}')
    lines += ["daemon:", f"  max_parallel_runs: {parallel}", "  inbox_settle_ms: 0"]
    return "\n".join(lines) + "\n"


def statuses(home: Path) -> dict[str, str]:
    """Every run's status, by run id."""
    rows = TableStore().table(PROCESS_RUNS, Home(home).db / PROCESS_RUNS.filename).rows()
    return {row.run_id: str(row.status) for row in rows}


def daemon(children: Children, home: Path, log: Path, setup: Setup) -> Ran:
    """`start --once` on the home, a child process: its wall and user+sys CPU seconds, and the
    CPU of its Executor's calls."""
    counts = log.with_suffix(".cpu.json")
    argv = [*setup.launch(counts), "start", "--once", "--home", str(home)]
    began = time.perf_counter()
    process = children.start("daemon", argv, log)
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - began > DAEMON_SECONDS:
            raise BenchError(f"the daemon did not finish in {DAEMON_SECONDS} s: see {log}")
        time.sleep(0.01)
    wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    children.started = [(n, p) for n, p in children.started if p is not process]
    if process.returncode:
        raise BenchError(
            f"start --once exited {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
        )
    counted = json.loads(counts.read_text()) if counts.exists() else {}
    calls = [(float(cpu), float(seconds)) for cpu, seconds in counted.get("calls", [])]
    desk = float(counted.get("desk", 0.0))
    return Ran(wall, usage.ru_utime + usage.ru_stime, calls, desk)


def confirmed_home(folder: Path, setup: Setup, runs: int, children: Children) -> Path:
    """A fresh home with the case's mapping, the sample assets, and `runs` confirmed runs."""
    home, env = folder / "home", children.env
    cli("init", str(home), env=env)
    for asset in sorted(ASSETS.iterdir()):
        shutil.copy(asset, home / "assets" / asset.name)
    (home / "runtime-mapping.yaml").write_text(setup.mapping, encoding="utf-8")
    for n in range(1, runs + 1):
        cli("submit", REQUEST.format(n=n), "--home", str(home), env=env)
    daemon(children, home, folder / "proposals.log", setup)
    waiting = statuses(home)
    if len(waiting) != runs or set(waiting.values()) != {"AWAITING_CONFIRMATION"}:
        raise BenchError(f"the proposals are not all made in {home}: {waiting}")
    for run_id in sorted(waiting):
        cli("confirm", run_id, "--home", str(home), env=env)
    return home


def events(path: Path) -> list[dict[str, object]]:
    """The JSON lines of a file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def one_pass(folder: Path, case: Case, setup: Setup, runs: int, children: Children) -> Pass:
    """Make the runs in a fresh home and time the `start --once` that performs them."""
    home = confirmed_home(folder, setup, runs, children)
    before = setup.model.count()
    ran = daemon(children, home, folder / "daemon.log", setup)
    calls = setup.model.count() - before
    done = statuses(home)
    if set(done.values()) != {"COMPLETED"}:
        raise BenchError(f"not every run completed in {home}: {done}")
    steps = sum(
        1
        for path in (home / "runs").glob("*/timeline.jsonl")
        for item in events(path)
        if item.get("event") == "step_finished" and item.get("step") in EXECUTOR_STEPS
    )
    attempts = [
        item for path in (home / "runs").glob("*/logs/remote.jsonl") for item in events(path)
    ]
    sent = sum(1 for item in attempts if item["event"] == "sent")
    taken = Counter(str(item["worker"]) for item in attempts if item["event"] == "taken")
    if case.workers and not sent == steps == sum(taken.values()):
        raise BenchError(f"{case.key}: {steps} steps, {sent} sent, {taken} taken in {home}")
    idle = daemon(children, home, folder / "idle.log", setup).cpu  # start-up, nothing to do
    return Pass(ran.wall, ran.cpu, idle, steps, sent, taken, calls, ran.step_cpu, ran.desk)


def warm(folder: Path, case: Case, setup: Setup, children: Children) -> float:
    """Untimed passes until every worker of the case did a step; the longest first step of a
    fresh worker (sent → taken), which its pool child's first imports make long."""
    for attempt in range(3):
        one_pass(folder / f"warm-{attempt}", case, setup, len(case.workers), children)
        seen: dict[str, float] = {}
        attempts = [
            item
            for path in (folder / f"warm-{attempt}").glob("home/runs/*/logs/*.jsonl")
            for item in events(path)
        ]
        sent_at = {item["key"]: str(item["at"]) for item in attempts if item["event"] == "sent"}
        for item in sorted(attempts, key=lambda item: str(item["at"])):
            if item["event"] == "taken" and str(item["worker"]) not in seen:
                took = _stamp(str(item["at"])) - _stamp(sent_at[item["key"]])
                seen[str(item["worker"])] = took
        if set(case.workers) <= set(seen):
            return max(seen.values())
    raise BenchError(f"{case.key}: a worker took no step in 3 warm-up passes: {seen}")


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def import_cost(modules: str, env: dict[str, str]) -> str:
    """What a fresh interpreter takes to `import MODULES`: wall and CPU seconds, median of 3."""
    code = (
        "import time; w, c = time.perf_counter(), time.process_time(); import "
        f"{modules}; print(time.perf_counter() - w, time.process_time() - c)"
    )
    found = [
        [
            float(word)
            for word in subprocess.run(
                [PYTHON, "-c", code], capture_output=True, text=True, env=env, check=True
            ).stdout.split()
        ]
        for _ in range(3)
    ]
    wall, cpu = (statistics.median(item[n] for item in found) for n in (0, 1))
    return f"`import {modules}` in a fresh interpreter: {wall:.2f} s, {cpu:.2f} s of CPU"


def measure(
    args: argparse.Namespace, children: Children, stack: contextlib.ExitStack
) -> tuple[list[Case], dict[str, list[Pass]], list[str]]:
    """Start the parts, warm the workers, then the interleaved rounds; the cases measured, their
    passes, and the facts to print beside them."""
    cases, binds, notes = list(CASES), ["127.0.0.1"], []
    host, names = "", list[str]()
    if args.netns:
        try:
            host, names = stack.enter_context(namespaces(len(NETNS.workers)))
            binds.append(host)
            cases.append(NETNS)
        except BenchError as error:
            notes.append(f"network namespaces: skipped ({error})")
    port, version = stack.enter_context(redis_server(children, binds))
    notes.append(f"redis-server {version}")
    broker = f"redis://127.0.0.1:{port}/0"
    models = {"": stack.enter_context(slow_model(children, "127.0.0.1", MODEL_SECONDS, "model"))}
    if host:
        models["netns"] = stack.enter_context(
            slow_model(children, host, MODEL_SECONDS, "model-bridge")
        )
    setups = {}
    for case in cases:
        model = models["netns" if case.netns else ""]
        text = mapping(case, model.base_url, broker, args.parallel)
        kind = "remote" if case.workers else "model" if case.model else "builtin"
        setups[case.key] = Setup(text, model, kind, args.as_is)
        if not case.workers:
            continue
        prefixes = [["ip", "netns", "exec", name] for name in names] if case.netns else None
        served = f"redis://{host}:{port}/0" if case.netns else broker
        stack.enter_context(workers(children, list(case.workers), served, case.key, prefixes))
        first = warm(children.folder / f"warm-{case.key}", case, setups[case.key], children)
        notes.append(f"{case.key}: a fresh worker's first step took {first:.1f} s (warm-up)")
        print(f"{case.key}: workers ready and warm", file=sys.stderr)
    if not args.as_is:
        notes.append("the daemon ran as bench/step_cpu.py: the remote cases' imported Celery first")
    passes: dict[str, list[Pass]] = {case.key: [] for case in cases}
    for number in range(args.repeat):
        for case in cases:
            folder = children.folder / f"{case.key}-{number}"
            found = one_pass(folder, case, setups[case.key], args.runs, children)
            passes[case.key].append(found)
            shutil.rmtree(folder, ignore_errors=True)
            print(f"round {number + 1}: {case.key} {found.wall:.1f} s", file=sys.stderr)
    return cases, passes, notes


def _interrupted(signum: int, frame: object) -> NoReturn:
    """Ctrl-C or SIGTERM: once; the cleanup that follows is not interrupted again."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main() -> None:
    """Measure, clean up, print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--parallel", type=int, default=8, help="daemon.max_parallel_runs")
    parser.add_argument(
        "--netns",
        action="store_true",
        help="also 2 workers in 2 network namespaces (root; `ip netns`)",
    )
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="the daemon as `python -m app.cli`: no CPU of calls, Celery not imported first",
    )
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not on PATH: `apt-get install redis-server` is needed")
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, _interrupted)
    folder = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    (folder / "tmp").mkdir()
    env = {key: value for key, value in os.environ.items() if key != "MULTIVERSE_HOME"}
    env.update(TMPDIR=str(folder / "tmp"), LITELLM_LOCAL_MODEL_COST_MAP="True")
    children = Children(folder, env)
    before = Path("/proc/loadavg").read_text().split()[0]
    args.commit = commit()
    try:
        with contextlib.ExitStack() as stack:
            cases, passes, notes = measure(args, children, stack)
        notes.append(import_cost("litellm", env) + " (each local model pass pays it)")
        notes.append(
            import_cost("celery, kombu.transport.redis, redis", env)
            + " (each remote pass's daemon pays it once)"
        )
    except KeyboardInterrupt:
        print("interrupted: every child stopped, the folder removed", file=sys.stderr)
        raise SystemExit(130) from None
    except BenchError as error:
        raise SystemExit(f"bench failed (children stopped, {folder} removed): {error}") from None
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        children.stop_all()
        shutil.rmtree(folder, ignore_errors=True)
    report(args, cases, passes, notes, (before, Path("/proc/loadavg").read_text().split()[0]))


if __name__ == "__main__":
    main()
