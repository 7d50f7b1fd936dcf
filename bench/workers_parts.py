"""The real parts bench/workers.py starts: child processes in sessions of their own, a
`redis-server`, the 1-second model (bench/slow_openai.py), `multiverse worker`s, and network
namespaces on a bridge standing in for other hosts. Every part is stopped or removed when its
context ends, whatever ended it (an error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PYTHON = sys.executable
CLI = [PYTHON, "-m", "app.cli"]


class BenchError(Exception):
    """A part did not start or a pass did not end as it must; the message says which."""


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(
    done: Callable[[], object], what: str, seconds: float, log: Path | None = None
) -> None:
    """Poll `done()` every 20 ms until it holds; BenchError (and the log's tail) past `seconds`."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise BenchError(f"{what} did not happen in {seconds:g} s\n{tail}")
        time.sleep(0.02)


@dataclass
class Children:
    """Every child process of the bench, each in a session of its own (Ctrl-C reaches only the
    bench, which stops them): SIGTERM to the group, then SIGKILL after `grace` seconds."""

    folder: Path
    env: dict[str, str]
    started: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(
        self,
        name: str,
        argv: list[str],
        log: Path,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start `argv`, its output appended to `log`."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=cwd or self.folder,
                env={**self.env, **(env or {})},
            )
        self.started.append((name, process))
        return process

    def stop(self, process: subprocess.Popen[bytes], grace: float = 30) -> None:
        """Stop one child and whatever is left of its process group."""
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # a straggler of the group (a pool child)
        self.started = [(n, p) for n, p in self.started if p is not process]

    def stop_all(self) -> None:
        """Stop every child still listed, the last started first."""
        for _, process in reversed(self.started):
            self.stop(process)


def cli(*args: str, env: dict[str, str]) -> str:
    """`multiverse ARGS` as a user runs it (a child process); its stdout, BenchError if it
    fails. Interrupted, the child is killed by `subprocess.run`."""
    done = subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode:
        raise BenchError(
            f"multiverse {' '.join(args)} exited {done.returncode}:\n"
            f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return done.stdout


def _pong(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def redis_server(children: Children, binds: list[str]) -> Iterator[tuple[int, str]]:
    """A redis-server on a free port, bound to `binds`, saving nothing: its port and version."""
    port, folder = free_port(), children.folder / "redis"
    folder.mkdir(parents=True, exist_ok=True)
    process = children.start(
        "redis-server",
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            *binds,
            "--protected-mode",
            "no",
            "--dir",
            str(folder),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ],
        folder / "redis.log",
    )
    try:
        wait_for(
            lambda: _pong("127.0.0.1", port) or process.poll() is not None,
            "redis-server to answer",
            10,
            folder / "redis.log",
        )
        if process.poll() is not None:
            raise BenchError(f"redis-server exited:\n{(folder / 'redis.log').read_text()}")
        found = subprocess.run(["redis-server", "--version"], capture_output=True, text=True)
        yield port, next((w[2:] for w in found.stdout.split() if w.startswith("v=")), "?")
    finally:
        children.stop(process)


@dataclass(frozen=True)
class SlowModel:
    """A running bench/slow_openai.py: its OpenAI base URL."""

    base_url: str

    def count(self) -> int:
        """How many chat completions it was asked so far."""
        with urllib.request.urlopen(self.base_url + "/count", timeout=10) as answer:
            return int(json.loads(answer.read())["count"])


@contextlib.contextmanager
def slow_model(children: Children, host: str, seconds: float, name: str) -> Iterator[SlowModel]:
    """bench/slow_openai.py listening on `host`, answering after `seconds`."""
    log = children.folder / f"{name}.log"
    process = children.start(
        name, [PYTHON, str(BENCH / "slow_openai.py"), "--host", host, "--delay", str(seconds)], log
    )
    try:
        said = re.compile(r"listening (http://\S+/v1)")
        wait_for(
            lambda: said.search(log.read_text()) or process.poll() is not None,
            f"{name} to listen",
            20,
            log,
        )
        found = said.search(log.read_text())
        if found is None:
            raise BenchError(f"{name} exited:\n{log.read_text()}")
        yield SlowModel(found.group(1))
    finally:
        children.stop(process)


@contextlib.contextmanager
def workers(
    children: Children,
    names: list[str],
    broker: str,
    queue: str,
    prefixes: list[list[str]] | None = None,
) -> Iterator[list[str]]:
    """`multiverse worker` processes serving `queue` of `broker`, one per name, `--concurrency
    1` each, each behind its argv prefix (e.g. `ip netns exec NS`); ready when they return."""
    started = []
    try:
        for number, name in enumerate(names):
            log = children.folder / "workers" / f"{name}.log"
            prefix = prefixes[number] if prefixes else []
            argv = [
                *prefix,
                *CLI,
                "worker",
                "--name",
                name,
                "--broker",
                broker,
                "--queue",
                queue,
                "--concurrency",
                "1",
            ]
            started.append((children.start(name, argv, log), log))
        for process, log in started:
            wait_for(partial(_ready, process, log), "a worker to be ready", 60, log)
            if process.poll() is not None:
                raise BenchError(f"a worker exited {process.returncode}:\n{log.read_text()}")
        yield names
    finally:
        for process, _ in started:
            children.stop(process)


def _ready(process: subprocess.Popen[bytes], log: Path) -> bool:
    """Whether the worker said it serves (or exited)."""
    return process.poll() is not None or b"worker_ready" in log.read_bytes()


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise BenchError(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def _free_subnet() -> str:
    """A 10.231–10.250.x /24 no interface of this machine uses: its first three numbers."""
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    for second in range(231, 251):
        if f" 10.{second}.0." not in used:
            return f"10.{second}.0"
    raise BenchError("no free 10.x.0.0/24 for the bridge")


@contextlib.contextmanager
def namespaces(count: int) -> Iterator[tuple[str, list[str]]]:
    """`count` network namespaces, each with a veth on one bridge of this host (other hosts on
    a switch, as it were): the host's address on the bridge, and the namespaces' names. They
    reach this host only through the bridge (not its loopback). Needs root (CAP_NET_ADMIN)."""
    tag = str(os.getpid() % 100_000)
    bridge, subnet = f"mvb{tag}br", _free_subnet()
    names = [f"mvbench-{tag}-{k}" for k in range(1, count + 1)]
    veths = [f"mvb{tag}h{k}" for k in range(1, count + 1)]
    made: list[str] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        made.append("bridge")
        _ip("addr", "add", f"{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for number, (name, veth) in enumerate(zip(names, veths, strict=True), start=2):
            _ip("netns", "add", name)
            made.append(name)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
            _ip("link", "set", veth, "master", bridge)
            _ip("link", "set", veth, "up")
            _ip("-n", name, "addr", "add", f"{subnet}.{number}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", name, "link", "set", "lo", "up")
        yield f"{subnet}.1", names
    finally:
        for name in names:
            if name in made:
                subprocess.run(["ip", "netns", "del", name], capture_output=True)
        for veth in veths:  # gone with its namespace, but asynchronously
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
        if "bridge" in made:
            subprocess.run(["ip", "link", "del", bridge], capture_output=True)
