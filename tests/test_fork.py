"""`multiverse fork RUN [--from STEP]` (SPEC §13): a new run from a final run's confirmed
instructions and its work before STEP, redone from STEP by the daemon as any run; crash-safe
(a SIGKILL at any write leaves no new run or a whole one); the original is never touched.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from test_model_journey import (
    BEFORE_CONFIRM,
    KEY_ENV,
    PHASES_IN_ORDER,
    SECRET,
    RunScript,
    configure,
    serve_once,
    to_confirmation,
)

from app.cli_schemas import schema_for
from app.commands import answer_run
from multiverse.home import Home
from multiverse.models import InstructionStatus
from multiverse.store import (
    KNOWLEDGE_CATALOG,
    PROCESS_RUNS,
    TASKS,
    USER_INSTRUCTIONS,
    TableStore,
)
from orchestrator.decide import StepKind
from orchestrator.forking import FORKING, ORIGIN, finish_forks
from orchestrator.perform import StepRunner
from orchestrator.upkeep import derive_row

from fake_openai import FakeOpenAI
from forked import forked_cli
from journey import cli, copy_assets, once, run_tree, runs, serving, wait_for
from stepping import builtin_collaborators, steps_until_settled

REQUEST = "Analyse the market report and write a memo"


def _completed(home: Home) -> str:
    """A run of the builtin engine, confirmed and COMPLETED; its id."""
    copy_assets(home, "market_report_2024.md")
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    (run,) = runs(home)
    assert cli(home, "confirm", run["run_id"]).returncode == 0
    assert once(home).returncode == 0
    assert runs(home)[0]["status"] == "COMPLETED"
    return str(run["run_id"])


def _files(home: Home, run_id: str) -> dict[str, bytes]:
    """Every file of a run's folder and outputs (hidden lock files aside), with its bytes."""
    found = {}
    for folder in (home.run(run_id).root, home.outputs / run_id):
        for path in sorted(folder.rglob("*")):
            parts = path.relative_to(home.root).parts
            if path.is_file() and not any(part.startswith(".") for part in parts):
                found["/".join(parts)] = path.read_bytes()
    return found


def _global_rows(home: Home, run_id: str) -> list[Any]:
    """The run's rows of the three global tables."""
    store = TableStore()
    return [
        row
        for spec in (PROCESS_RUNS, USER_INSTRUCTIONS, KNOWLEDGE_CATALOG)
        for row in store.table(spec, home.db / spec.filename).rows()
        if row.run_id == run_id
    ]


def _statuses(tree: dict[str, Any]) -> dict[str, str]:
    """Every row of a `status RUN --json` tree → its status."""
    keys = {"phases": "phase_id", "stages": "stage_id", "tasks": "task_id",
            "tool_tasks": "tool_task_id"}  # fmt: skip
    return {row[key]: row["status"] for level, key in keys.items() for row in tree[level]}


