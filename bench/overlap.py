"""Benchmark of overlap: 8 runs at once against a 1 s model, against one run, default settings.

Run: `.venv/bin/python bench/overlap.py [--repeats 3]`. A real loopback OpenAI-compatible server
(tests/fake_openai.py, as the tests reach it through litellm) answers every chat completion
after 1 s, following the prompt: the mode, the proposal, the Communicator's wording, each plan,
and the Executor's tool calls. A real daemon (`multiverse start`, a child process) serves a
fresh home whose every tier is that model (`executor_mode: tools`, the fake's protocol), with
default settings otherwise; a simple request first loads litellm into it (once per daemon, as
one that served before has it). Measured: from dropping the requests into inbox/ (1 then 8 at once)
until every run waits for confirmation (its proposal), then from confirming them all until every
run is COMPLETED. Median of REPEATS; the target is 8 runs ≤ 1.3 × one run, to the proposal.

Two places of the same server: `remote`, reached by this machine's name (a host name is a
remote provider to the mapping: 8 calls at once, 8 runs at once by default), and `local`, reached
at 127.0.0.1 (a local server: 4 calls at once, 4 runs at once by default).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

# bench/orchestrator.py is named like the package: bench/ must not shadow `orchestrator`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from app.commands import answer_run  # noqa: E402
from multiverse.home import Home, init_home  # noqa: E402
from multiverse.models import Status  # noqa: E402
from multiverse.store import PROCESS_RUNS, TableStore  # noqa: E402

REPO = _HERE.parent
ASSET = REPO / "tests" / "fixtures" / "assets" / "market_report_2024.md"
MODEL_SECONDS = 1.0
TARGET = 1.3
_OUTPUT = re.compile(r"Write the complete result to exactly `([^`]+)`")
WARM_UP = "List the assets"  # a simple task, answered before the timing starts


def _fake_openai() -> ModuleType:
    """tests/fake_openai.py, loaded by path (tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location("fake_openai", REPO / "tests" / "fake_openai.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fake_openai"] = module
    spec.loader.exec_module(module)
    return module


fake = _fake_openai()


def _answer(data: dict[str, Any]) -> Any:
    return fake.text(json.dumps(data))


def follow_the_prompt(body: dict[str, Any]) -> Any:
    """What a compliant model answers: by the requested JSON schema, else the Executor's turn."""
    shape = (body.get("response_format") or {}).get("json_schema") or {}
    name, schema = shape.get("name"), json.dumps(shape.get("schema") or {})
    if name == "ModeDecision":
        if WARM_UP in json.dumps(body["messages"]):
            return _answer({"mode": "SIMPLE_TASK", "reason": "one command"})
        return _answer({"mode": "INITIAL_RUN", "reason": "a memo needs a planned run"})
    if name == "ProposalAnswer":
        return _answer({
            "understanding": "You want a short market-entry memo built on the report.",
            "instructions": [{
                "instruction_type": "DELIVERABLE",
                "content": "A one-page market-entry memo in markdown.",
                "justification": "The request asks for a short memo for the board.",
            }],
            "conflicts": [],
        })  # fmt: skip
    if name == "SpecDraft":
        return _answer({"mode": "run", "deliverable": "memo", "language": "en"})
    if name == "Wording":
        return _answer({"text": "Here is where your request stands."})
    if name == "StagesAnswer":
        return _answer({"stages": [{"name": "Build the block", "goal": "One document."}]})
    if name == "TasksAnswer":
        publishing = "deliverable" in schema
        return _answer({"tasks": [{
            "name": "Write the document",
            "purpose": "Condense the reference into the next building block.",
            "references": [1],
            "file_name": "memo.md" if publishing else "block.md",
            **({"deliverable": True} if publishing else {}),
        }]})  # fmt: skip
    if name is not None:
        raise RuntimeError(f"the fake model does not know the schema {name!r}")
    return _executor_turn(body["messages"])


def _executor_turn(messages: list[dict[str, Any]]) -> Any:
    """Write the task's file with write_file, then say COMPLETED."""
    wrote = any(
        call["function"]["name"] == "write_file"
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    )
    prompt = "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
    target = _OUTPUT.search(prompt)
    if wrote or target is None:
        return _answer(
            {"status": "COMPLETED", "post_tool_required": False, "outputs": [], "error": None}
        )
    content = "# Memo\n\nE-bike market: €18.5 billion in 2023.\n"
    return fake.tools(("write_file", {"path": target.group(1), "content": content}))


def remote_host() -> str:
    """This machine's name, if it leads to loopback (where the fake listens)."""
    name = socket.gethostname()
    try:
        address = socket.gethostbyname(name)
    except OSError:
        address = ""
    if not address.startswith("127."):
        raise SystemExit(f"{name} resolves to {address or 'nothing'}, not to loopback")
    return name


def build_home(folder: Path, api_base: str) -> Home:
    """A fresh home: one asset, every tier on the fake model, default settings otherwise."""
    home = Home(folder)
    init_home(home)
    shutil.copy(ASSET, home.assets / ASSET.name)
    tier = {"model": "openai/fake-model", "api_base": api_base, "executor_mode": "tools"}
    mapping = {"tier_mapping": {name: tier for name in ("HIGH", "MEDIUM", "LOW")}}
    home.mapping_file.write_text(json.dumps(mapping, indent=1), encoding="utf-8")
    return home


def statuses(home: Home) -> list[Status]:
    """Every run's status (none while the table is being written)."""
    try:
        rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
    except Exception:
        return []
    return [row.status for row in rows]


def wait_until(home: Home, done: Callable[[list[Status]], bool], seconds: float) -> float:
    """Poll every 20 ms until `done(statuses)`; the moment it held. A FAILED run stops it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = statuses(home)
        if Status.FAILED in now:
            raise RuntimeError(f"a run failed in {home.root}; see runs/*/messages.md")
        if done(now):
            return time.monotonic()
        time.sleep(0.02)
    raise RuntimeError(f"timed out in {home.root}: {now}")


def start_daemon(home: Home) -> subprocess.Popen[bytes]:
    """`multiverse start` on the home, once its loop beats (and the start-up work is done)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "start", "--home", str(home.root)],
        stdout=subprocess.DEVNULL,
        stderr=open(home.root / "daemon.stderr", "wb"),  # noqa: SIM115 (closed with the child)
        env=env,
        cwd=REPO,
    )
    deadline = time.monotonic() + 60
    while not (home.state / "heartbeat.json").exists():
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("the daemon did not start")
        time.sleep(0.02)
    # The first model call loads litellm (~3 s, once per daemon): a simple request pays it
    # before the timing starts, as a daemon that served before has.
    (home.inbox / "warm-up.md").write_text(WARM_UP + "\n", encoding="utf-8")
    while not list(home.inbox_done.glob("*.reply.md")):
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("the daemon did not answer the warm-up request")
        time.sleep(0.02)
    return process


