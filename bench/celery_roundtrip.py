"""What a role's call costs on a Celery worker (docs/scaling.md): one round trip, measured.

Run: `.venv/bin/python bench/celery_roundtrip.py [--calls 200] [--inflight 8]`. By hand only,
never in CI: it needs `redis-server` (Debian: `apt-get install redis-server`). Creates once
Celery's own environment, bench/.venv-celery, from bench/requirements-celery.txt (never a
dependency of the project). Then, all real parts, all children of this process, on loopback:
- a `redis-server` on a free port in a temporary folder, nothing saved to disk (the broker, on
  database 0, and the result backend, on database 1);
- a real assignment: a `TaskAssignment` of multiverse.roles, made here in the project's
  environment as the daemon makes one (a request, its active instructions, its catalog rows),
  sent as its `model_dump_json()`;
- per worker kind, a real Celery worker (`celery -A celery_side worker`: bench/celery_side.py):
  `--pool=solo` (one process, each task run in the consumer itself: the least a worker adds,
  and what a worker per model slot would run) and `--pool=prefork --concurrency=2` (Celery's
  default pool, one child a core here: a pool's hand-off between processes, and two tasks at
  once); acks_late and prefetch 1, as docs/scaling.md proposes;
- the client (bench/celery_side.py client, in Celery's environment): `apply_async` → `get`
  one call at a time, `calls` times after a warm-up (median and p95), for an output file of
  4 KB and one of 100 KB returned as text; then `inflight` calls outstanding (calls a second).
The task does no work: only the transport is timed (publish, pick-up, the result stored and
read back). Also timed here: the daemon's own share, the assignment's `model_dump_json()` and
the returned signal's validation; and the CPU each call takes in the client, the worker and
Redis. Prints markdown tables. Stops the worker (warm shutdown) and Redis, and removes the
folder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from side_env import side_python  # bench/: the script's folder is on sys.path
from timing import median_ms

from multiverse.models import AssetType, CatalogEntry, MajorStage, Phase, Task, UserInstruction
from multiverse.roles import ResultSignal, TaskAssignment

BENCH = Path(__file__).resolve().parent
CELERY_VENV = BENCH / ".venv-celery"
REQUIREMENTS = BENCH / "requirements-celery.txt"
RUN = "run-20261124-090000-001"
POOLS = {
    "solo": ["--pool=solo", "--concurrency=1"],
    "prefork ×2": ["--pool=prefork", "--concurrency=2"],
}
# For scale: BENCHMARKS.md, "Orchestration" (2026-11-21): the master loop's 65 steps in 58.6 ms.
STEP_MS = 58.6 / 65


def celery_python() -> Path:
    """Celery's interpreter, in its own environment (bench/side_env.py)."""
    return side_python(CELERY_VENV, REQUIREMENTS, "Celery")


