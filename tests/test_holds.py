"""A plan is visible and editable before it runs: `daemon.pause_before` holds a run after the
Planner writes a plan, until `multiverse resume RUN`; the hold is evidence, so it survives a
killed daemon, and each plan holds once."""

from __future__ import annotations

import itertools
from pathlib import Path

from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.models import ProcessRun, Status, Task
from multiverse.store import TASKS, TableStore
from orchestrator.decide import ReleaseRecord, StepKind, release_name
from orchestrator.evidence import SignalBox, open_hold_names
from orchestrator.perform import StepRunner

from forked import forked_daemon, forked_once
from journey import cli, copy_assets, first_row, once, said_count, wait_for
from stepping import builtin_collaborators, confirmed_run, steps_until_settled

REQUEST = "Write a short market memo from the report.\n"


def _pause_before(home: Home, levels: str) -> None:
    mapping = f"daemon:\n  inbox_settle_ms: 0\n  pause_before: {levels}\n"
    atomic_write_text(home.mapping_file, mapping)


def _waits(run: ProcessRun | None) -> bool:
    return run is not None and run.status is Status.AWAITING_CONFIRMATION


def _holds(home: Home, run_id: str) -> list[str]:
    """Every hold signal of the run (open or released)."""
    return sorted(n for n in SignalBox(home.run(run_id).signals).names() if n.startswith("hold-"))


def _held(home: Home) -> str | None:
    """The run's id once it holds: its row waits for the user and a hold is open."""
    run = first_row(home)
    if run is None or run.status is not Status.AWAITING_CONFIRMATION:
        return None
    names = SignalBox(home.run(run.run_id).signals).names()
    return run.run_id if open_hold_names(names) else None


def _settled(home: Home) -> bool:
    run = first_row(home)
    return run is not None and (run.status is Status.COMPLETED or _held(home) is not None)


def _to_the_first_hold(home: Home) -> str:
    """Drop the request, confirm the proposal, wait until the run holds; its run_id."""
    atomic_write_text(home.inbox / "memo.md", REQUEST)
    wait_for(lambda: _waits(first_row(home)), "the proposal")
    run = first_row(home)
    assert run is not None
    assert cli(home, "confirm", run.run_id).returncode == 0
    wait_for(lambda: _held(home) is not None, "the first hold")
    return run.run_id


def _once_to_the_first_hold(home: Home) -> str:
    """Drop the request, confirm the proposal, work until the run holds (`start --once`)."""
    atomic_write_text(home.inbox / "memo.md", REQUEST)
    _once_cleanly(home)
    run = first_row(home)
    assert _waits(run) and run is not None
    assert cli(home, "confirm", run.run_id).returncode == 0
    _once_cleanly(home)
    assert _held(home) == run.run_id
    return run.run_id


def _once_cleanly(home: Home) -> None:
    """`start --once`: exits 0, no traceback."""
    result = once(home)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def _once_resume_until_completed(home: Home, run_id: str) -> None:
    """Say `multiverse resume` at every hold, each followed by `start --once`, until COMPLETED."""
    box = SignalBox(home.run(run_id).signals)
    for _ in range(20):
        assert _settled(home)
        run = first_row(home)
        if run is not None and run.status is Status.COMPLETED:
            return
        (hold,) = open_hold_names(box.names())
        assert cli(home, "resume", run_id).returncode == 0
        _once_cleanly(home)
        assert "release-" + hold[len("hold-") :] in box.names(), f"{hold} released"
    raise AssertionError("the run never completed")


def _edit_output_path(home: Home, run_id: str, task_id: str, new_path: str) -> str:
    """Change a task's output_path in tasks.md as a person's editor does; the old path."""
    path = home.run(run_id).db / TASKS.filename
    task = TableStore().table(TASKS, path).get(task_id)
    assert isinstance(task, Task) and task.status is Status.PENDING
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = [
        line.replace(task.output_path, new_path) if line.startswith(f"| {task_id} ") else line
        for line in lines
    ]
    assert edited != lines
    path.write_text("".join(edited), encoding="utf-8")  # truncate and write, no lock
    return task.output_path