def measure(runs: int, api_base: str, complete: bool) -> tuple[float, float | None]:
    """Seconds from drop to every proposal, and from confirming to every run COMPLETED."""
    with tempfile.TemporaryDirectory() as folder:
        home = build_home(Path(folder), api_base)
        daemon = start_daemon(home)
        try:
            staged = home.root / "staged"
            staged.mkdir()
            for n in range(runs):
                body = f"Write a short market-entry memo for the board on e-bikes, angle {n}.\n"
                (staged / f"memo-{n}.md").write_text(body, encoding="utf-8")
            began = time.monotonic()
            for path in sorted(staged.iterdir()):
                os.replace(path, home.inbox / path.name)  # dropped at once
            awaiting = [Status.AWAITING_CONFIRMATION] * runs
            proposed = wait_until(home, lambda now: now == awaiting, 600) - began
            if not complete:
                return proposed, None
            rows = TableStore().table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()
            confirmed = time.monotonic()
            for row in rows:
                answer_run(str(home.root), row.run_id, "CONFIRM")
            finished = wait_until(home, lambda now: now == [Status.COMPLETED] * runs, 1800)
            return proposed, finished - confirmed
        finally:
            daemon.send_signal(signal.SIGINT)
            daemon.wait(timeout=60)


def share(server: Any, api_base: str, args: argparse.Namespace) -> None:
    """Orchestration's share of one whole run (drop → proposal, then confirm → COMPLETED):
    the run with every answer at once, over the same run with every answer after 1 s; the
    calls the run made, counted at the server."""
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    totals: dict[float, list[float]] = {MODEL_SECONDS: [], 0.0: []}
    calls: list[int] = []
    for _ in range(args.repeats):
        for delay in totals:  # interleaved
            server.delay = delay
            before = server.count
            proposed, completed = measure(1, api_base, True)
            totals[delay].append(proposed + (completed or 0.0))
            if delay:
                calls.append(server.count - before)
    slow, instant = (statistics.median(totals[d]) for d in (MODEL_SECONDS, 0.0))
    print(f"one run, model at {MODEL_SECONDS:.0f} s: {slow:.1f} s; at once: {instant:.1f} s; "
          f"calls a run: {statistics.median(calls):.0f}; orchestration's share: "
          f"{instant / slow:.1%} (medians of {args.repeats})")  # fmt: skip


def main() -> None:
    """Print the machine, the command and the medians as markdown."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--places", default="remote,local", help="remote, local or both")
    parser.add_argument("--no-complete", action="store_true", help="stop at the proposals")
    parser.add_argument(
        "--share", action="store_true", help="orchestration's share of one run (model at 1 s, 0 s)"
    )
    args = parser.parse_args()
    server = fake.FakeOpenAI()
    server.responder = follow_the_prompt
    server.delay = MODEL_SECONDS
    server.start()
    if args.share:
        try:
            share(server, f"http://{remote_host()}:{server.base_url.rsplit(':', 1)[1]}", args)
        finally:
            server.stop()
        return
    port = server.base_url.rsplit(":", 1)[1]
    bases = {"remote": f"http://{remote_host()}:{port}", "local": f"http://127.0.0.1:{port}"}
    print(
        f"machine: {platform.machine()}, {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"model: every answer after {MODEL_SECONDS:.0f} s; medians of {args.repeats}\n")
    print("| model at | runs | drop → proposals | ratio | confirm → COMPLETED | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    try:
        for place in args.places.split(","):
            complete = not args.no_complete
            found = {
                runs: [measure(runs, bases[place], complete) for _ in range(args.repeats)]
                for runs in (1, 8)
            }
            medians = {
                runs: (
                    statistics.median(p for p, _ in results),
                    None if args.no_complete else statistics.median(c or 0 for _, c in results),
                )
                for runs, results in found.items()
            }
            for runs, (proposed, completed) in medians.items():
                ratio = f"{proposed / medians[1][0]:.2f}×" if runs > 1 else ""
                done = "" if completed is None else f"{completed:.1f} s"
                done_ratio = (
                    f"{completed / medians[1][1]:.2f}×"
                    if runs > 1 and completed is not None and medians[1][1]
                    else ""
                )
                print(f"| {place} | {runs} | {proposed:.1f} s | {ratio} | {done} | {done_ratio} |")
    finally:
        server.stop()
    print(f"\ntarget: 8 runs ≤ {TARGET}× one run (drop → proposals, remote model, defaults)")


if __name__ == "__main__":
    main()
