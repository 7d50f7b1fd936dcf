"""ProcessExecutor: a core task done by an external command (SPEC §11, seed 001 §17).

The command (a coding-agent CLI or any script) runs with the run's workspace as its working
folder, the task's prompt on stdin (or in its `{prompt}` argument), and the task's output path
in MULTIVERSE_OUTPUT_PATH. Exit 0 with the output file written is COMPLETED; exit 0 without it,
exit 1-127, death by a signal, a timeout or silence past the watchdog is FAILED with the exact
reason and the end of stderr. The daemon stopping the child is neither: the step is redone
when the daemon starts again (`StepInterrupted`). Tool tasks (web_search, data_visualization),
summaries and simple tasks stay with the builtin engine, as for the model-backed Executor.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import structlog

from executor.builtin import BuiltinExecutor, TaskError, in_outputs, relative, resolve_output
from executor.model import PROMPT_IN_PROGRESS, RunLocks, active_instructions, clipped, load_template
from multiverse.config import ProcessSpec
from multiverse.errors import StepInterrupted
from multiverse.home import Home
from multiverse.models import asset_type
from multiverse.processes import RECORDS, Place, ProcessSession
from multiverse.roles import Declined, ProducedFile, ResultSignal, TaskAssignment, ToolAssignment

log = structlog.get_logger(__name__)
TEMPLATE = "process_task.md"


def _failed(error: str) -> ResultSignal:
    return ResultSignal(status="FAILED", error=error)


class ProcessExecutor:
    """The Executor role served by a command; the Orchestrator does not know it."""

    def __init__(
        self,
        spec: ProcessSpec,
        home: Path,
        fallback: BuiltinExecutor | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.spec = spec
        self._home = Path(home).resolve()
        self._fallback = fallback or BuiltinExecutor()
        self._environ = os.environ if environ is None else environ
        self._locks = RunLocks()

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """Do one core task through the command; any failure is a FAILED signal."""
        run_id, task_id = assignment.run_id, assignment.task.task_id
        with self._locks.hold(run_id) as held:
            if not held:
                log.warning("prompt_refused", run_id=run_id, item_id=task_id,
                            reason=PROMPT_IN_PROGRESS)  # fmt: skip
                return _failed(
                    f"{PROMPT_IN_PROGRESS}: a prompt of run {run_id} is already in flight; "
                    f"{task_id} was refused, not queued"
                )
            signal = self._guarded(assignment)
        log.info("task_executed", run_id=run_id, task_id=task_id, executor=self.spec.name,
                 status=signal.status, error=signal.error)  # fmt: skip
        return signal

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        """Tool tasks are the builtin specialised agents' (as for the model-backed Executor)."""
        return self._fallback.execute_tool_task(assignment)

    def summarize(self, path: Path) -> str:
        """The builtin extractive summary (no process per catalogued file)."""
        return self._fallback.summarize(path)

    def simple_task(self, request: str, home: Path) -> str | Declined:
        """A SIMPLE_TASK reply from the builtin engine, or its decline (a run)."""
        return self._fallback.simple_task(request, home)

    def _guarded(self, assignment: TaskAssignment) -> ResultSignal:
        try:
            return self._task(assignment)
        except TaskError as error:
            return _failed(str(error))
        except OSError as error:
            return _failed(
                f"`{self.spec.argv[0]}` could not be started: {error.strerror or error}; "
                "check `command` of the tier in runtime-mapping.yaml (multiverse doctor)"
            )
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception("process_task_crashed", run_id=assignment.run_id,
                          task_id=assignment.task.task_id)  # fmt: skip
            return _failed(f"process executor error: {type(error).__name__}: {error}")

    def _task(self, assignment: TaskAssignment) -> ResultSignal:
        run = Home(self._home).run(assignment.run_id)
        target = resolve_output(self._home, assignment.run_id, assignment.task.output_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        run.workspace.mkdir(parents=True, exist_ok=True)
        place = Place(
            home=self._home, cwd=run.workspace, events=run.root / "events.jsonl",
            logs=run.logs, records=run.root / RECORDS, run_id=assignment.run_id,
            task_id=assignment.task.task_id, output_path=target,
        )  # fmt: skip
        session = ProcessSession(self.spec, place, self._environ)
        turn = session.prompt(task_prompt(self._home, assignment, target))
        if turn.interrupted:
            raise StepInterrupted(turn.message)
        output = relative(self._home, target)
        if turn.error_code is not None:
            return _failed(f"{turn.error_code}: {turn.message}")
        if not target.is_file():
            said = clipped(turn.outcome.stdout) or "(nothing)"
            return _failed(
                f"{self.spec.argv[0]} exited 0 without the output file {output}; its stdout: {said}"
            )
        published = in_outputs(self._home, assignment.run_id, target)
        kind = asset_type(assignment.phase, True, published)
        produced = ProducedFile(path=output, asset_type=kind,
                                summary=self._fallback.summarize(target))  # fmt: skip
        return ResultSignal(
            status="COMPLETED",
            post_tool_required=bool(assignment.task.post_tool_purpose.strip()),
            outputs=[produced],
        )


def task_prompt(home: Path, assignment: TaskAssignment, target: Path) -> str:
    """The task as the command reads it: what to do, from which files, into which file."""
    item, stage = assignment.task, assignment.stage
    references = [f"- {path}" for path in item.related_references] or ["- (none)"]
    instructions = [f"- {line}" for line in active_instructions(assignment)] or ["- (none)"]
    return load_template(TEMPLATE).render(
        output_path=str(target),
        request=assignment.request.strip(),
        phase=assignment.phase.phase_name,
        stage=stage.stage_name,
        stage_goal=stage.stage_goal or "(no goal given)",
        task_name=item.task_name,
        task_purpose=item.task_purpose,
        instructions="\n".join(instructions),
        references="\n".join(references),
        home=str(home),
    )
