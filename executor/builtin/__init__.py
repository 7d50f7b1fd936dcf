"""The builtin offline Executor: extractive analysis, strategy, publishing and charts, no model.

BuiltinExecutor: the offline Executor role (SPEC §10.5, §10.6, §12).

Performs one task by its phase, or one tool task by its type, writing only inside the run's
workspace and outputs; every failure is a FAILED result signal, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from executor.builtin.brief import Written, publish_brief
from executor.builtin.deliverable import deliverable_title, publish_spec_brief
from executor.builtin.delivery import close_published, known_texts, other_script
from executor.builtin.documents import (
    DocContext,
    render_analysis,
    render_assembly_plan,
    render_refined,
    render_strategy,
)
from executor.builtin.evidence import Digest
from executor.builtin.relevance import spec_query, text_scores
from executor.builtin.simple import answer, is_known_command, named_paths, table_answer
from executor.builtin.sources import (
    TaskError,
    expand,
    in_outputs,
    inside,
    read_references,
    relative,
    resolve_output,
    resolve_reference,
    summarize_path,
)
from executor.builtin.specialists import (
    nothing_usable_note,
    read_texts,
    search_queries,
    spec_chart_page,
    visualization_page,
    web_search_note,
)
from executor.builtin.tablefacts import verified_facts
from executor.builtin.text import clean_inline, split_sentences, terms, unique, with_readings
from multiverse.atomic import atomic_write_text
from multiverse.errors import StorageError
from multiverse.home import PHASE_FOLDERS, Home
from multiverse.models import PUBLISHING_PHASE, AssetType, InstructionStatus, phase_key
from multiverse.roles import Declined, ProducedFile, ResultSignal, TaskAssignment, ToolAssignment

if TYPE_CHECKING:
    from executor.search import WebResearch


log = structlog.get_logger(__name__)
# Files whose tables a chart asked for by name may be drawn from (assets/ read as data).
TABLE_SUFFIXES = frozenset({".csv", ".tsv", ".md", ".markdown", ".txt"})

_RENDERERS: dict[str, tuple[Callable[[DocContext, list[Digest]], str], AssetType]] = {
    "ANALYZING": (render_analysis, AssetType.ANALYSIS_REPORT),
    "STRATEGIZING": (render_strategy, AssetType.STRATEGY_DOC),
    "REFINING_CONTENT": (render_refined, AssetType.REFINED_CONTENT),
}


def _failed(error: str) -> ResultSignal:
    return ResultSignal(status="FAILED", error=error)


def _signal(home: Path, written: list[Written], post_tool: bool) -> ResultSignal:
    outputs = [
        ProducedFile(
            path=relative(home, w.path), asset_type=w.asset_type, summary=summarize_path(w.path)
        )
        for w in written
    ]
    return ResultSignal(status="COMPLETED", post_tool_required=post_tool, outputs=outputs)


def _context(assignment: TaskAssignment, inputs: list[str]) -> DocContext:
    task = assignment.task
    active = [i for i in assignment.instructions if i.status == InstructionStatus.ACTIVE]
    return DocContext(
        run_id=assignment.run_id,
        task_id=task.task_id,
        task_name=task.task_name,
        task_purpose=task.task_purpose,
        phase_name=assignment.phase.phase_name,
        request=assignment.request,
        instructions=[f"**{i.instruction_type}:** {i.content}" for i in active],
        inputs=inputs,
    )


class BuiltinExecutor:
    """The offline Executor: extractive, deterministic; never raises.

    Its only network use is the web_search agent, when the mapping configures a provider
    (`research`); without one, web_search writes a note saying plainly that it did not search
    (`search_unavailable` says why, when a provider is named but cannot be used).
    """

    def __init__(
        self, research: WebResearch | None = None, search_unavailable: str | None = None
    ) -> None:
        self._research = research
        self._search_unavailable = search_unavailable

    def execute_task(self, assignment: TaskAssignment) -> ResultSignal:
        """Do one core task by its phase; any failure is a FAILED signal."""
        try:
            signal = self._task(assignment)
        except (TaskError, StorageError) as error:  # a StorageError is the machine's, no bug
            signal = _failed(str(error))
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception(
                "builtin_task_crashed", run_id=assignment.run_id, task_id=assignment.task.task_id
            )
            signal = _failed(f"builtin executor error: {type(error).__name__}: {error}")
        log.info("task_executed", run_id=assignment.run_id, task_id=assignment.task.task_id,
                 status=signal.status, error=signal.error)  # fmt: skip
        return signal

    def _task(self, assignment: TaskAssignment) -> ResultSignal:
        home = Path(assignment.home).resolve()
        task = assignment.task
        target = resolve_output(home, assignment.run_id, task.output_path)
        if not task.related_references:
            raise TaskError(f"task {task.task_id} has no related_references to work from")
        inputs, digests = read_references(home, task.related_references)
        context = _context(assignment, inputs)
        phase = phase_key(assignment.phase)
        if phase == PUBLISHING_PHASE and in_outputs(home, assignment.run_id, target):
            markdown = (
                target.with_suffix(".md") if target.suffix.lower() in (".html", ".htm") else target
            )
            if assignment.spec is not None:
                written = publish_spec_brief(home, assignment.run_id, assignment.spec, markdown,
                                             task.task_purpose)  # fmt: skip
            else:
                written = publish_brief(home, assignment, markdown)
        elif phase == PUBLISHING_PHASE:
            charts = [relative(home, p) for p in _workspace_charts(home, assignment.run_id)]
            atomic_write_text(target, render_assembly_plan(context, digests, charts))
            written = [Written(target, AssetType.ASSEMBLY_PLAN)]
        elif phase in _RENDERERS:
            render, asset_type = _RENDERERS[phase]
            atomic_write_text(target, render(context, digests))
            written = [Written(target, asset_type)]
        else:
            raise TaskError(f"phase {phase!r} has no builtin task behaviour")
        return _signal(home, written, bool(task.post_tool_purpose.strip()))

    def execute_tool_task(self, assignment: ToolAssignment) -> ResultSignal:
        """Do one tool task (web_search, data_visualization chart); failures are signals."""
        tool = assignment.tool_task
        try:
            signal = self._tool(assignment)
        except (TaskError, StorageError) as error:  # a StorageError is the machine's, no bug
            signal = _failed(str(error))
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception(
                "builtin_tool_crashed", run_id=assignment.run_id, tool_task_id=tool.tool_task_id
            )
            signal = _failed(f"builtin executor error: {type(error).__name__}: {error}")
        log.info("tool_task_executed", run_id=assignment.run_id, tool_task_id=tool.tool_task_id,
                 tool_type=tool.tool_type, status=signal.status, error=signal.error)  # fmt: skip
        return signal

    def _tool(self, assignment: ToolAssignment) -> ResultSignal:
        home = Path(assignment.home).resolve()
        tool = assignment.tool_task
        if tool.tool_type == "web_search":
            path = tool_folder(home, assignment) / f"{tool.tool_task_id}.md"
            atomic_write_text(path, self._web_search(assignment))
        elif tool.tool_type == "data_visualization":
            path = tool_folder(home, assignment) / f"{tool.tool_task_id}.html"
            material = _tool_material(home, assignment)
            _, digests = read_references(home, [relative(home, p) for p in material])
            sources = read_texts(home, _asset_tables(home))
            texts = read_texts(home, material)
            drawn = spec_chart_page(assignment, home)
            page = drawn or visualization_page(assignment, texts, digests, sources)[0]
            atomic_write_text(path, page)
        else:
            raise TaskError(f"tool type {tool.tool_type} is not available offline")
        return _signal(home, [Written(path, AssetType.TOOL_OUTPUT)], False)

    def _web_search(self, assignment: ToolAssignment) -> str:
        """The cited summary of a search made now, or the note saying none was made."""
        if self._research is None:
            return web_search_note(assignment, self._search_unavailable)
        from executor.search import ResearchFailed, render_brief

        try:
            findings = self._research.research(search_queries(assignment))
        except ResearchFailed as error:
            if assignment.spec is not None:  # the deliverable says so, and the run goes on
                return nothing_usable_note(assignment, str(error))
            raise TaskError(str(error)) from None
        return render_brief(assignment, findings)

    def summarize(self, path: Path) -> str:
        """A one-line summary (at most 300 characters) for the knowledge catalog."""
        try:
            return summarize_path(path)
        except Exception as error:  # a summary must never stop the catalog
            log.exception("builtin_summary_crashed", path=str(path))
            return f"no summary ({type(error).__name__})"

    def simple_task(self, request: str, home: Path) -> str | Declined:
        """The reply to a SIMPLE_TASK request (markdown), or a decline: not doable offline (or
        a question the tables cannot answer at once), so a run."""
        try:
            reply = answer(request, home)
        except Exception:  # our bug: logged, and the request is not lost (it becomes a run)
            log.exception("builtin_simple_task_crashed")
            return Declined()
        if isinstance(reply, Declined):
            log.info("builtin_simple_task_declined",
                     why=reply.reason or "no offline capability answers it")  # fmt: skip
        return reply


def _asset_tables(home: Path) -> list[Path]:
    """The files of assets/ that may hold tables, confined to the home like every reference."""
    found: list[Path] = []
    folder = Home(home).assets
    entries = sorted(folder.iterdir()) if folder.is_dir() and not folder.is_symlink() else []
    for entry in entries:
        if entry.suffix.lower() not in TABLE_SUFFIXES:
            continue
        try:
            path = resolve_reference(home, relative(home, entry))
        except TaskError:
            continue  # a link leaving the home is never read
        if path.is_file():
            found.append(path)
    return found


def _parent_output(home: Path, assignment: ToolAssignment) -> Path | None:
    try:
        return resolve_output(home, assignment.run_id, assignment.task.output_path)
    except TaskError:
        return None


def tool_folder(home: Path, assignment: ToolAssignment) -> Path:
    """Where a tool task's file goes: beside a published parent output, else the phase folder."""
    run = Home(home).run(assignment.run_id)
    parent = _parent_output(home, assignment)
    if parent is not None and in_outputs(home, assignment.run_id, parent):
        return parent.parent
    if assignment.phase.phase_name in PHASE_FOLDERS:
        return run.phase_workspace(assignment.phase.phase_name)
    if parent is not None and inside(parent, run.workspace):
        return parent.parent
    return run.phase_workspace(PHASE_FOLDERS[0])


