"""Celery's side of bench/celery_roundtrip.py: the task a remote Executor would be, and its client.

Runs in Celery's own environment (bench/.venv-celery), never in the project's. Two uses:

    celery -A celery_side worker …          the worker (the broker's URL in MULTIVERSE_BENCH_REDIS)
    celery_side.py client --payload FILE …   the timed client; prints one line of JSON

The task, `multiverse.execute_task`, takes what a remote adapter would send: a `TaskAssignment`
as JSON text (`model_dump_json()`, made by the driver in the project's environment). It parses
it, does no work, and returns what the daemon would write: a `ResultSignal`-shaped signal
naming the task's output, and that output's bytes (a markdown file of `output_bytes` bytes, as
text; the daemon writes it into the workspace). The files' text is made once per size, when
first asked, so the calls time the transport alone: publish, the worker's pick-up, the result
stored and read back.

The client times `apply_async(...)` → `.get()` one call at a time (latency), then with
`inflight` calls outstanding (throughput: a window, each result taken in order and a new call
sent for it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections import deque
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from celery import Celery

REDIS = os.environ.get("MULTIVERSE_BENCH_REDIS", "redis://127.0.0.1:6379")
app = Celery("multiverse_bench", broker=f"{REDIS}/0", backend=f"{REDIS}/1")
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_acks_late=True,  # at-least-once, as docs/scaling.md proposes
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,  # with acks_late: a worker takes only what it can start
    result_expires=3600,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@cache
def markdown(size: int) -> str:
    """A markdown report of exactly `size` bytes (ASCII), the same for every call."""
    line = "- finding {:05d}: the figures of the quarter agree with the ledger's totals.\n"
    body = "# Analysis\n\n" + "".join(line.format(n) for n in range(size // 70 + 1))
    assert len(body) >= size
    return body[:size]


@app.task(name="multiverse.execute_task")
def execute_task(assignment_json: str, output_bytes: int) -> dict[str, Any]:
    """One core task: the assignment in, its signal and its output file's text out."""
    assignment = json.loads(assignment_json)
    path = assignment["task"]["output_path"]
    signal = {
        "status": "COMPLETED",
        "outputs": [{"path": path, "asset_type": "ANALYSIS_REPORT", "summary": "bench output"}],
    }
    return {"signal": signal, "files": {path: markdown(output_bytes)}}


def call(assignment: str, output_bytes: int) -> tuple[float, float]:
    """One round trip and its publish alone, in milliseconds; the result checked and dropped."""
    began = time.perf_counter()
    result = execute_task.apply_async(args=(assignment, output_bytes))
    published = time.perf_counter()
    value = result.get(timeout=60)
    ended = time.perf_counter()
    _check(value, output_bytes)
    result.forget()
    return (ended - began) * 1000, (published - began) * 1000


def _check(value: dict[str, Any], output_bytes: int) -> None:
    """The worker answered this call, with the whole file."""
    files = value["files"]
    assert value["signal"]["status"] == "COMPLETED" and len(files) == 1, value["signal"]
    assert len(next(iter(files.values()))) == output_bytes


def cpu_seconds(groups: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of this process and of each process group (Linux: /proc)."""
    used = {"client": time.process_time(), **dict.fromkeys(groups, 0.0)}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        for name, group in groups.items():
            if int(fields[2]) == group:  # pgrp
                used[name] += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return used


def latency(
    assignment: str, output_bytes: int, calls: int, warmup: int, groups: dict[str, int]
) -> dict[str, Any]:
    """Median and p95 of `calls` round trips, one at a time, after `warmup` untimed ones; and
    the CPU each call took in the client, the worker and Redis."""
    for _ in range(warmup):
        call(assignment, output_bytes)
    before = cpu_seconds(groups)
    measured = [call(assignment, output_bytes) for _ in range(calls)]
    after = cpu_seconds(groups)
    times = sorted(total for total, _ in measured)
    return {
        "median_ms": statistics.median(times),
        "p95_ms": times[math.ceil(0.95 * len(times)) - 1],  # nearest rank
        "min_ms": times[0],
        "max_ms": times[-1],
        "publish_ms": statistics.median(publish for _, publish in measured),
        "cpu_ms": {name: (after[name] - before[name]) * 1000 / calls for name in after},
    }


def throughput(assignment: str, output_bytes: int, calls: int, inflight: int) -> dict[str, float]:
    """`calls` round trips with `inflight` outstanding: calls a second, and each call's median."""
    pending: deque[tuple[float, Any]] = deque()
    times: list[float] = []
    done: list[Any] = []
    sent = 0
    began = time.perf_counter()
    while sent < calls or pending:
        while sent < calls and len(pending) < inflight:
            started = time.perf_counter()
            pending.append((started, execute_task.apply_async(args=(assignment, output_bytes))))
            sent += 1
        started, result = pending.popleft()
        value = result.get(timeout=60)
        times.append((time.perf_counter() - started) * 1000)
        _check(value, output_bytes)
        done.append(result)
    seconds = time.perf_counter() - began
    for result in done:
        result.forget()
    return {"per_s": calls / seconds, "median_ms": statistics.median(times)}


def ping_ms(calls: int) -> float:
    """Median of a bare Redis PING on the broker's connection: the floor under a round trip."""
    with app.connection_for_write() as connection:
        client = connection.default_channel.client
        client.ping()
        times = []
        for _ in range(calls):
            began = time.perf_counter()
            client.ping()
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    """The client: time the calls and print one line of JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["client"])
    parser.add_argument("--payload", type=Path, required=True, help="the assignment's JSON")
    parser.add_argument("--sizes", default="4096,102400", help="output files' bytes")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--throughput-calls", type=int, default=400)
    parser.add_argument(
        "--groups", default="", help="name=pgid,…: process groups whose CPU is counted"
    )
    args = parser.parse_args()
    groups = {n: int(g) for n, g in (p.split("=") for p in args.groups.split(",") if p)}
    assignment = args.payload.read_text()
    answer: dict[str, Any] = {
        "versions": {name: version(name) for name in ("celery", "kombu", "redis")},
        "ping_ms": ping_ms(args.calls),
        "sizes": {},
    }
    for size in (int(n) for n in args.sizes.split(",")):
        answer["sizes"][size] = {
            "latency": latency(assignment, size, args.calls, args.warmup, groups),
            "throughput": throughput(assignment, size, args.throughput_calls, args.inflight),
        }
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
