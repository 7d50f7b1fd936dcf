"""Intake decides the modes of several requests at once (bounded), then takes them in one at a
time in inbox order: run ids, order and crash safety are those of the one-by-one intake."""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from structlog.testing import capture_logs

from app.team import build_collaborators
from multiverse.config import DaemonConfig, OnceGate, load_runtime_mapping
from multiverse.home import Home
from multiverse.models import Status
from multiverse.roles import Mode, ModeDecision
from multiverse.store import PROCESS_RUNS, TableStore
from orchestrator.crew import Collaborators
from orchestrator.daemon import Daemon
from orchestrator.inbox import survey_inbox
from orchestrator.intake import INTAKE_WORKERS, act, consider_all
from planner.builtin import BuiltinPlanner

from fake_openai import FakeOpenAI, text
from journey import wait_for

KEY_ENV = "FAKE_LLM_KEY"


def drop(home: Home, bodies: dict[str, str]) -> None:
    """Requests in inbox/, oldest first in the order given (one second apart)."""
    for n, (name, body) in enumerate(bodies.items()):
        path = home.inbox / name
        path.write_text(body, encoding="utf-8")
        stamp = 1_700_000_000_000_000_000 + n * 1_000_000_000
        os.utime(path, ns=(stamp, stamp))


def runs(home: Home) -> list[Any]:
    """The rows of process_runs.md (none before the table exists), by run id."""
    path = home.db / PROCESS_RUNS.filename
    rows = TableStore().table(PROCESS_RUNS, path).rows() if path.exists() else []
    return sorted(rows, key=lambda row: row.run_id)


def model_crew(home: Home, server: FakeOpenAI) -> Collaborators:
    """Every tier on the fake model, 16 calls at once allowed (the intake's bound shows)."""
    tier = {"model": "openai/fake-model", "api_base": server.base_url, "api_key_env": KEY_ENV,
            "concurrency": 16}  # fmt: skip
    mapping = {"tier_mapping": {name: tier for name in ("HIGH", "MEDIUM", "LOW")}}
    home.mapping_file.write_text(json.dumps(mapping), encoding="utf-8")
    return build_collaborators(
        home, load_runtime_mapping(home.root), os.environ, lambda said: None,
        lambda said: None, OnceGate(),
    )  # fmt: skip


def test_mode_decisions_are_in_flight_together_bounded_and_runs_made_in_inbox_order(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: Any
) -> None:
    """Ten requests: eight mode calls reach the model at once, the other two wait their turn;
    the runs are then made in inbox order, the first INITIAL and the others CONTINUOUS."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    crew = model_crew(home, fake_openai)
    fake_openai.default = text(json.dumps({"mode": "INITIAL_RUN", "reason": "a memo"}))
    # Short questions: whether each is a simple task is the model's judgement, so it is asked.
    bodies = {f"r{n:02d}.md": f"Which product sold most in market {n}?\n" for n in range(10)}
    drop(home, bodies)
    entries = survey_inbox(home, 0).ready
    assert [entry.path.name for entry in entries] == list(bodies)
    held = threading.Event()
    fake_openai.hold = held
    try:
        decisions = consider_all(crew, entries, 1 << 20)
        wait_for(lambda: fake_openai.count == INTAKE_WORKERS, "eight mode calls in flight")
        assert [decision.running() for decision in decisions] == [True] * 8 + [False] * 2
    finally:
        held.set()
    with capture_logs() as logs:
        made = [act(crew, decision.result(timeout=60)) for decision in decisions]
    assert fake_openai.count == 10
    assert made == sorted(made) and len(set(made)) == 10
    assert [home.run(str(run_id)).request.read_text("utf-8") for run_id in made] == list(
        bodies.values()
    )
    modes = [event["mode"] for event in logs if event["event"] == "run_created"]
    assert modes == [Mode.INITIAL_RUN] + [Mode.CONTINUOUS_RUN] * 9  # as one by one


class GatedPlanner(BuiltinPlanner):
    """The builtin planner, whose mode decision of a request saying HOLD waits for `gate` and
    of one saying BOOM fails (our own bug)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.decided: list[str] = []
        self._lock = threading.Lock()

    def decide_mode(
        self, request: str, has_past_runs: bool, pending_ledger: str | None = None
    ) -> ModeDecision:
        """The heuristic's decision, held or failed as the request says."""
        if "HOLD" in request:
            self.gate.wait(60)
        if "BOOM" in request:
            raise RuntimeError("a bug while deciding")
        with self._lock:
            self.decided.append(request)
        return super().decide_mode(request, has_past_runs, pending_ledger)