def assignment() -> TaskAssignment:
    """A core task's assignment as the daemon makes one: request, instructions, catalog."""
    request = (
        "Write the quarterly analysis of our support tickets: volumes by product and channel, "
        "the causes behind the three largest changes, and what to fix first. Keep it to two "
        "pages, in plain English, with one table of the figures. "
    ) * 4
    phase = Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING", phase_purpose="Analyse.")
    stage = MajorStage(
        stage_id="P1-S02",
        run_id=RUN,
        phase_id="P1",
        stage_name="Causes",
        stage_goal="Explain the largest changes.",
        execution_order=2,
    )
    task = Task(
        task_id="P1-S02-T03",
        run_id=RUN,
        stage_id="P1-S02",
        task_name="Causes of the rise in billing tickets",
        task_purpose="Find what drove billing tickets up by 40% and how sure we are of it.",
        related_references=[
            f"runs/{RUN}/request.md",
            "assets/tickets-q3.csv",
            f"runs/{RUN}/workspace/ANALYZING/P1-S01-T01.md",
        ],
        output_path=f"runs/{RUN}/workspace/ANALYZING/P1-S02-T03.md",
        execution_order=3,
    )
    instructions = [
        UserInstruction(
            instruction_id=f"I{n:04d}",
            run_id=RUN,
            instruction_type=kind,
            content=f"{kind.lower()}: keep figures to one decimal; cite each source "
            f"file by name; say what is uncertain ({n}).",
        )
        for n, kind in enumerate(["GOAL", "AUDIENCE", "STYLE", "FORMAT", "CONSTRAINT"], start=1)
    ]
    catalog = [
        CatalogEntry(
            file_path=f"assets/tickets-2026-{n:02d}.csv",
            asset_type=AssetType.ORIGINAL_INPUT,
            summary=f"Support tickets of month {n}: id, product, channel, category, "
            "opened and closed times, satisfaction score; about 4,000 rows.",
        )
        for n in range(1, 21)
    ]
    return TaskAssignment(
        home="/srv/homes/support",
        run_id=RUN,
        request=request,
        phase=phase,
        stage=stage,
        task=task,
        instructions=instructions,
        catalog=catalog,
    )


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _ping(port: int) -> bool:
    """Whether a Redis answers PING on the port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _stop(process: subprocess.Popen[bytes], name: str) -> None:
    """SIGTERM to the child's process group (a prefork worker's children too), then wait."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            print(f"{name} did not stop in 30 s: killed", file=sys.stderr)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 0)  # raises once no process of the group is left
        os.killpg(process.pid, signal.SIGKILL)  # a straggler of the group: none is kept


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[tuple[int, str, int]]:
    """A redis-server on a free loopback port, in `folder`, saving nothing: port, version, pid."""
    port = free_port()
    command = [
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(folder),
        "--save",
        "",
        "--appendonly",
        "no",
        "--logfile",
        str(folder / "redis.log"),
        "--daemonize",
        "no",
    ]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not _ping(port):
            if process.poll() is not None or time.monotonic() > deadline:
                log = (folder / "redis.log").read_text() if (folder / "redis.log").exists() else ""
                sys.exit(f"redis-server did not start:\n{log}")
            time.sleep(0.05)
        found = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        version = next((w[2:] for w in found.stdout.split() if w.startswith("v=")), "?")
        yield port, version, process.pid
    finally:
        _stop(process, "redis-server")


