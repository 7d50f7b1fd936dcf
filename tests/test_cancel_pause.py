"""Stop and pause (SPEC §13): `multiverse cancel RUN` at any time ends a run CANCELLED with its
tables as they were (stopping a process child at once); `pause RUN` / `resume RUN` hold a run
between steps. Both are answers in user_response.md and evidence in signals/, so they survive
a stopped or killed daemon."""

from __future__ import annotations

import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from multiverse.home import Home
from multiverse.models import Status
from multiverse.store import RUN_TABLES, TASKS, TableStore
from orchestrator.decide import StepKind
from orchestrator.evidence import SignalBox
from orchestrator.perform.ending import CANCELLED, CancelRecord

from forked import forked_daemon
from journey import cli, copy_assets, first_row, once, said_count, wait_for
from mappings import quick_intake
from stepping import builtin_collaborators, confirmed_run, steps_until_settled

AGENT = Path(__file__).resolve().parent / "fake_agent.py"
REQUEST = "Write a short market memo from the report.\n"


def _status(home: Home) -> Status | None:
    run = first_row(home)
    return None if run is None else run.status


def _tables(home: Home, run_id: str) -> dict[str, list[Any]]:
    """Every row of the run's four tables, as plain data."""
    db = home.run(run_id).db
    return {
        spec.filename: [
            row.model_dump() for row in TableStore().table(spec, db / spec.filename).rows()
        ]
        for spec in RUN_TABLES
    }


def _agent_tier(home: Home, state: Path) -> None:
    """The Executor's tier served by the fake agent: Phase 0 written, later tasks wait."""
    command = [sys.executable, str(AGENT), "wait-in-phases", str(state)]
    mapping = {"tier_mapping": {"MEDIUM": {"adapter_type": "process", "command": command,
                                           "timeout_seconds": 600}}}  # fmt: skip
    mapping_text = yaml.safe_dump(quick_intake(mapping))
    (home.root / "runtime-mapping.yaml").write_text(mapping_text, encoding="utf-8")


def _confirmed_on_the_agent(home: Home, state: Path) -> str:
    """A run confirmed (not yet taken up) whose Phase 1 tasks will wait in their child."""
    copy_assets(home, "market_report_2024.md")
    _agent_tier(home, state)
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run = first_row(home)
    assert run is not None and run.status is Status.AWAITING_CONFIRMATION
    assert cli(home, "confirm", run.run_id).returncode == 0
    return run.run_id


def _waiting_task(state: Path) -> str | None:
    found = sorted(path.name.removeprefix("waiting-") for path in state.glob("waiting-*"))
    return found[0] if found else None


def test_cancel_interrupts_a_process_child_and_the_run_is_cancelled_not_failed(
    home: Home, tmp_path: Path
) -> None:
    """The child working on the run's task gets SIGTERM; the run is CANCELLED, its task row
    stays PENDING, nothing is recorded as FAILED, and the cancellation is said once."""
    state = tmp_path / f"agent-{uuid.uuid4().hex[:8]}"
    state.mkdir()
    run_id = _confirmed_on_the_agent(home, state)
    with forked_daemon(home) as daemon:
        wait_for(lambda: _waiting_task(state) is not None, "the child to take a Phase 1 task")
        task_id = _waiting_task(state)
        before = _tables(home, run_id)
        done = cli(home, "cancel", run_id)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: _status(home) is Status.CANCELLED, "the run to be cancelled")
        assert (state / f"terminated-{task_id}").exists()  # SIGTERM reached the child
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    run = first_row(home)
    assert run is not None and run.current_task_id is None and run.current_phase_id is None
    assert _tables(home, run_id) == before  # the tables keep their rows as they were
    task = TableStore().table(TASKS, home.run(run_id).db / TASKS.filename).get(task_id or "")
    assert task is not None and task.status is Status.PENDING
    names = SignalBox(home.run(run_id).signals).names()
    assert "failure" not in names and CANCELLED in names
    assert said_count(home, run_id, "CANCELLED") == 1 and said_count(home, run_id, "FAILURE") == 0
    again = cli(home, "cancel", run_id)
    assert again.returncode == 1 and "CANCELLED already" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_a_cancel_written_while_no_daemon_runs_is_honoured_at_the_restart(
    home: Home, tmp_path: Path
) -> None:
    """Mid-phase, the daemon stops (its child stopped, the step to be redone); a cancel is
    written; the next start cancels the run before any step, with the tables unchanged."""
    state = tmp_path / f"agent-{uuid.uuid4().hex[:8]}"
    state.mkdir()
    run_id = _confirmed_on_the_agent(home, state)
    with forked_daemon(home) as daemon:
        wait_for(lambda: _waiting_task(state) is not None, "the child to take a Phase 1 task")
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    assert _status(home) is Status.PENDING
    before = _tables(home, run_id)
    phases = {row["phase_id"]: row["status"] for row in before["phases.md"]}
    assert phases["P0"] is Status.COMPLETED and phases["P1"] is Status.PENDING  # mid-phase
    assert cli(home, "cancel", run_id).returncode == 0
    for _ in range(2):  # a second start finds nothing more to do, and says nothing again
        assert once(home).returncode == 0
        assert _status(home) is Status.CANCELLED
        assert _tables(home, run_id) == before
        assert said_count(home, run_id, "CANCELLED") == 1
    assert len(list(state.glob("waiting-*"))) == 1  # no task was started again
    record = SignalBox(home.run(run_id).signals).read(CANCELLED, CancelRecord)
    assert record is not None and "phases 1 of" in record.finished
    assert "What had finished" in home.run(run_id).messages.read_text(encoding="utf-8")


