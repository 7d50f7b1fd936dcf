"""Phase 0 (SPEC §6): plan, set up, propose, ask, handle the answer, T02–T04, complete.

Also here: a proposal edited by hand before CONFIRM.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from multiverse.atomic import atomic_write_text
from multiverse.home import PHASE_FOLDERS
from multiverse.models import (
    AssetType,
    InstructionStatus,
    MajorStage,
    Phase,
    Status,
    UserInstruction,
)
from multiverse.roles import Message, MessageKind, ProducedFile, ProposedInstruction
from multiverse.spec import RequestSpec
from orchestrator.crew import Collaborators
from orchestrator.decide import DecisionKind, FailureRecord, Mark, RunView, Step
from orchestrator.evidence import ModifyRequest, ProposalRecord, SignalBox, archive_response
from orchestrator.learning import highest_instruction_number, supersede_archived, superseded_by
from orchestrator.perform.catalog import refresh_inputs, register
from orchestrator.perform.ending import StepFailed, cancel
from orchestrator.perform.master import run_core_task
from orchestrator.perform.roles import checked_tasks, plan_context
from planner.proposal_doc import (
    UnreadableEdit,
    read_instructions,
    render_proposal,
    spec_with_edits,
)

EDITED = "confirmed-proposal"
log = structlog.get_logger(__name__)


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


PHASE0_NAME = "INSTRUCTION_AMENDMENT"
PHASE0_PURPOSE = "Set up the run and agree the run's instructions with the user."


def plan_phase0(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Planner writes T00, T02, T03, T04 of stage P0-S01."""
    plan = crew.planner.plan_phase0(plan_context(crew, view))
    tables = crew.run(view.run_id)
    if tables.phases.get("P0") is None:
        tables.phases.insert(
            Phase(
                phase_id="P0",
                run_id=view.run_id,
                phase_name=PHASE0_NAME,
                phase_purpose=PHASE0_PURPOSE,
            )
        )
    if tables.stages.get("P0-S01") is None:
        tables.stages.insert(
            MajorStage(
                stage_id="P0-S01",
                run_id=view.run_id,
                phase_id="P0",
                stage_name="Set-up and amendment",
                stage_goal="A confirmed constitution, a fresh catalog and a first analysis.",
                execution_order=1,
            )
        )
    tables.tasks.insert(*checked_tasks(plan.tasks, view.run_id, "P0-S01"))


def set_up_run(crew: Collaborators, view: RunView, step: Step) -> None:
    """T00: the run's folders and outputs/<run_id>/."""
    paths = crew.home.run(view.run_id)
    for folder in (
        paths.db,
        paths.signals,
        paths.logs,
        paths.outputs,
        *(paths.phase_workspace(name) for name in PHASE_FOLDERS),
    ):
        folder.mkdir(parents=True, exist_ok=True)
    crew.run(view.run_id).tasks.compare_and_set("T00", Status.PENDING, status=Status.COMPLETED)


