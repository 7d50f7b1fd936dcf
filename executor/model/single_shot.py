"""The single-shot Executor: one written answer per task, for models that cannot call tools.

Code does what the tools would: it reads the references into the prompt (confined like the read
tools) and writes the model's answer to the output path through the registry's write tool (the
same confinement and approvals). The model only writes. An answer cut by the length limit is
asked again once, shorter and with more room; a loop or a second cut is a RUNAWAY.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from executor.builtin.paths import TaskError, in_outputs, relative
from executor.model.length import asked_words, writing_tokens
from executor.model.loop import ModelGateway
from executor.model.memo import (
    VERDICT_TOKENS,
    MemoVerdict,
    analysis_words,
    assemble_memo,
    verdict_messages,
)
from executor.model.prompt import WRITE_TOOL, load_template
from executor.model.references import Source, gather_sources
from executor.model.single_shot_prompt import (
    WRITER,
    WritingTask,
    active_instructions,
    templates,
    writing_messages,
)
from executor.model.verdict import clipped
from executor.model.writing import judge_cut, retry_note, unwrap_document
from executor.tools.base import ToolContext
from executor.tools.registry import ToolRegistry
from multiverse.agent_package import AgentPackage
from multiverse.config import TierConfig
from multiverse.contracts import TaskAssignment
from multiverse.llm import ChatMessage, LlmAnswer, LlmCall, LlmError, LlmErrorCode

log = structlog.get_logger(__name__)

MIN_CONTENT_WORDS = 1
EMPTY_NOTE = (
    "Your previous answer had a title but no content. Write the whole document now: its "
    "sections with the figures of the references, not only its title."
)


def content_words(document: str) -> int:
    """Words outside headings: a title alone is not a document."""
    lines = [line for line in document.splitlines() if not line.lstrip().startswith("#")]
    return len(" ".join(lines).split())


def run_charts(context: ToolContext) -> list[Path]:
    """The charts drawn for this run so far (pages holding an SVG, in its folders)."""
    found: list[Path] = []
    for folder in (context.workspace, context.outputs):
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                drawn = path.suffix.lower() in (".html", ".svg") and path.is_file()
                if drawn and "<svg" in path.read_text(encoding="utf-8", errors="replace"):
                    found.append(path)
    return found


def with_chart_links(document: str, sources: Sequence[Source], output: str) -> str:
    """The document, with a link to every chart of its sources that it does not link yet."""
    folder = os.path.dirname(output) or "."
    missing = []
    for source in sources:
        link = Path(os.path.relpath(source.path, folder)).as_posix()
        if source.chart and link not in document:
            missing.append(f"- [{Path(source.path).stem}]({link}) (drawn from the data by the "
                           "visualisation tool)")  # fmt: skip
    if not missing:
        return document
    return document.rstrip() + "\n\n## Charts\n\n" + "\n".join(missing) + "\n"


def single_shot_version(package: AgentPackage) -> str:
    """The calls' prompt_version: the card's and every single-shot template's."""
    texts = "\0".join(template.text for template in templates())
    return f"{package.prompt_version}+single_shot@{hashlib.sha256(texts.encode()).hexdigest()[:12]}"


