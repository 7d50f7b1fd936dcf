"""Write-behind of the global tables: coalesced writes, nothing lost, repaired after a crash."""

from __future__ import annotations

import threading

import pytest

from multiverse.contracts import ProducedFile, ResultSignal
from multiverse.home import Home
from multiverse.models import PHASE0_STAGE, AssetType, Status
from orchestrator.runner import StepRunner
from orchestrator.signals import SignalBox
from orchestrator.steps import Step, StepKind
from orchestrator.write_behind import WriteBehind

from journey import copy_assets
from stepping import NEVER, builtin_collaborators, confirmed_run, steps_until_settled


def _first_master_task(runner: StepRunner, run_id: str) -> Step:
    """Perform steps up to and including the first task of the master loop."""
    for _ in range(100):
        step = runner.advance(run_id)
        assert step is not None
        if step.kind is StepKind.EXECUTE_TASK and step.stage_id != PHASE0_STAGE:
            return step
    raise AssertionError("the master loop never started")


def test_values_that_arrive_together_share_one_write() -> None:
    """A newer value for a key replaces the older; one flush writes the latest of each."""
    batches: list[dict[str, int]] = []
    behind: WriteBehind[str, int] = WriteBehind("t", batches.append, delay=NEVER)
    behind.put("a", 1)
    behind.put("b", 2)
    behind.put("a", 3)
    assert behind.get("a") == 3 and batches == []
    behind.flush()
    assert batches == [{"a": 3, "b": 2}]
    behind.flush()
    assert batches == [{"a": 3, "b": 2}]  # nothing waiting, nothing written


def test_a_failed_write_keeps_its_values_and_newer_ones_win() -> None:
    """A batch whose write fails stays pending; a value that arrived since is kept over it."""
    batches: list[dict[str, int]] = []
    failing = [True]

    def write(batch: dict[str, int]) -> None:
        if failing[0]:
            behind.put("a", 9)  # arrives while the failing write is under way
            raise OSError("disk full")
        batches.append(batch)

    behind: WriteBehind[str, int] = WriteBehind("t", write, delay=NEVER)
    behind.put("a", 1)
    behind.put("b", 2)
    with pytest.raises(OSError):
        behind.flush()
    failing[0] = False
    behind.flush()
    assert batches == [{"a": 9, "b": 2}]


def test_values_are_written_within_the_delay_without_being_asked() -> None:
    """The timer writes on its own; a reader waits on an event, not on a sleep."""
    written = threading.Event()
    batches: list[dict[str, int]] = []

    def write(batch: dict[str, int]) -> None:
        batches.append(batch)
        written.set()

    behind: WriteBehind[str, int] = WriteBehind("t", write, delay=0.01)
    behind.put("a", 1)
    assert written.wait(timeout=10)
    assert batches == [{"a": 1}] and behind.pending() == {}


def test_values_being_written_are_still_seen_as_pending() -> None:
    """While a batch is on its way to the file, readers see it in the queue, not in neither."""
    entered, release = threading.Event(), threading.Event()
    seen: list[dict[str, int]] = []

    def write(batch: dict[str, int]) -> None:
        entered.set()
        assert release.wait(timeout=10)
        seen.append(batch)

    behind: WriteBehind[str, int] = WriteBehind("t", write, delay=NEVER)
    behind.put("a", 1)
    flusher = threading.Thread(target=behind.flush)
    flusher.start()
    assert entered.wait(timeout=10)
    behind.put("b", 2)  # arrives during the write
    assert behind.get("a") == 1 and behind.pending() == {"a": 1, "b": 2}
    release.set()
    flusher.join(timeout=10)
    assert seen == [{"a": 1}] and behind.pending() == {"b": 2}


