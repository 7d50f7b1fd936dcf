"""Helpers of the remote-step tests (issue 28): a real `redis-server` on a free loopback port and
real `multiverse worker` processes, each a child process of the test.

Without a `redis-server` on PATH the tests that need one are skipped, unless
MULTIVERSE_REQUIRE_REDIS is set (as `.ci/run` sets it after installing the OS package): then its
absence fails them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from journey import wait_for

AGENT = Path(__file__).resolve().parent / "fake_agent.py"


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def redis_binary() -> str:
    """The path of redis-server; the test is skipped (or fails in CI) without one."""
    found = shutil.which("redis-server")
    if found is None:
        message = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("MULTIVERSE_REQUIRE_REDIS"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class Redis:
    """A redis-server child process on a loopback port."""

    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Its URL, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, folder: Path) -> None:
        """Start it (no persistence) and wait until it answers."""
        folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(self.answers, "redis-server to answer", seconds=30)

    def answers(self) -> bool:
        """Whether it accepts a connection now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop it, if running."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@contextmanager
def redis_server(folder: Path) -> Iterator[Redis]:
    """A running redis-server for the test, stopped after it."""
    server = Redis(free_port())
    server.start(folder)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Workers:
    """`multiverse worker` child processes, each in its own process group."""

    folder: Path
    started: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        """Start a worker named `name` with these options; wait until it serves its queues."""
        log = self.folder / f"{name}.log"
        self.folder.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            self.started[name] = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "worker", "--name", name, *args],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, **(env or {})}, cwd=self.folder,
            )  # fmt: skip
        process = self.started[name]
        wait_for(lambda: b"worker_ready" in log.read_bytes() or process.poll() is not None,
                 f"worker {name} to be ready", seconds=60)  # fmt: skip
        assert self.started[name].poll() is None, self.log(name)

    def log(self, name: str) -> str:
        """What the worker printed so far."""
        return (self.folder / f"{name}.log").read_text(encoding="utf-8", errors="replace")

    def kill(self, name: str) -> None:
        """SIGKILL the worker and everything in its process group (a machine lost)."""
        process = self.started[name]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        """Stop every worker still running: SIGKILL of its process group, the worker and its
        pool at once. A test's end asserts nothing of how a worker stops, and Celery's warm
        stop (SIGTERM) waits for its pool, about a second and a half a worker."""
        for name, process in self.started.items():
            if process.poll() is None:
                self.kill(name)


@contextmanager
def workers(folder: Path) -> Iterator[Workers]:
    """Worker processes for the test, all stopped after it."""
    crew = Workers(folder)
    try:
        yield crew
    finally:
        crew.stop_all()


def remote_mapping(broker: str, queue: str = "steps", command: list[str] | None = None,
                   **remote: float | int) -> str:  # fmt: skip
    """A runtime-mapping.yaml whose Executor tier (MEDIUM) is remote; served by `command`
    (a process tier) on the workers, else by the builtin engine."""
    settings = ", ".join(f"{key}: {value}" for key, value in
                         {"broker": f'"{broker}"', "queue": queue, **remote}.items())  # fmt: skip
    served = "    model: builtin\n" if command is None else (
        "    adapter_type: process\n    command: [" + ", ".join(f'"{part}"' for part in command)
        + "]\n    timeout_seconds: 120\n"
    )  # fmt: skip
    return (
        "tier_mapping:\n  MEDIUM:\n" + served + f"    remote: {{{settings}}}\n"
        "daemon:\n  inbox_settle_ms: 0\n"
    )