def _fork(home: Home, run_id: str, *args: str) -> dict[str, Any]:
    """`multiverse fork RUN ARGS --json`: exit 0, its output validated; the data."""
    result = cli(home, "fork", run_id, *args, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(data, schema_for("fork"))
    return data


def test_a_completed_run_forked_from_p3_keeps_p1_p2_and_is_redone_by_the_daemon(
    home: Home,
) -> None:
    """Forked at P3, a COMPLETED run gives a new run with P0–P2 COMPLETED (their files copied),
    P3 and P4 PENDING and unplanned, its origin named; `start --once` completes it, and the
    original run's files and rows stay exactly as they were."""
    origin = _completed(home)
    before = _files(home, origin), _global_rows(home, origin)

    data = _fork(home, origin, "--from", "P3")
    new = data["run_id"]
    assert (data["origin"], data["step"], data["folder"]) == (origin, "P3", f"runs/{new}")
    assert new != origin and data["redone"] == ["P3", "P4"]
    statuses = _statuses(run_tree(home, new))
    assert {key for key, status in statuses.items() if status == "PENDING"} == {"P3", "P4"}
    assert not any(key.startswith(("P3-", "P4-")) for key in statuses)  # planned again
    assert set(data["kept"]) == set(statuses) - {"P3", "P4"}
    assert {"P1-S01-T01", "P2-S01-T01", "T04"} <= set(data["kept"])
    assert [r["status"] for r in runs(home)] == ["COMPLETED", "PENDING"]

    paths = home.run(new)
    said = paths.messages.read_text(encoding="utf-8")
    assert f"fork of run `{origin}` from P3" in said
    assert json.loads((paths.root / ORIGIN).read_text("utf-8"))["origin"] == origin
    assert f"fork of run `{origin}`" in cli(home, "show", new).stdout
    assert f"  forked from {origin} at P3" in cli(home, "status", new).stdout.splitlines()
    assert run_tree(home, new)["run"]["forked_from"] == f"{origin} at P3"
    kept = {p.relative_to(paths.workspace).as_posix() for p in paths.workspace.rglob("*.md")}
    assert kept == {"ANALYZING/first_analysis.md", "ANALYZING/facts_01.md",
                    "ANALYZING/analysis_summary.md", "STRATEGIZING/strategy.md"}  # fmt: skip
    assert not any(paths.outputs.iterdir())  # only what P4 will deliver
    store = TableStore()
    tasks = store.table(TASKS, paths.db / TASKS.filename).rows()
    assert all(task.run_id == new and origin not in task.output_path for task in tasks)
    copies = store.table(USER_INSTRUCTIONS, home.db / USER_INSTRUCTIONS.filename).rows()
    theirs = [(r.instruction_type, r.content) for r in copies if r.run_id == origin]
    ours = [(r.instruction_type, r.content.replace(new, origin)) for r in copies if r.run_id == new]
    assert ours == theirs and all(
        r.status is InstructionStatus.ACTIVE for r in copies if r.run_id == new
    )
    catalog = store.table(KNOWLEDGE_CATALOG, home.db / KNOWLEDGE_CATALOG.filename)
    assert f"runs/{new}/workspace/STRATEGIZING/strategy.md" in {
        row.file_path for row in catalog.rows_with("run_id", {new})
    }

    assert once(home).returncode == 0
    tree = run_tree(home, new)
    assert tree["run"]["status"] == "COMPLETED"
    assert set(_statuses(tree).values()) == {"COMPLETED"}
    assert (paths.outputs / "report.md").is_file()
    assert "· COMPLETION" in paths.messages.read_text(encoding="utf-8")
    assert (_files(home, origin), _global_rows(home, origin)) == before


def test_a_serving_daemon_takes_the_fork_as_any_run(home: Home) -> None:
    """With a daemon serving the home, the fork is picked up as it appears and completed."""
    origin = _completed(home)
    with serving(home):
        new = _fork(home, origin, "--from", "P4-S01")["run_id"]
        wait_for(lambda: run_tree(home, new)["run"]["status"] == "COMPLETED", "the fork")
    assert {r["run_id"]: r["status"] for r in runs(home)} == {origin: "COMPLETED",
                                                               new: "COMPLETED"}  # fmt: skip


@pytest.mark.parametrize(
    ("step", "redone"),
    [
        ("P4", [StepKind.PLAN_STAGES, StepKind.PLAN_TASKS, StepKind.EXECUTE_TASK,
                StepKind.PLAN_TASKS, StepKind.EXECUTE_TASK, StepKind.COMPLETE_RUN]),
        ("P4-S02", [StepKind.PLAN_TASKS, StepKind.EXECUTE_TASK, StepKind.COMPLETE_RUN]),
        ("P4-S02-T01", [StepKind.EXECUTE_TASK, StepKind.COMPLETE_RUN]),
        ("T04", [StepKind.FIRST_ANALYSIS, StepKind.COMPLETE_PHASE0, StepKind.PLAN_STAGES]),
    ],
)  # fmt: skip
def test_a_fork_redoes_exactly_the_steps_from_its_step_on(
    home: Home, step: str, redone: list[StepKind]
) -> None:
    """A phase is planned again, a stage's tasks are, a task is only done again; the steps
    before STEP are not repeated, and the tables alone tell the machine so."""
    origin = _completed(home)
    new = _fork(home, origin, "--from", step)["run_id"]
    done = steps_until_settled(StepRunner(builtin_collaborators(home)), new)
    assert done[: len(redone)] == redone
    assert run_tree(home, new)["run"]["status"] == "COMPLETED"


def test_a_fork_on_the_model_pays_only_for_p3_and_p4(
    home: Home, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a scripted model, the fork of a COMPLETED run from P3 asks exactly the calls the
    original made in P3 and P4 (stages, tasks, the task's tool call and its answer), none of
    P1 or P2 again, and delivers the model's words."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    copy_assets(home, "market_report_2024.md")
    configure(home, fake_openai)
    origin = to_confirmation(home, fake_openai)
    script = RunScript(origin)
    fake_openai.script(*script.after_confirm())
    answer_run(str(home.root), origin, "CONFIRM")
    assert serve_once(home) == 0
    assert fake_openai.count == len(BEFORE_CONFIRM) + len(script.after_confirm())
    late = dict(PHASES_IN_ORDER[2:])
    paid_late = sum(len(script.phase(phase_id, name)) for phase_id, name in late.items())

    new = _fork(home, origin, "--from", "P3")["run_id"]
    again = RunScript(new)
    fake_openai.script(*(reply for phase_id, name in late.items()
                         for reply in again.phase(phase_id, name)))  # fmt: skip
    paid = fake_openai.count
    assert serve_once(home) == 0
    assert run_tree(home, new)["run"]["status"] == "COMPLETED"
    # P3: its stages with their tasks in one call, one task; P4: stages, tasks, one task.
    assert fake_openai.count - paid == paid_late == 7
    asked = " ".join(json.dumps(r["messages"]) for r in fake_openai.requests[paid:])
    planned = re.findall(r"Plan target: `([^`]+)` for run `([^`]+)`", asked)
    assert planned == [("stages:P3", new), ("stages:P4", new), ("tasks:P4-S01", new)]
    memo = (home.root / again.memo).read_text(encoding="utf-8")
    assert memo == "# P4\n\nE-bike market: €18.5 billion in 2023.\n"


def _whole_or_none(home: Home, known: set[str]) -> list[str]:
    """The new run folders; each must be whole (its origin record, request and tables) or
    the empty folder a fork reserved (never a half run)."""
    found = []
    for folder in sorted(home.runs.glob("run-*")):
        if folder.name in known:
            continue
        if not any(folder.iterdir()):
            assert derive_row(home.run(folder.name)) is None  # reserved: never a run's row
            continue
        for name in (ORIGIN, "request.md", "db/phases.md", "db/tasks.md", "spec.json"):
            assert (folder / name).is_file(), (folder.name, name)
        found.append(folder.name)
    return found


def _orphan_rows(home: Home) -> bool:
    """Whether a global table holds rows of a run that has no row in process_runs."""
    store = TableStore()
    live = {r.run_id for r in store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()}
    return any(
        row.run_id not in live
        for spec in (USER_INSTRUCTIONS, KNOWLEDGE_CATALOG)
        for row in store.table(spec, home.db / spec.filename).rows()
        if row.run_id is not None
    )


def _consistent(home: Home) -> None:
    """After the fork's recovery: no staging, no reserved folder, no row without its run."""
    assert not [p for p in (home.state / FORKING).glob("run-*")]
    store = TableStore()
    live = {r.run_id for r in store.table(PROCESS_RUNS, home.db / PROCESS_RUNS.filename).rows()}
    folders = {p.name for p in home.runs.glob("run-*")}
    assert folders == live
    assert {p.name for p in home.outputs.glob("run-*")} <= live
    for spec in (USER_INSTRUCTIONS, KNOWLEDGE_CATALOG):
        owners = {row.run_id for row in store.table(spec, home.db / spec.filename).rows()}
        assert owners - {None} <= live, spec.filename


def test_a_fork_killed_at_every_write_leaves_no_half_run(home: Home) -> None:
    """SIGKILL after each write of `fork` (a real child process): before its commit nothing of
    the new run is served, after it the run is whole; the recovery (the next fork's first
    step, or the daemon's start) undoes or finishes it, and `start --once` completes every
    whole fork."""
    origin = _completed(home)
    before = _files(home, origin), _global_rows(home, origin)
    undone, finished, served = 0, [origin], False
    for kill_after in range(1, 200):
        env = {"MULTIVERSE_KILL_AFTER_WRITES": str(kill_after)}
        result = forked_cli(home, "fork", origin, "--from", "P3", env=env)
        if result.returncode == 0:
            break
        assert result.returncode == -9, result.stderr
        whole = _whole_or_none(home, set(finished))
        if not whole and not served and _orphan_rows(home):
            # Cut between its rows and its commit: a daemon started now serves no half run.
            assert once(home).returncode == 0
            assert [r["run_id"] for r in runs(home)] == [origin]
            assert not _orphan_rows(home)  # and the start undid what the fork had begun
            served = True
        recovered = finish_forks(home, TableStore())
        assert recovered == whole  # a whole run is finished, anything else undone
        finished += whole
        undone += not whole
        _consistent(home)
    else:
        raise AssertionError("the fork never finished")
    _consistent(home)
    assert undone >= 20 and len(finished) >= 2 and served, (undone, finished)
    assert once(home).returncode == 0
    forks = [r for r in runs(home) if r["run_id"] != origin]
    assert len(forks) == len(finished)  # those the kills left whole, and the last one
    assert {r["status"] for r in forks} == {"COMPLETED"}
    for fork in forks:
        said = home.run(fork["run_id"]).messages.read_text(encoding="utf-8")
        assert said.count(f"fork of run `{origin}`") == 1 and said.count("· COMPLETION") == 1
    assert (_files(home, origin), _global_rows(home, origin)) == before


def test_fork_refuses_what_it_cannot_fork(home: Home) -> None:
    """A run not final, an unknown step, a step before the confirmed instructions, a tool
    task, an unknown or archived run: each refused with its reason, nothing made."""
    copy_assets(home, "market_report_2024.md")
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    (waiting,) = runs(home)
    refused = cli(home, "fork", waiting["run_id"])
    assert refused.returncode == 1
    assert "AWAITING_CONFIRMATION: only a COMPLETED, FAILED or CANCELLED run" in refused.stderr
    assert cli(home, "confirm", waiting["run_id"]).returncode == 0
    assert once(home).returncode == 0
    origin = waiting["run_id"]

    cases = [
        (("--from", "P9"), 2, "'P9' is no step of this run"),
        (("--from", "P3-S07"), 2, "is no step of this run"),
        (("--from", "T02"), 2, "fork from T03 at the earliest"),
        (("--from", "P3-S01-T01-PRE-01"), 2, "fork from its task (P3-S01-T01)"),
    ]
    for args, code, words in cases:
        result = cli(home, "fork", origin, *args)
        assert result.returncode == code and words in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    unknown = cli(home, "fork", "run-20990101-000000-001", "--json")
    assert unknown.returncode == 2 and json.loads(unknown.stdout)["code"] == 2
    assert [r["run_id"] for r in runs(home)] == [origin]
    assert {p.name for p in home.outputs.glob("run-*")} == {origin}
    assert cli(home, "archive", origin).returncode == 0
    archived = cli(home, "fork", origin)
    assert archived.returncode == 1 and "is archived" in archived.stderr
    assert not (home.state / FORKING).exists() or not list((home.state / FORKING).glob("run-*"))


def test_a_failed_run_is_forked_from_its_failed_step_not_after_it(home: Home) -> None:
    """A run FAILED in P1: a fork from after the failure is refused (the step before it is not
    COMPLETED); from the failed task, once its cause is fixed, the fork completes and the
    FAILED run stays FAILED."""
    copy_assets(home, "market_report_2024.md", "competitor_review.txt")
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    (run,) = runs(home)
    origin = run["run_id"]
    assert cli(home, "confirm", origin).returncode == 0
    crew = builtin_collaborators(home)
    runner = StepRunner(crew)
    for _ in range(50):  # to the first task of the master loop
        decided = runner.decide(origin)
        assert decided is not None
        if decided[1].kind is StepKind.EXECUTE_TASK:
            break
        runner.perform(*decided)
    (home.assets / "competitor_review.txt").unlink()  # its reference vanishes: it fails
    runner.advance(origin)
    (failed,) = runs(home)
    assert failed["status"] == "FAILED"
    task = failed["current_task_id"]

    later = cli(home, "fork", origin, "--from", "P2")
    assert later.returncode == 1 and "not COMPLETED" in later.stderr
    copy_assets(home, "competitor_review.txt")  # the cause is fixed
    new = _fork(home, origin, "--from", task)["run_id"]
    assert _statuses(run_tree(home, new))[task] == "PENDING"
    assert once(home).returncode == 0
    assert {r["run_id"]: r["status"] for r in runs(home)} == {origin: "FAILED", new: "COMPLETED"}