def test_the_attention_pointer_is_written_behind_and_a_final_status_wins(home: Home) -> None:
    """current_* follow the run lazily; a flush after the run finished cannot undo its status."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home, held=True)
    run_id, runner = confirmed_run(crew)
    step = _first_master_task(runner, run_id)
    pointer = crew.attention.where(run_id)
    # The step that finishes a stage's last task closes the stage: attention goes up a level.
    assert step.stage_id is not None
    stage = crew.run(run_id).stages.get(step.stage_id)
    closed = stage is not None and stage.status is Status.COMPLETED
    expected = (
        (step.phase_id, None, None) if closed else (step.phase_id, step.stage_id, step.task_id)
    )
    assert pointer == expected
    crew.attention.flush()
    run = crew.process_runs.get(run_id)
    assert run is not None
    assert (run.current_phase_id, run.current_stage_id, run.current_task_id) == pointer

    steps_until_settled(runner, run_id)
    crew.attention.behind.put(run_id, pointer)  # a late move, as from a stray flush
    crew.attention.flush()
    run = crew.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED
    assert (run.current_phase_id, run.current_stage_id, run.current_task_id) == (None,) * 3


def test_catalog_rows_lost_with_the_daemon_are_rebuilt_from_the_files(home: Home) -> None:
    """Rows still waiting when the process dies: the next process registers them again."""
    copy_assets(home, "market_report_2024.md", "quarterly_revenue.csv")
    crew = builtin_collaborators(home, held=True)
    run_id, runner = confirmed_run(crew)
    step = _first_master_task(runner, run_id)
    task = crew.run(run_id).tasks.get(step.task_id or "")
    assert task is not None and task.status is Status.COMPLETED
    waiting = crew.pending_catalog.get(task.output_path)
    assert waiting is not None and waiting.source_task_id == task.task_id
    catalog = home.db / "knowledge_base_catalog.md"
    assert task.output_path not in catalog.read_text(encoding="utf-8")

    # The process dies here: its waiting rows die with it. A new daemon starts.
    reborn = builtin_collaborators(home, held=True)
    runner = StepRunner(reborn)
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is StepKind.REGISTER_OUTPUTS
    runner.perform(*decided)
    row = reborn.catalog.get(task.output_path)
    assert row is not None
    assert (row.run_id, row.source_task_id) == (run_id, task.task_id)
    assert row.asset_type == waiting.asset_type and row.summary

    kinds = steps_until_settled(runner, run_id)
    assert StepKind.REGISTER_OUTPUTS not in kinds
    run = reborn.process_runs.get(run_id)
    assert run is not None and run.status is Status.COMPLETED
    catalogued = {r.file_path for r in reborn.catalog.rows()}
    done = [t for t in reborn.run(run_id).tasks.rows() if t.stage_id != PHASE0_STAGE]
    assert done and all(t.output_path in catalogued for t in done)


def test_the_repair_catalogues_the_output_file_even_when_the_signal_omits_it(home: Home) -> None:
    """A kept signal that does not name the task's output file cannot make the repair repeat."""
    copy_assets(home, "market_report_2024.md")
    crew = builtin_collaborators(home, held=True)
    run_id, runner = confirmed_run(crew)
    step = _first_master_task(runner, run_id)
    task = crew.run(run_id).tasks.get(step.task_id or "")
    assert task is not None
    extra = ProducedFile(
        path=f"runs/{run_id}/workspace/ANALYZING/extra.md",
        asset_type=AssetType.TOOL_OUTPUT,
        summary="an extra file",
    )
    box = SignalBox(home.run(run_id).signals)
    box.write(task.task_id, ResultSignal(status="COMPLETED", outputs=[extra]))

    runner = StepRunner(
        builtin_collaborators(home, held=True)
    )  # the queued rows died with the first process
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is StepKind.REGISTER_OUTPUTS
    runner.perform(*decided)
    assert runner.crew.catalog.get(extra.path) is not None
    assert runner.crew.catalog.get(task.output_path) is not None
    decided = runner.decide(run_id)
    assert decided is not None and decided[1].kind is not StepKind.REGISTER_OUTPUTS