def test_a_held_run_goes_on_with_the_plan_as_edited(home: Home) -> None:
    """pause_before: tasks holds after each task plan; an output path edited meanwhile is used."""
    copy_assets(home, "market_report_2024.md")
    _pause_before(home, "tasks")
    run_id = _once_to_the_first_hold(home)
    shown = cli(home, "status", run_id)
    assert f"multiverse resume {run_id}" in shown.stdout, shown.stdout
    pending = [t for t in _tasks(home, run_id) if t.status is Status.PENDING]
    first = min(pending, key=lambda t: t.execution_order)
    new_path = str(Path(first.output_path).parent / "edited_by_hand.md")
    old_path = _edit_output_path(home, run_id, first.task_id, new_path)
    _once_resume_until_completed(home, run_id)  # each life exits 0, without a traceback
    assert (home.root / new_path).exists() and not (home.root / old_path).exists()
    holds = _holds(home, run_id)
    stages = {t.stage_id for t in _tasks(home, run_id) if not t.stage_id.startswith("P0")}
    assert holds == sorted(f"hold-plan-tasks-{stage}" for stage in stages)  # each plan once
    assert said_count(home, run_id, "HOLD") == len(holds)
    again = cli(home, "resume", run_id)
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert again.stderr.strip() == (
        f"error: run {run_id} is not held (it is COMPLETED): nothing to resume"
    )


def _tasks(home: Home, run_id: str) -> list[Task]:
    return TableStore().table(TASKS, home.run(run_id).db / TASKS.filename).rows()


def test_a_hold_outlives_a_killed_daemon_and_a_resume_meanwhile_is_honoured(home: Home) -> None:
    """Killed while held, the next daemon still holds (said once); RESUME written with no
    daemon running is taken at the next start, and the run completes."""
    copy_assets(home, "market_report_2024.md")
    _pause_before(home, "stages")
    with forked_daemon(home) as daemon:
        run_id = _to_the_first_hold(home)
        daemon.kill()
        daemon.wait(timeout=30)
    assert once(home).returncode == 0  # a whole life of the daemon: it reconciles, then stops
    assert _held(home) == run_id and said_count(home, run_id, "HOLD") == 1
    assert cli(home, "resume", run_id).returncode == 0
    _once_cleanly(home)
    assert "release-plan-stages-P1" in SignalBox(home.run(run_id).signals).names(), (
        "the resume written before the start"
    )
    _once_resume_until_completed(home, run_id)
    assert _holds(home, run_id) == [f"hold-plan-stages-P{n}" for n in (1, 2, 3, 4)]
    assert said_count(home, run_id, "HOLD") == 4


def test_answers_to_a_held_run(home: Home) -> None:
    """A held run refuses CONFIRM (said, set aside), keeps holding, and CANCEL cancels it."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, _ = confirmed_run(crew)
    runner = StepRunner(crew, frozenset({"tasks"}))
    assert steps_until_settled(runner, run_id)[-1] is StepKind.HOLD
    refused = cli(home, "confirm", run_id)
    assert refused.returncode == 1 and f"multiverse resume {run_id}" in refused.stderr
    atomic_write_text(home.run(run_id).user_response, "CONFIRM\n")  # by hand
    assert steps_until_settled(runner, run_id) == [StepKind.ANSWER_HOLD]
    assert "was set aside" in home.run(run_id).messages.read_text(encoding="utf-8")
    assert _held(home) == run_id
    assert cli(home, "cancel", run_id).returncode == 0
    assert steps_until_settled(runner, run_id) == [StepKind.CANCEL]
    run = first_row(home)
    assert run is not None and run.status is Status.CANCELLED


def test_a_hold_broken_off_by_a_crash_is_finished_without_a_second_message(home: Home) -> None:
    """A hold whose row a crash left PENDING is held again, said once; a release whose row a
    crash left waiting goes on."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home)
    run_id, _ = confirmed_run(crew)
    runner = StepRunner(crew, frozenset({"tasks"}))
    steps_until_settled(runner, run_id)
    crew.process_runs.update(run_id, status=Status.PENDING)  # as if killed before the status
    assert steps_until_settled(runner, run_id) == [StepKind.HOLD]
    assert said_count(home, run_id, "HOLD") == 1 and _held(home) == run_id
    # Killed after the release was recorded, before the row went back to PENDING.
    reason = "plan:tasks:P1-S01"
    SignalBox(home.run(run_id).signals).write(release_name(reason), ReleaseRecord(reason=reason))
    kinds = steps_until_settled(runner, run_id)
    assert kinds[0] is StepKind.ANSWER_HOLD and StepKind.EXECUTE_TASK in kinds


