"""Fail-fast (SPEC §8): any failure stops the run at once, FAILED at every level, reported."""

from __future__ import annotations

from pathlib import Path

from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.models import Status
from orchestrator.crew import Collaborators
from orchestrator.decide import StepKind
from orchestrator.perform import StepRunner

from journey import cli, copy_assets, once, only_run
from stepping import builtin_collaborators, confirmed_run


def _advance_until(runner: StepRunner, run_id: str, kind: StepKind) -> None:
    for _ in range(200):
        decided = runner.decide(run_id)
        assert decided is not None
        if decided[1].kind is kind:
            return
        runner.perform(*decided)
    raise AssertionError(f"never reached {kind}")


def _statuses(crew: Collaborators, run_id: str) -> dict[str, Status]:
    tables = crew.run(run_id)
    found = {row.key: row.status for row in tables.phases.rows()}
    found.update({row.key: row.status for row in tables.stages.rows()})
    return found


def test_a_hand_broken_run_table_fails_the_run_and_stays_byte_identical(home: Home) -> None:
    """A run table broken by hand mid-run: FAILED everywhere it can be written, file untouched."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    _advance_until(runner, run_id, StepKind.EXECUTE_TASK)
    tasks_file = home.run(run_id).db / "tasks.md"
    lines = tasks_file.read_text(encoding="utf-8").splitlines(keepends=True)
    row = next(i for i, line in enumerate(lines) if line.startswith("| P1-S01-T01"))
    lines[row] = lines[row].rstrip("\n") + " extra |\n"  # a person's slip: one cell too many
    tasks_file.write_text("".join(lines), encoding="utf-8")
    before = tasks_file.read_bytes()

    step = runner.advance(run_id)
    assert step is not None and step.kind is StepKind.FAIL_RUN
    assert tasks_file.read_bytes() == before
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.FAILED
    assert (run.current_phase_id, run.current_stage_id) == ("P1", "P1-S01")
    statuses = _statuses(crew, run_id)
    assert statuses["P1"] is Status.FAILED and statuses["P1-S01"] is Status.FAILED
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert "FAILURE" in messages and "tasks.md" in messages and "cells" in messages
    assert "failed work: the run's next step" in messages and "not recorded" not in messages
    assert runner.advance(run_id) is not None  # IDLE: nothing more happens
    assert tasks_file.read_bytes() == before


def test_an_executor_failure_marks_every_level_and_reports_the_error(home: Home) -> None:
    """A task whose reference vanished: task, stage, phase and run FAILED; report has the log."""
    copy_assets(home, "market_report_2024.md", "competitor_review.txt")
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    _advance_until(runner, run_id, StepKind.EXECUTE_TASK)
    (home.assets / "competitor_review.txt").unlink()
    runner.advance(run_id)
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.FAILED
    task = crew.run(run_id).tasks.get(run.current_task_id or "")
    assert task is not None and task.status is Status.FAILED
    statuses = _statuses(crew, run_id)
    assert statuses[task.stage_id] is Status.FAILED and statuses[task.stage_id[:2]] is Status.FAILED
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert run_id in messages and task.task_id in messages
    assert "competitor_review.txt" in messages and task.task_purpose in messages
    # Halt: the next decision for this run is to do nothing.
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is StepKind.IDLE


def test_a_broken_global_table_pauses_runs_without_failing_them(home: Home) -> None:
    """A hand-broken global table is reported, left as is, and the run resumes once fixed."""
    crew = builtin_collaborators(home)
    run_id, runner = confirmed_run(crew)
    catalog = home.db / "knowledge_base_catalog.md"
    good = catalog.read_bytes() if catalog.exists() else None
    atomic_write_text(catalog, "# Knowledge base catalog\n\n| file_path | run_id |\n|---|---|\n")
    broken = catalog.read_bytes()
    for _ in range(5):
        runner.advance(run_id)
    assert catalog.read_bytes() == broken
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is not Status.FAILED
    if good is None:
        catalog.unlink()
    else:
        catalog.write_bytes(good)
    while (step := runner.advance(run_id)) is not None and step.is_work:
        pass
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED


def test_a_failed_run_is_one_report_on_the_console_and_in_its_messages(
    home: Home, tmp_path: Path
) -> None:
    """A tier whose command fails: `start` prints the report messages.md holds, naming the
    failed work, and no raw log line."""
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho 'boom: the agent crashed' >&2\nexit 3\n", encoding="utf-8")
    agent.chmod(0o755)
    atomic_write_text(
        home.mapping_file,
        f"tier_mapping:\n  MEDIUM:\n    model: process:{agent}\ndaemon:\n  inbox_settle_ms: 0\n",
    )
    copy_assets(home, "market_report_2024.md")
    cli(home, "submit", "Write a short memo from the report.")
    once(home)
    run_id = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    result = once(home)
    assert result.returncode == 1 and only_run(home)["status"] == "FAILED"
    console = result.stdout + result.stderr
    assert "run_failed" not in console and "[error" not in console and "[warning" not in console
    assert "failed work: First analysis" in console and "boom: the agent crashed" in console
    report = console[console.index(f"Run `{run_id}` has stopped") :].strip()
    messages = home.run(run_id).messages.read_text(encoding="utf-8")
    assert report in messages  # the same report, word for word
