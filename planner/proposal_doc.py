"""The proposal document (SPEC §6.4): the markdown of runs/<run_id>/feedback_for_user.md, every
fixed word in the requester's language (the spec's; English and Korean, else English).

Also here: the instructions table read back as a person may have edited it before CONFIRM.
"""

from __future__ import annotations

import re

from multiverse.roles import LearningContext, Proposal, ProposedInstruction
from multiverse.store import decode_cell, render_table, split_row
from planner.spec_doc import render_spec
from planner.wording import ENGLISH, KOREAN, words

OFFLINE_NOTICE = ENGLISH["offline"]
INSTRUCTION_COLUMNS = ["#", "type", "content", "justification", "supersedes"]
KOREAN_COLUMNS = ["#", "유형", "내용", "근거", "대체"]
# The instructions table in each language the document is written in: heading, columns.
INSTRUCTION_TABLES = {
    "en": (ENGLISH["instructions"], INSTRUCTION_COLUMNS),
    "ko": (KOREAN["instructions"], KOREAN_COLUMNS),
}
LEARNING_COLUMNS = {
    "en": ["rank", "run_id", "score", "request"],
    "ko": ["순위", "실행", "점수", "요청"],
}


def _table(columns: list[str], rows: list[list[str]]) -> str:
    return "".join(render_table(columns, rows)).rstrip("\n")


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def language_of(proposal: Proposal) -> str:
    """The language the proposal is written in: its spec's, where the engine has the words."""
    language = proposal.spec.language if proposal.spec is not None else "en"
    return language if language in INSTRUCTION_TABLES else "en"


def instructions_section(proposal: Proposal, language: str = "en") -> str:
    """The proposed instructions as a table."""
    rows = [
        [
            str(number),
            item.instruction_type,
            item.content,
            item.justification,
            ", ".join(item.supersedes) or "—",
        ]
        for number, item in enumerate(proposal.instructions, start=1)
    ]
    return _table(INSTRUCTION_TABLES[language][1], rows)


def conflicts_section(proposal: Proposal, language: str = "en") -> str:
    """The conflicts with earlier ACTIVE instructions and what would be superseded."""
    said = words(language)
    if not proposal.conflicts:
        return said["no_conflicts"]
    lines = [f"- {line}" for line in proposal.conflicts]
    superseded = sorted({item for i in proposal.instructions for item in i.supersedes})
    if superseded:
        lines += ["", said["superseded_on_confirm"].format(ids=", ".join(superseded))]
    return "\n".join(lines)


def learning_section(learning: LearningContext, language: str = "en") -> str:
    """The past runs this one learns from, ranked with their BM25 scores."""
    said = words(language)
    if not learning.past_runs:
        return said["first_run"]
    rows = [
        [str(rank), past.run_id, f"{past.score:.3f}", _short(past.user_request, 120)]
        for rank, past in enumerate(learning.past_runs, start=1)
    ]
    columns = LEARNING_COLUMNS.get(language, LEARNING_COLUMNS["en"])
    return said["past_runs"] + "\n\n" + _table(columns, rows)


def answer_section(run_id: str, language: str = "en") -> str:
    """How the user answers: CLI commands or a line in user_response.md."""
    said = words(language)
    return "\n".join(
        [
            f"- {said['confirm']}: `multiverse confirm {run_id}`",
            f'- {said["modify"]}: `multiverse modify {run_id} "{said["what_to_change"]}"`',
            f"- {said['cancel']}: `multiverse cancel {run_id}`",
            "",
            said["or_write"].format(run_id=run_id),
            said["answers"],
        ]
    )


def understanding_section(proposal: Proposal) -> str:
    """How the request was understood: the proposal's own words; a model's are followed by
    the spec as the files allow it (charts with first values, questions with answers)."""
    own = proposal.understanding.strip()
    if proposal.spec is None or proposal.made_offline:
        return own
    return f"{own}\n\n{render_spec(proposal.spec, offline=False)}"


def render_proposal(proposal: Proposal, run_id: str, learning: LearningContext) -> str:
    """The whole feedback_for_user.md of a run."""
    language = language_of(proposal)
    said = words(language)
    parts = [said["title"].format(run_id=run_id)]
    if proposal.made_offline:
        parts.append(said["offline"])
    parts += [
        said["understood"],
        understanding_section(proposal),
        said["instructions"],
        instructions_section(proposal, language),
        said["conflicts"],
        conflicts_section(proposal, language),
        said["learning"],
        learning_section(learning, language),
        said["answer"],
        answer_section(run_id, language),
    ]
    return "\n\n".join(parts) + "\n"


_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


class UnreadableEdit(ValueError):
    """The proposal's instructions table, as a person left it, cannot be read."""


def _table_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines of the instructions table, and the columns it must have (its language's)."""
    found = [(h, c) for h, c in INSTRUCTION_TABLES.values() if h in lines]
    if not found:
        raise UnreadableEdit(f"the heading '{ENGLISH['instructions']}' is missing")
    heading, columns = found[0]
    start = lines.index(heading)
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.strip().startswith("|"):
            table.append(line)
        elif table and line.strip():
            raise UnreadableEdit(f"a line inside the instructions table is not a row: {line!r}")
    return table, columns


def read_instructions(text: str) -> list[ProposedInstruction]:
    """The instructions table of a proposal document as it stands on disk (a person may have
    edited it before confirming); UnreadableEdit says why it cannot be taken."""
    table, columns = _table_lines(text.splitlines())
    if len(table) < 3:
        raise UnreadableEdit("the instructions table has no rows")
    header = [decode_cell(cell) for cell in split_row(table[0])]
    if header != columns:
        raise UnreadableEdit(f"its columns are {header}, expected {columns}")
    found = []
    for number, line in enumerate(table[2:], start=1):
        cells = [decode_cell(cell) for cell in split_row(line)]
        if len(cells) != len(columns):
            raise UnreadableEdit(f"row {number} has {len(cells)} cells, expected 5")
        _, kind, content, justification, supersedes = (cell.strip() for cell in cells)
        if not _TYPE.fullmatch(kind):
            raise UnreadableEdit(f"row {number}: type {kind!r} is not an UPPER_CASE word")
        if not content:
            raise UnreadableEdit(f"row {number} ({kind}): the content is empty")
        found.append(
            ProposedInstruction(
                instruction_type=kind,
                content=content,
                justification=justification or "Written by you in the proposal.",
                supersedes=[s.strip() for s in supersedes.split(",") if s.strip() not in ("", "—")],
            )
        )
    return found