@dataclass(frozen=True)
class SingleShot:
    """Writes one task's document with one answer of the model (two when the first is cut)."""

    gateway: ModelGateway
    tier: TierConfig
    window: int
    role: str

    def write(
        self, assignment: TaskAssignment, package: AgentPackage, registry: ToolRegistry,
        target: Path,
    ) -> None:  # fmt: skip
        """Ask for the document and write it to `target`; raises LlmError or TaskError."""
        home = registry.context.home
        output = relative(home, target)
        context = registry.context
        published = in_outputs(home, assignment.run_id, target)
        references = list(assignment.task.related_references)
        if published:
            # The deliverable shows the charts the run drew, whichever task drew them.
            references += [relative(home, chart) for chart in run_charts(context)]
        words = asked_words(active_instructions(assignment))
        task = WritingTask(
            assignment=assignment,
            output_path=output,
            # A deliverable's analysis is written as a working text; code assembles the memo.
            published=False,
            words=analysis_words(words) if published else words,
            sources=gather_sources(home, references, (context.workspace, context.outputs)),
        )  # fmt: skip
        document = unwrap_document(self._answer(task, package).text)
        if content_words(document) < MIN_CONTENT_WORDS:
            # Small models sometimes stop after the title: asked once more, then it fails.
            log.info("single_shot_empty", run_id=assignment.run_id,
                     task_id=assignment.task.task_id, words=content_words(document))  # fmt: skip
            document = unwrap_document(self._answer(task, package, EMPTY_NOTE).text)
        if content_words(document) < MIN_CONTENT_WORDS:
            raise TaskError(
                f"the model wrote no content for {output} (twice): "
                f"{clipped(document) or '(an empty answer)'}"
            )
        if not document.lstrip().startswith("# "):
            # The prompt says code writes the title: small models that are asked for one often
            # stop right after it.
            document = f"# {assignment.task.task_name}\n\n{document.strip()}\n"
        if published:
            document = self._memo(task, package, document)
        else:
            document = with_chart_links(document, task.sources, output)
        tool = package.tools[WRITE_TOOL].tool if WRITE_TOOL in package.tools else WRITE_TOOL
        result = registry.call(tool, {"path": output, "content": document})
        if not result.ok:
            raise TaskError(f"writing {output} failed: {result.error}")

    def _memo(self, task: WritingTask, package: AgentPackage, analysis: str) -> str:
        """The deliverable: the analysis and the model's verdict on it, assembled by code."""
        assignment = task.assignment
        messages = verdict_messages(
            load_template(WRITER).text,
            assignment.request,
            active_instructions(assignment),
            analysis,
        )
        tokens = self.tier.answer_tokens(VERDICT_TOKENS)
        call = self._call(task, package, messages, tokens, "verdict")
        verdict = self.gateway.complete_json(call, MemoVerdict).value
        first = analysis.strip().splitlines()[0] if analysis.strip() else ""
        title = first[2:] if first.startswith("# ") else assignment.task.task_name
        return assemble_memo(title, analysis, verdict, task.sources, task.output_path)

    def _answer(self, task: WritingTask, package: AgentPackage, note: str = "") -> LlmAnswer:
        max_tokens = writing_tokens(task.words, self.tier.max_tokens)
        messages = writing_messages(task, self.window, max_tokens, note)
        step = "write" if not note else "write-again"
        answer = self.gateway.complete(self._call(task, package, messages, max_tokens, step))
        if answer.finish_reason != "length":
            return answer
        self._stop_runaway(answer, max_tokens, cut_before=False)
        log.info("single_shot_cut", run_id=task.assignment.run_id,
                 task_id=task.assignment.task.task_id, max_tokens=max_tokens)  # fmt: skip
        cut_at = max_tokens
        max_tokens = min(2 * max_tokens, 2 * self.tier.max_tokens)
        messages = writing_messages(
            task, self.window, max_tokens, f"{note}\n\n{retry_note(cut_at)}".strip()
        )
        answer = self.gateway.complete(self._call(task, package, messages, max_tokens, "rewrite"))
        if answer.finish_reason == "length":
            self._stop_runaway(answer, max_tokens, cut_before=True)
        return answer

    def _stop_runaway(self, answer: LlmAnswer, max_tokens: int, cut_before: bool) -> None:
        verdict = judge_cut(answer.text, cut_before, max_tokens)
        if verdict.runaway is not None:
            raise LlmError(
                LlmErrorCode.RUNAWAY,
                f"{self.tier.model} ran away: {verdict.runaway}; the task is stopped",
            )

    def _call(
        self, task: WritingTask, package: AgentPackage, messages: list[ChatMessage],
        max_tokens: int, step: str,
    ) -> LlmCall:  # fmt: skip
        assignment = task.assignment
        return LlmCall(
            role=self.role,
            agent_version=package.agent_version,
            prompt_version=single_shot_version(package),
            scope=f"{assignment.run_id}:{assignment.task.task_id}:{step}",
            run_id=assignment.run_id,
            tier=package.tier.value,
            messages=messages,
            **self.tier.call_fields(),
            max_tokens=max_tokens,
        )
