"""The messages of a single-shot task: the writer's role, then the task with its references.

The references are pasted (fenced as data) within the room the context window leaves once the
answer's max_tokens and the prompt's own text are counted; the prompt is rebuilt for another
max_tokens, so a retry with more room for the answer leaves less for the references.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from executor.model.budget import estimate_tokens, room_for_references
from executor.model.length import describe_length
from executor.model.prompt import PromptTemplate, load_template
from executor.model.references import Source, fit_sources, render_sources
from multiverse.contracts import TaskAssignment
from multiverse.errors import MultiverseError
from multiverse.llm import ChatMessage
from multiverse.models import InstructionStatus

WRITER = "writer.md"
SINGLE_SHOT = "single_shot.md"
MEMO = "structure_memo.md"
WORKING = "structure_working.md"
# A paid model's huge window is no reason to send a million tokens a task.
MAX_PASTED_TOKENS = 100_000
# Below this, the model would write without its material: failing says why instead.
MIN_REFERENCE_TOKENS = 256


class NoRoom(MultiverseError):
    """The context window leaves no room for the references (a FAILED signal)."""


def templates() -> tuple[PromptTemplate, ...]:
    """Every template a single-shot task is written from (their versions enter the cache key)."""
    return tuple(load_template(name) for name in (WRITER, SINGLE_SHOT, MEMO, WORKING))


@dataclass(frozen=True)
class WritingTask:
    """What the prompt is made from, gathered at the edge."""

    assignment: TaskAssignment
    output_path: str  # home-relative
    published: bool  # the output lies in outputs/<run_id>/: a memo
    words: int | None
    sources: Sequence[Source]


def active_instructions(assignment: TaskAssignment) -> list[str]:
    """The ACTIVE instructions as `(TYPE) content` lines' contents."""
    return [
        f"({item.instruction_type}) {item.content}"
        for item in assignment.instructions
        if item.status == InstructionStatus.ACTIVE
    ]


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip().splitlines())


def chart_links(sources: Sequence[Source], output_path: str) -> str:
    """A markdown line per chart: the link from the output's folder to the chart file."""
    folder = os.path.dirname(output_path) or "."
    lines = []
    for source in sources:
        if source.chart:
            link = Path(os.path.relpath(source.path, folder)).as_posix()
            lines.append(f"- Link this chart where it helps (do not describe its code): "
                         f"[{Path(source.path).stem}]({link})")  # fmt: skip
    return "\n".join(lines)


def _structure(task: WritingTask) -> str:
    charts = chart_links(task.sources, task.output_path)
    if not task.published:
        return load_template(WORKING).render(charts=charts).rstrip()
    listed = [f"     - `{s.path}`" for s in task.sources if not s.chart and not s.note.startswith(
        ("refused", "not found"))]  # fmt: skip
    assets = "\n".join(listed) or "     - (no asset was given)"
    return load_template(MEMO).render(assets=assets, charts=charts).rstrip()


def _user(task: WritingTask, references: str) -> str:
    assignment = task.assignment
    stage, item = assignment.stage, assignment.task
    instructions = active_instructions(assignment)
    return load_template(SINGLE_SHOT).render(
        output_path=task.output_path,
        request=_quoted(assignment.request),
        phase=assignment.phase.phase_name,
        stage=stage.stage_name,
        stage_goal=stage.stage_goal or "(no goal given)",
        task_name=item.task_name,
        task_purpose=item.task_purpose,
        instructions="\n".join(f"- {line}" for line in instructions) or "- (none)",
        length=describe_length(task.words),
        structure=_structure(task),
        references=references,
    )


def writing_messages(
    task: WritingTask, window: int, max_tokens: int, note: str = ""
) -> list[ChatMessage]:
    """The call's messages for an answer of `max_tokens`; raises NoRoom when nothing fits."""
    system = load_template(WRITER).text
    suffix = f"\n\n## Note\n\n{note}\n" if note else ""
    own = estimate_tokens(system + _user(task, "") + suffix)
    room = min(MAX_PASTED_TOKENS, room_for_references(window, max_tokens, own))
    if any(s.text for s in task.sources) and room < MIN_REFERENCE_TOKENS:
        raise NoRoom(
            f"the context window ({window} tokens) leaves no room for the references once the "
            f"answer ({max_tokens} tokens) and the prompt ({own}) are counted; set a larger "
            "context_window for the tier in runtime-mapping.yaml, or a smaller max_tokens"
        )
    references = render_sources(fit_sources(task.sources, room))
    user = _user(task, references) + suffix
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