def propose(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Planner's amendment proposal, revision `step.revision`."""
    box = SignalBox(crew.home.run(view.run_id).signals)
    # MODIFY is cumulative: every text since the first proposal is applied, in order.
    texts = [box.read(f"modify-{n}", ModifyRequest) for n in range(1, step.revision + 1)]
    every = [asked.text for asked in texts if asked is not None]
    asked = box.read(f"modify-{step.revision}", ModifyRequest)
    modification = asked.text if asked else None
    context = plan_context(crew, view, modification, every)
    proposal = crew.planner.propose(context)
    text = render_proposal(proposal, view.run_id, context.learning)
    paths = crew.home.run(view.run_id)
    atomic_write_text(paths.feedback, text)
    if proposal.spec is not None:  # the run's understanding, before the record marks it done
        write_spec(paths.spec, proposal.spec)
    box.write(
        f"proposal-{step.revision}",
        ProposalRecord(revision=step.revision, proposal=proposal, modification=modification),
    )


def ask(crew: Collaborators, view: RunView, step: Step) -> None:
    """The Communicator presents the proposal; the run waits for the answer."""
    paths = crew.home.run(view.run_id)
    box = SignalBox(paths.signals)
    name = f"asked-{step.revision}"
    if name not in view.evidence:
        record = box.read(f"proposal-{step.revision}", ProposalRecord)
        summary = record.proposal.understanding if record else ""
        facts = {"proposal_path": crew.home.relative(paths.feedback), "summary": summary}
        if record is not None and record.modification:
            # A revision follows the user's MODIFY: the one answer its wording may acknowledge.
            facts["modification"] = record.modification
        crew.speaker.tell(
            Message(kind=MessageKind.PROPOSAL, run_id=view.run_id, facts=facts), once=name
        )
        box.write(name, Mark(revision=step.revision))
    crew.process_runs.compare_and_set(
        view.run_id, Status.PENDING, status=Status.AWAITING_CONFIRMATION
    )


def handle_response(crew: Collaborators, view: RunView, step: Step) -> None:
    """CONFIRM, MODIFY, CANCEL, or a refusal of anything else (SPEC §6.5)."""
    assert step.decision is not None
    paths = crew.home.run(view.run_id)
    box = SignalBox(paths.signals)
    decision = step.decision
    run_id = view.run_id
    if decision.kind in (DecisionKind.INVALID, DecisionKind.RETRY):
        text = decision.text or "RETRY (a retry is for a failed run; this one waits for you)"
        crew.speaker.tell(
            Message(kind=MessageKind.ANSWER_REFUSED, run_id=run_id, facts={"text": text})
        )
        _archive_response(crew, run_id, "refused")
        return
    if decision.kind is DecisionKind.CANCEL:  # `next_step` asks for CANCEL itself, first
        cancel(crew, view, step)
        return
    if decision.kind is DecisionKind.CONFIRM:
        take_edits(crew, run_id, step.revision)  # before the mark: a crash redoes both
        freeze_spec(crew, run_id, step.revision)
        box.write("confirmed", Mark(revision=step.revision))
    else:
        box.write(
            f"modify-{step.revision + 1}",
            ModifyRequest(revision=step.revision + 1, text=decision.text),
        )
    crew.speaker.tell(
        Message(
            kind=MessageKind.ANSWER_RECEIVED,
            run_id=run_id,
            facts={"answer": decision.kind.value, "text": decision.text},
        )
    )
    crew.process_runs.compare_and_set(run_id, Status.AWAITING_CONFIRMATION, status=Status.PENDING)
    _archive_response(crew, run_id, decision.kind.value.lower())


def write_spec(path: Path, spec: RequestSpec) -> None:
    """runs/<run_id>/spec.json, written whole (atomically)."""
    atomic_write_text(path, spec.model_dump_json(indent=2) + "\n")


def freeze_spec(crew: Collaborators, run_id: str, revision: int) -> None:
    """CONFIRM freezes the confirmed proposal's spec in spec.json (again after a crash: the
    same file); a proposal without a spec leaves none."""
    box = SignalBox(crew.home.run(run_id).signals)
    record = box.read(f"proposal-{revision}", ProposalRecord)
    if record is None or record.proposal.spec is None:
        return
    spec = record.proposal.spec.model_copy(update={"confirmed": True})
    edited = box.read(EDITED, ProposalRecord)  # the table as the person left it, if edited
    if edited is not None and edited.revision == revision:
        spec = spec_with_edits(spec, record.proposal.instructions, edited.proposal.instructions)
    write_spec(crew.home.run(run_id).spec, spec)
    log.info("spec_frozen", run_id=run_id, revision=revision, charts=len(spec.charts),
             questions=len(spec.questions))  # fmt: skip


def _archive_response(crew: Collaborators, run_id: str, label: str) -> None:
    archive_response(crew.home.run(run_id), label)


def write_instructions(crew: Collaborators, view: RunView, step: Step) -> None:
    """T02: the confirmed instructions become ACTIVE rows; those they replace SUPERSEDED."""
    box = SignalBox(crew.home.run(view.run_id).signals)
    confirmed = box.read("confirmed", Mark)
    # The proposal as the person left the file when confirming, if they edited it.
    record = box.read(EDITED, ProposalRecord) or box.read(
        f"proposal-{confirmed.revision if confirmed else 0}", ProposalRecord
    )
    if record is None:
        raise RuntimeError(f"run {view.run_id} is confirmed but its proposal is missing")
    run_id = view.run_id

    def amend(rows: list[UserInstruction]) -> list[UserInstruction]:
        if any(row.run_id == run_id for row in rows):
            return rows  # already written before a crash
        # Ids are global: archived runs keep theirs (read under this table's lock, where an
        # archive has copied a row to its shard before it leaves this table).
        number = highest_instruction_number(crew, rows)
        replaced: dict[str, str] = {}
        for item in record.proposal.instructions:
            number += 1
            new_id = f"I{number:04d}"
            rows.append(
                UserInstruction(
                    instruction_id=new_id,
                    run_id=run_id,
                    instruction_type=item.instruction_type,
                    content=item.content,
                    justification=item.justification,
                )
            )
            replaced.update({old: new_id for old in item.supersedes})
        return [
            row.model_copy(
                update={
                    "status": InstructionStatus.SUPERSEDED,
                    "superseded_by_id": replaced[row.instruction_id],
                }
            )
            if row.instruction_id in replaced and row.status is InstructionStatus.ACTIVE
            else row
            for row in rows
        ]

    crew.store.modify(crew.instructions.spec, crew.instructions.path, amend)
    supersede_archived(crew, superseded_by(record, crew.instructions.rows(), run_id))
    register(
        crew,
        run_id,
        "T02",
        [
            ProducedFile(
                path=crew.home.relative(crew.instructions.path),
                asset_type=AssetType.USER_INSTRUCTIONS,
                summary="Every confirmed instruction of every run, ACTIVE or SUPERSEDED.",
            )
        ],
    )
    crew.run(run_id).tasks.compare_and_set("T02", Status.PENDING, status=Status.COMPLETED)


def build_catalog(crew: Collaborators, view: RunView, step: Step) -> None:
    """T03: assets/ and guidelines/ into the catalog, incrementally."""
    refresh_inputs(crew, view.run_id)
    crew.run(view.run_id).tasks.compare_and_set("T03", Status.PENDING, status=Status.COMPLETED)


def first_analysis(crew: Collaborators, view: RunView, step: Step) -> None:
    """T04: the Executor's first analysis, registered in the catalog (no tool tasks in P0)."""
    run_core_task(crew, view, step, post_tools=False)


def complete_phase0(crew: Collaborators, view: RunView, step: Step) -> None:
    """P0 COMPLETED; P1–P4 PENDING from the phase template (SPEC §6.7)."""
    tables = crew.run(view.run_id)
    stage = tables.stages.get("P0-S01")
    if stage is not None and stage.status is Status.PENDING:
        tables.stages.update("P0-S01", status=Status.COMPLETED)
    template = crew.phase_template.rows()
    if not any(t.phase_id != "P0" for t in template):
        raise StepFailed(
            FailureRecord(
                role="system",
                phase_id="P0",
                error=(
                    f"the phase template {crew.home.relative(crew.home.phase_template)} "
                    "has no phases"
                ),
            )
        )
    run_id = view.run_id

    def advance(rows: list[Phase]) -> list[Phase]:
        present = {row.phase_id for row in rows}
        rows = [
            row.model_copy(update={"status": Status.COMPLETED})
            if row.phase_id == "P0" and row.status is Status.PENDING
            else row
            for row in rows
        ]
        rows += [
            Phase(
                phase_id=t.phase_id,
                run_id=run_id,
                phase_name=t.phase_name,
                phase_purpose=t.phase_purpose,
            )
            for t in template
            if t.phase_id not in present and t.phase_id != "P0"
        ]
        return rows

    crew.store.modify(tables.phases.spec, tables.phases.path, advance)
