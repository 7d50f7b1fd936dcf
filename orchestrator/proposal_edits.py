"""A proposal edited by hand before CONFIRM: what is in the file when confirmed is what is done.

The Planner's proposal is kept as evidence (`proposal-<revision>`); the person may edit the
instructions table of runs/<run_id>/feedback_for_user.md before confirming. On CONFIRM the table
is read back: if it differs from the Planner's, the edited instructions are recorded as
`confirmed-proposal` and become the run's instructions; if it cannot be read, the Planner's
stand and the person is told why their edit was ignored. Never silently either way.
"""

from __future__ import annotations

from multiverse.contracts import Message, MessageKind, ProposedInstruction
from multiverse.models import InstructionStatus
from orchestrator.collaborators import Collaborators
from orchestrator.signals import ProposalRecord, SignalBox
from planner.proposal_doc import UnreadableEdit, read_instructions

EDITED = "confirmed-proposal"


def _key(items: list[ProposedInstruction]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(i.instruction_type, " ".join(i.content.split()), tuple(i.supersedes)) for i in items]


def take_edits(crew: Collaborators, run_id: str, revision: int) -> None:
    """Record the proposal as the file now says it (when a person changed it), or say why not."""
    paths = crew.home.run(run_id)
    box = SignalBox(paths.signals)
    record = box.read(f"proposal-{revision}", ProposalRecord)
    if record is None:
        return
    shown = crew.home.relative(paths.feedback)
    try:
        text = paths.feedback.read_text(encoding="utf-8")
        edited = read_instructions(text)
    except (OSError, UnicodeDecodeError, UnreadableEdit) as error:
        reason = error.strerror if isinstance(error, OSError) else str(error)
        _tell(crew, run_id, (
            f"Your edit of `{shown}` was ignored: {reason}. The proposal as the Planner wrote "
            "it is confirmed. To change instructions now, use `multiverse modify` on your next "
            "run, or correct the table before you confirm."
        ))  # fmt: skip
        return
    if _key(edited) == _key(record.proposal.instructions):
        return
    active = {
        row.instruction_id
        for row in crew.instructions.rows()
        if row.status is InstructionStatus.ACTIVE and row.run_id != run_id
    }
    dropped = sorted({s for i in edited for s in i.supersedes} - active)
    kept = [i.model_copy(update={"supersedes": [s for s in i.supersedes if s in active]})
            for i in edited]  # fmt: skip
    proposal = record.proposal.model_copy(update={"instructions": kept})
    box.write(EDITED, ProposalRecord(revision=revision, proposal=proposal,
                                     modification=record.modification))  # fmt: skip
    planned = record.proposal.instructions
    before = {(i.instruction_type, " ".join(i.content.split())) for i in planned}
    changed = sorted(
        {
            i.instruction_type
            for i in kept
            if (i.instruction_type, " ".join(i.content.split())) not in before
        }
    )
    removed = sorted({i.instruction_type for i in planned} - {i.instruction_type for i in kept})
    parts = [f"changed or added: {', '.join(changed)}" if changed else ""]
    parts.append(f"removed: {', '.join(removed)}" if removed else "")
    parts.append(
        f"supersedes ignored for {', '.join(dropped)} (not an ACTIVE instruction of an earlier run)"
        if dropped
        else ""
    )
    summary = "; ".join(p for p in parts if p) or "reordered"
    _tell(crew, run_id, f"Your edits of `{shown}` are what was confirmed ({summary}).")


def _tell(crew: Collaborators, run_id: str, text: str) -> None:
    crew.speaker.tell(Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text}))