def _tool_material(home: Path, assignment: ToolAssignment) -> list[Path]:
    """The parent task's output (if written yet) and its references that exist in the home."""
    material: list[Path] = []
    for reference in assignment.task.related_references:
        try:
            material.extend(expand(resolve_reference(home, reference)))
        except TaskError:
            log.warning("tool_reference_skipped", reference=reference)
    # The raw references come first: a chart of the original data beats one of a digest of it.
    parent = _parent_output(home, assignment)
    if parent is not None and parent.is_file():
        material.append(parent)
    return list(dict.fromkeys(material))


def _workspace_charts(home: Path, run_id: str) -> list[Path]:
    workspace = Home(home).run(run_id).workspace
    if not workspace.is_dir():
        return []
    return [
        p for p in sorted(workspace.rglob("*.html")) if "<svg" in p.read_text("utf-8", "replace")
    ]


__all__ = [
    "BuiltinExecutor",
    "TaskError",
    "clean_inline",
    "close_published",
    "deliverable_title",
    "in_outputs",
    "is_known_command",
    "known_texts",
    "named_paths",
    "nothing_usable_note",
    "other_script",
    "relative",
    "resolve_output",
    "search_queries",
    "spec_query",
    "split_sentences",
    "table_answer",
    "terms",
    "text_scores",
    "tool_folder",
    "unique",
    "verified_facts",
    "with_readings",
]