def test_a_cancel_broken_off_by_a_crash_is_finished_once(home: Home) -> None:
    """With the cancel recorded but the row not yet CANCELLED (a crash), the next decision
    finishes the cancel without its answer, and says it once."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    assert runner.advance(run_id) is not None  # the CONFIRM
    SignalBox(home.run(run_id).signals).write(CANCELLED, CancelRecord(finished="nothing"))
    assert steps_until_settled(runner, run_id) == [StepKind.CANCEL]
    assert _status(home) is Status.CANCELLED
    assert said_count(home, run_id, "CANCELLED") == 1


def test_pause_holds_across_a_restart_and_resume_lets_the_run_complete(home: Home) -> None:
    """`pause` holds a confirmed run before its next step; a restarted daemon still holds it,
    says nothing again, and `status` says how to go on; `resume` lets it complete."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    assert runner.advance(run_id) is not None  # the CONFIRM
    asked = cli(home, "pause", run_id)
    assert asked.returncode == 0, asked.stderr
    assert once(home).returncode == 0
    assert _status(home) is Status.AWAITING_CONFIRMATION
    box = SignalBox(home.run(run_id).signals)
    assert "hold-user-1" in box.names() and not home.run(run_id).user_response.exists()
    t02 = TableStore().table(TASKS, home.run(run_id).db / TASKS.filename).get("T02")
    assert t02 is not None and t02.status is Status.PENDING  # held before its next step
    assert once(home).returncode == 0  # a restart: still held, said once
    assert said_count(home, run_id, "HOLD") == 1 and _status(home) is Status.AWAITING_CONFIRMATION
    shown = cli(home, "status", run_id)
    assert f"multiverse resume {run_id}" in shown.stdout, shown.stdout
    twice = cli(home, "pause", run_id)
    assert twice.returncode == 1 and "held already" in twice.stderr
    assert cli(home, "resume", run_id).returncode == 0
    assert once(home).returncode == 0
    assert _status(home) is Status.COMPLETED
    assert "release-user-1" in box.names()


def test_pause_and_cancel_refused_plainly(home: Home) -> None:
    """Pause of a run that waits for its proposal's answer, and pause or cancel of a final
    run, are refused in one line with exit 1; PAUSE is no answer to a proposal."""
    copy_assets(home, "market_report_2024.md")
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run = first_row(home)
    assert run is not None and run.status is Status.AWAITING_CONFIRMATION
    waiting = cli(home, "pause", run.run_id)
    assert waiting.returncode == 1 and "proposal" in waiting.stderr
    assert len(waiting.stderr.strip().splitlines()) == 1
    home.run(run.run_id).user_response.write_text("PAUSE\n", encoding="utf-8")  # by hand
    assert once(home).returncode == 0
    assert _status(home) is Status.AWAITING_CONFIRMATION  # refused, the question stays
    assert cli(home, "cancel", run.run_id).returncode == 0
    assert once(home).returncode == 0
    assert _status(home) is Status.CANCELLED
    for command in ("pause", "cancel"):
        final = cli(home, command, run.run_id)
        assert final.returncode == 1 and "CANCELLED already" in final.stderr, final.stderr