def gated_daemon(home: Home) -> tuple[Daemon, GatedPlanner, threading.Thread]:
    """A real daemon (builtin roles but the gated planner), serving in a thread."""
    crew = build_collaborators(home, load_runtime_mapping(home.root), os.environ, lambda t: None)
    planner = GatedPlanner()
    crew.planner = planner
    daemon = Daemon(crew, DaemonConfig(inbox_settle_ms=0))
    thread = threading.Thread(target=daemon.run, name="daemon", daemon=True)
    return daemon, planner, thread


def waiting_on_a_future() -> bool:
    """Whether a thread is blocked in `Future.result()` (the daemon's intake awaiting a
    decision; it runs on one of the daemon's workers)."""
    for frame in sys._current_frames().values():
        while frame is not None:
            code = frame.f_code
            if code.co_name == "result" and code.co_filename.endswith("futures/_base.py"):
                return True
            frame = frame.f_back
    return False


REQUESTS = {
    "a.md": "HOLD: write a memo on the first market.\n",
    "b.md": "Write a memo on the second market.\n",
    "c.md": "BOOM: write a memo on the third market.\n",
    "d.md": "Write a memo on the fourth market.\n",
}


def test_a_late_first_decision_keeps_the_order_and_a_failing_one_stops_no_other(
    home: Home,
) -> None:
    """Decisions finished out of order make no run until the first is taken in; the request
    whose decision fails is left in inbox/ and logged, and the others become runs in order."""
    drop(home, REQUESTS)
    daemon, planner, thread = gated_daemon(home)
    with capture_logs() as logs:
        thread.start()
        try:
            wait_for(lambda: len(planner.decided) == 2, "b and d decided while a waits")
            assert runs(home) == [] and not list(home.runs.glob("run-*"))
            planner.gate.set()
            wait_for(
                lambda: [row.status for row in runs(home)] == [Status.AWAITING_CONFIRMATION] * 3,
                "three proposals",
            )
        finally:
            planner.gate.set()
            daemon.stop()
            thread.join(timeout=60)
    assert [row.user_request for row in runs(home)] == [
        REQUESTS[name].strip() for name in ("a.md", "b.md", "d.md")
    ]
    assert (home.inbox / "c.md").exists()
    failed = [event for event in logs if event["event"] == "request_not_handled"]
    assert [event["name"] for event in failed] == ["c.md"]


def test_a_stopping_daemon_takes_in_no_further_request(home: Home) -> None:
    """Stopped while the first decision is pending, the daemon takes that request in once it
    is decided (as the one-by-one intake finished the request at hand) and no other."""
    drop(home, REQUESTS)
    daemon, planner, thread = gated_daemon(home)
    thread.start()
    try:
        wait_for(lambda: len(planner.decided) == 2, "b and d decided while a waits")
        # The stop must come while the daemon waits for a's decision, not before its turn.
        wait_for(waiting_on_a_future, "the daemon waiting for a's decision")
        daemon.stop()
        planner.gate.set()
        thread.join(timeout=60)
        assert not thread.is_alive()
    finally:
        planner.gate.set()
        daemon.stop()
    assert [row.user_request for row in runs(home)] == [REQUESTS["a.md"].strip()]
    assert sorted(path.name for path in home.inbox.glob("*.md")) == ["b.md", "c.md", "d.md"]
    assert not list((home.state / "intake").glob("*.json"))  # no claim left half-taken


def test_taking_in_again_after_a_crash_between_claim_and_run_resumes_the_claimed_run(
    home: Home,
) -> None:
    """A claim written before a crash is honoured by the overlapped intake: the same run id."""
    drop(home, {"a.md": "Write a memo on the first market.\n"})
    crew = build_collaborators(home, load_runtime_mapping(home.root), os.environ, lambda t: None)
    (home.runs / "run-20260101-000000-001").mkdir(parents=True)
    claim = home.state / "intake" / "a.md.json"
    claim.parent.mkdir(parents=True, exist_ok=True)
    claim.write_text(json.dumps({"run_id": "run-20260101-000000-001", "mode": "INITIAL_RUN"}))
    entries = survey_inbox(home, 0).ready
    decisions = consider_all(crew, entries, 1 << 20)
    made = [act(crew, decision.result(timeout=60)) for decision in decisions]
    assert made == ["run-20260101-000000-001"]
    assert not claim.exists() and not (home.inbox / "a.md").exists()