def test_killed_at_many_points_each_plan_holds_and_is_said_once(home: Home) -> None:
    """Every life is cut after k durable writes; every plan still holds once, said once."""
    copy_assets(home, "market_report_2024.md")
    _pause_before(home, "tasks")
    assert cli(home, "submit", REQUEST).returncode == 0
    kills = 0
    # Small counts cut the hold and its release at each of their writes; large ones move on.
    points = itertools.cycle((1, 2, 3, 14, 2, 9))
    for _ in range(200):
        result = forked_once(home, env={"MULTIVERSE_KILL_AFTER_WRITES": str(next(points))})
        if result.returncode == -9:
            kills += 1
            continue
        assert result.returncode == 0, result.stderr
        run = first_row(home)
        assert run is not None
        if run.status is Status.COMPLETED:
            break
        assert run.status is Status.AWAITING_CONFIRMATION, run
        answer = "resume" if _held(home) else "confirm"
        assert cli(home, answer, run.run_id).returncode == 0
    run = first_row(home)
    assert run is not None and run.status is Status.COMPLETED and kills >= 12
    names = SignalBox(home.run(run.run_id).signals).names()
    holds = _holds(home, run.run_id)
    assert len(holds) >= 4 and not open_hold_names(names)
    assert all("release-" + name[len("hold-") :] in names for name in holds)
    assert said_count(home, run.run_id, "HOLD") == len(holds)


def test_a_purpose_edited_while_held_changes_what_the_task_does(home: Home) -> None:
    """Held after the publishing stage's task plan, a person rewrites the task's purpose in
    tasks.md; the brief the task then writes ranks its facts by the new purpose."""
    brief = Path(__file__).parent / "fixtures" / "brief_assets" / "nordic_ev_market.md"
    (home.assets / brief.name).write_text(brief.read_text(encoding="utf-8"), encoding="utf-8")
    crew = builtin_collaborators(home)
    run_id, _ = confirmed_run(crew)
    runner = StepRunner(crew, frozenset({"tasks"}))
    box = SignalBox(home.run(run_id).signals)
    publishing = None
    for _ in range(20):
        assert steps_until_settled(runner, run_id)[-1] is StepKind.HOLD
        pending = [t for t in _tasks(home, run_id) if t.status is Status.PENDING]
        publishing = next((t for t in pending if t.output_path.startswith("outputs/")), None)
        if publishing is not None:
            break
        atomic_write_text(home.run(run_id).user_response, "RESUME\n")
    assert publishing is not None
    path = home.run(run_id).db / TASKS.filename
    text = path.read_text(encoding="utf-8")
    wanted = "Only what concerns winter utilisation and heating costs."
    path.write_text(text.replace(publishing.task_purpose, wanted), encoding="utf-8")
    atomic_write_text(home.run(run_id).user_response, "RESUME\n")
    steps_until_settled(runner, run_id)
    assert open_hold_names(box.names()) == []
    report = (home.root / publishing.output_path).read_text(encoding="utf-8")
    passages = report.split("## What the sources say", 1)[1]
    first = next(line for line in passages.splitlines() if line.startswith("1. "))
    assert "Winter utilisation" in first


def test_a_change_to_the_mapping_applies_to_the_steps_after_it(home: Home) -> None:
    """A serving daemon takes an edit of runtime-mapping.yaml for the steps that start after
    it (here: pause_before, so the confirmed run holds at its first plan); an invalid edit is
    said once, the last good mapping kept and the daemon serving on."""
    from journey import serving

    def _lines(said: list[str], text: str) -> int:
        return sum(text in line for line in said)

    copy_assets(home, "market_report_2024.md")
    with serving(home) as served:
        atomic_write_text(home.mapping_file, "daemon:\n  max_parallel_runs: 0\n")
        wait_for(lambda: _lines(served.said, "was not applied") == 1, "the refusal")
        atomic_write_text(home.mapping_file, "daemon:\n  max_parallel_runs: 0\n")  # again
        _pause_before(home, "stages")
        wait_for(lambda: _lines(served.said, "mapping.yaml changed") == 1, "the change")
        assert _lines(served.said, "was not applied") == 1
        assert "max_parallel_runs" in next(line for line in served.said if "not applied" in line)
        run_id = _to_the_first_hold(home)  # without the edit, the run would go on to the end
        assert _holds(home, run_id)
        _pause_before(home, "[]")
        wait_for(lambda: _lines(served.said, "runtime-mapping.yaml changed") == 2, "undone")
        assert cli(home, "resume", run_id).returncode == 0
        wait_for(lambda: _settled(home) and first_row(home).status is Status.COMPLETED, "the end")
