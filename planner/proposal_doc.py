"""The proposal document (SPEC §6.4): the markdown of runs/<run_id>/feedback_for_user.md."""

from __future__ import annotations

import re

from multiverse.roles import LearningContext, Proposal, ProposedInstruction
from multiverse.store import decode_cell, render_table, split_row

OFFLINE_NOTICE = (
    "> Made offline by the builtin engine (no language model configured): the request was read "
    "by fixed rules, and each reading below says where it came from. Correct any line by "
    "MODIFY, or edit the instructions table in this file before you confirm: what is in it "
    "when you confirm is what is done."
)


def _table(columns: list[str], rows: list[list[str]]) -> str:
    return "".join(render_table(columns, rows)).rstrip("\n")


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def instructions_section(proposal: Proposal) -> str:
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
    return _table(["#", "type", "content", "justification", "supersedes"], rows)


def conflicts_section(proposal: Proposal) -> str:
    """The conflicts with earlier ACTIVE instructions and what would be superseded."""
    if not proposal.conflicts:
        return "None: no ACTIVE instruction of an earlier run is contradicted."
    lines = [f"- {line}" for line in proposal.conflicts]
    superseded = sorted({item for i in proposal.instructions for item in i.supersedes})
    if superseded:
        lines += ["", f"On CONFIRM these become SUPERSEDED: {', '.join(superseded)}."]
    return "\n".join(lines)


def learning_section(learning: LearningContext) -> str:
    """The past runs this one learns from, ranked with their BM25 scores."""
    if not learning.past_runs:
        return "First run: no past runs."
    rows = [
        [str(rank), past.run_id, f"{past.score:.3f}", _short(past.user_request, 120)]
        for rank, past in enumerate(learning.past_runs, start=1)
    ]
    intro = "Past runs with the most similar requests (BM25 score, higher is closer):\n\n"
    return intro + _table(["rank", "run_id", "score", "request"], rows)


def answer_section(run_id: str) -> str:
    """How the user answers: CLI commands or a line in user_response.md."""
    return "\n".join(
        [
            f"- Confirm: `multiverse confirm {run_id}`",
            f'- Ask for changes: `multiverse modify {run_id} "…what to change…"`',
            f"- Cancel: `multiverse cancel {run_id}`",
            "",
            f"Or write one of these into `runs/{run_id}/user_response.md`:",
            "`CONFIRM`, `MODIFY: <what to change>`, or `CANCEL`.",
        ]
    )


def render_proposal(proposal: Proposal, run_id: str, learning: LearningContext) -> str:
    """The whole feedback_for_user.md of a run."""
    parts = [f"# Proposal for run {run_id}"]
    if proposal.made_offline:
        parts.append(OFFLINE_NOTICE)
    parts += [
        "## How I understood the request",
        proposal.understanding.strip(),
        "## Proposed instructions",
        instructions_section(proposal),
        "## Conflicts with earlier instructions",
        conflicts_section(proposal),
        "## Learning context",
        learning_section(learning),
        "## How to answer",
        answer_section(run_id),
    ]
    return "\n\n".join(parts) + "\n"


INSTRUCTION_COLUMNS = ["#", "type", "content", "justification", "supersedes"]
_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


class UnreadableEdit(ValueError):
    """The proposal's instructions table, as a person left it, cannot be read."""


def read_instructions(text: str) -> list[ProposedInstruction]:
    """The instructions table of a proposal document as it stands on disk (a person may have
    edited it before confirming); UnreadableEdit says why it cannot be taken."""
    lines = text.splitlines()
    try:
        start = lines.index("## Proposed instructions")
    except ValueError:
        raise UnreadableEdit("the heading '## Proposed instructions' is missing") from None
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.strip().startswith("|"):
            table.append(line)
        elif table and line.strip():
            raise UnreadableEdit(f"a line inside the instructions table is not a row: {line!r}")
    if len(table) < 3:
        raise UnreadableEdit("the instructions table has no rows")
    header = [decode_cell(cell) for cell in split_row(table[0])]
    if header != INSTRUCTION_COLUMNS:
        raise UnreadableEdit(f"its columns are {header}, expected {INSTRUCTION_COLUMNS}")
    found = []
    for number, line in enumerate(table[2:], start=1):
        cells = [decode_cell(cell) for cell in split_row(line)]
        if len(cells) != len(INSTRUCTION_COLUMNS):
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