@contextlib.contextmanager
def worker(python: Path, pool: list[str], env: dict[str, str], log: Path) -> Iterator[int]:
    """A Celery worker of bench/celery_side.py, its pid (the client's warm-up waits for it)."""
    celery = [str(python), "-m", "celery", "-A", "celery_side", "worker", *pool]
    flags = [
        "--loglevel=WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        f"--logfile={log}",
        "--hostname=bench@%h",
    ]
    with (log.parent / f"{log.stem}.out").open("wb") as out:  # its banner
        process = subprocess.Popen(
            [*celery, *flags],
            env=env,
            cwd=log.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        yield process.pid
    finally:
        _stop(process, "celery worker")
        if process.returncode not in (0, -signal.SIGTERM):
            out = (log.parent / f"{log.stem}.out").read_text()
            print(f"celery worker exited {process.returncode}:\n{out}", file=sys.stderr)


def measure(args: argparse.Namespace, python: Path, folder: Path) -> dict[str, Any]:
    """Redis up; per pool, a worker and the client's JSON answer."""
    payload = folder / "assignment.json"
    payload.write_text(assignment().model_dump_json())
    results: dict[str, Any] = {"payload_bytes": payload.stat().st_size, "pools": {}}
    with redis_server(folder) as (port, version, redis_pid):
        results["redis"] = version
        env = {
            **os.environ,
            "MULTIVERSE_BENCH_REDIS": f"redis://127.0.0.1:{port}",
            "PYTHONPATH": str(BENCH),
        }
        client = [
            str(python),
            str(BENCH / "celery_side.py"),
            "client",
            "--payload",
            str(payload),
            "--calls",
            str(args.calls),
            "--warmup",
            str(args.warmup),
            "--inflight",
            str(args.inflight),
            "--throughput-calls",
            str(args.throughput_calls),
        ]
        for name, pool in POOLS.items():
            log = folder / f"worker-{pool[0].split('=')[1]}.log"
            with worker(python, pool, env, log) as pid:
                groups = ["--groups", f"worker={pid},redis={redis_pid}"]  # their own groups
                done = subprocess.run(
                    [*client, *groups], env=env, cwd=folder, capture_output=True, text=True
                )
            if done.returncode:
                sys.exit(f"the client failed ({name}):\n{done.stdout}{done.stderr}")
            results["pools"][name] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{name}: done", file=sys.stderr)
    return results


def daemon_share_ms(repeats: int) -> float:
    """The daemon's own part of a call: dump the assignment, validate the signal it gets back."""
    task = assignment()
    signal_json = {
        "status": "COMPLETED",
        "outputs": [
            {"path": task.task.output_path, "asset_type": "ANALYSIS_REPORT", "summary": "out"}
        ],
    }

    def once(_: int) -> None:
        task.model_dump_json()
        ResultSignal.model_validate(signal_json)

    return median_ms(once, repeats)


def print_results(args: argparse.Namespace, results: dict[str, Any], share: float) -> None:
    """The machine, the table, and the scale beside it."""
    versions = next(iter(results["pools"].values()))["versions"]
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; celery {versions['celery']}"
        f", kombu {versions['kombu']}, redis-py {versions['redis']}, redis-server "
        f"{results['redis']} on loopback; client, worker and Redis on the same machine; "
        f"assignment {results['payload_bytes']:,} bytes of JSON\n"
    )
    print(
        f"| worker | output file | round trip median | p95 | min–max | {args.inflight} in flight:"
        " calls/s | median under load |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, answer in results["pools"].items():
        for size, measured in answer["sizes"].items():
            one, many = measured["latency"], measured["throughput"]
            print(
                f"| {name} | {int(size) // 1024} KB | {one['median_ms']:.2f} ms "
                f"| {one['p95_ms']:.2f} ms | {one['min_ms']:.2f}–{one['max_ms']:.2f} ms "
                f"| {many['per_s']:.0f} | {many['median_ms']:.2f} ms |"
            )
    print(
        "\none call at a time, where it goes: the client's publish (`apply_async` returning), and"
        " CPU a call in each process\n"
    )
    print("| worker | output file | publish | CPU: client | worker | Redis |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, answer in results["pools"].items():
        for size, measured in answer["sizes"].items():
            one = measured["latency"]
            cpu = one["cpu_ms"]
            print(
                f"| {name} | {int(size) // 1024} KB | {one['publish_ms']:.2f} ms "
                f"| {cpu['client']:.2f} ms | {cpu['worker']:.2f} ms | {cpu['redis']:.2f} ms |"
            )
    pings = [answer["ping_ms"] for answer in results["pools"].values()]
    print(
        f"\nfloor: a bare Redis PING from the client, median {min(pings):.3f} ms; the daemon's "
        f"share (model_dump_json + ResultSignal validation), median {share:.3f} ms"
    )
    print(
        f"for scale: one orchestration step ≈ {STEP_MS:.1f} ms (BENCHMARKS.md, Orchestration: "
        "65 steps in 58.6 ms); one local model call ≈ 105 s (EVALS.md)"
    )


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200, help="timed round trips a case")
    parser.add_argument("--warmup", type=int, default=20, help="untimed round trips first")
    parser.add_argument("--inflight", type=int, default=8, help="outstanding calls (throughput)")
    parser.add_argument("--throughput-calls", type=int, default=400)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not on PATH: `apt-get install redis-server` is needed")
    python = celery_python()
    folder = Path(tempfile.mkdtemp(prefix="celery-roundtrip-"))
    try:
        results = measure(args, python, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print_results(args, results, daemon_share_ms(args.calls))


if __name__ == "__main__":
    main()
