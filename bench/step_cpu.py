"""The daemon, with the CPU of its Executor's calls counted (bench/workers.py).

Run: `python bench/step_cpu.py OUT KIND IMPORTS MULTIVERSE-ARGS…`, e.g. `python
bench/step_cpu.py cpu.json remote celery start --once --home HOME`. It wraps the Executor's
`execute_task` and `execute_tool_task` of KIND (builtin: `BuiltinExecutor`, model:
`ModelExecutor`, remote: `RemoteExecutor`) to add up the CPU time of the calling thread during
each call (`time.thread_time`: a step thread waiting on the broker or the model spends none),
and, for remote, the CPU of the rate desk's threads (they admit the workers' model calls). Then
it runs `multiverse MULTIVERSE-ARGS…` in this process, as `python -m app.cli` would, and at
exit writes OUT: `{"calls": [[CPU, wall seconds] of each call, in order], "desk": CPU
seconds}`. IMPORTS
`celery` imports Celery first (see PRELOADED in bench/workers.py); `none` imports nothing.
Nothing else changes: the wrappers only read a clock.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import runpy
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

ROLES = {
    "builtin": ("executor.builtin", "BuiltinExecutor"),
    "model": ("executor.model", "ModelExecutor"),
    "remote": ("executor.remote", "RemoteExecutor"),
}
_LOCK = threading.Lock()
CALLS: list[tuple[float, float]] = []
DESK: list[tuple[float, float]] = []


def counted(method: Callable[..., Any], into: list[tuple[float, float]]) -> Callable[..., Any]:
    """`method`, adding (CPU of its thread, wall seconds) of each call to `into`."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began, wall = time.thread_time(), time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent = (time.thread_time() - began, time.perf_counter() - wall)
            with _LOCK:
                into.append(spent)

    return wrapper


def instrument(kind: str) -> None:
    """Wrap the Executor of `kind` (and the rate desk's threads, for remote)."""
    module, name = ROLES[kind]
    role = getattr(importlib.import_module(module), name)
    for method in ("execute_task", "execute_tool_task"):
        setattr(role, method, counted(getattr(role, method), CALLS))
    if kind == "remote":
        from multiverse.remote import RateDesk

        for method in ("_serve", "_admit"):  # each runs as a whole thread
            setattr(RateDesk, method, counted(getattr(RateDesk, method), DESK))


def main() -> None:
    """Instrument, then run the CLI; write what was counted at exit."""
    out, kind, imports, *rest = sys.argv[1:]
    if imports == "celery":
        from celery import Celery  # noqa: F401

    instrument(kind)

    def write() -> None:
        with _LOCK:
            found = {"calls": list(CALLS), "desk": sum(cpu for cpu, _ in DESK)}
        Path(out).write_text(json.dumps(found), encoding="utf-8")

    atexit.register(write)
    sys.argv = ["multiverse", *rest]
    runpy.run_module("app.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
