"""The builtin amendment proposal (SPEC §6.4): the request and every MODIFY, read by rules.

`planner.builtin.understanding` reads the constraints; this module turns them into one
instruction per type (GOAL, DELIVERABLE, AUDIENCE, LENGTH, SOURCES, CHART, LANGUAGE, FORMAT,
RESEARCH and STYLE when they apply, USER_MODIFICATION with every MODIFY text in order) and a
visible account of how the request was understood: each constraint with where it came from,
what was not understood offline, what each MODIFY changed, which past work is reused. Every
ACTIVE instruction of an earlier run with the same type and a different content is a conflict
that the new instruction supersedes.
"""

from __future__ import annotations

from pathlib import Path

from multiverse.models import AssetType, InstructionStatus, UserInstruction
from multiverse.roles import PlanContext, Proposal, ProposedInstruction
from multiverse.store import render_table
from planner.builtin.understanding import (
    Understanding,
    guideline_docs,
    modifications,
    sources_instruction,
    understand,
)

GOAL_LIMIT = 1000
Instructions = dict[str, ProposedInstruction]


def _instruction(kind: str, content: str, justification: str) -> ProposedInstruction:
    return ProposedInstruction(instruction_type=kind, content=content, justification=justification)


def past_work(context: PlanContext) -> list[tuple[str, str, float]]:
    """The deliverables of the ranked past runs: (path, run id, score), best run first."""
    ranked = {past.run_id: past.score for past in context.learning.past_runs}
    rows = [
        (entry.file_path, entry.run_id or "", ranked[entry.run_id])
        for entry in context.catalog
        if entry.run_id in ranked
        and entry.asset_type is AssetType.FINAL_OUTPUT
        and entry.file_path.endswith(".md")
        and (Path(context.home) / entry.file_path).is_file()
    ]
    return sorted(rows, key=lambda row: -row[2])


def base_instructions(context: PlanContext, understood: Understanding) -> Instructions:
    """The instructions of what was understood, of the sources and of the guidelines."""
    goal = understood.goal or "(empty request)"
    if len(goal) > GOAL_LIMIT:
        goal = goal[: GOAL_LIMIT - 1].rstrip() + "…"
    found = {"GOAL": _instruction("GOAL", goal, "The request as written is the run's goal.")}
    deliverable = understood.deliverable
    found["DELIVERABLE"] = _instruction(
        "DELIVERABLE",
        f"{deliverable.value[0].upper()}{deliverable.value[1:]}, as report.md and report.html "
        f"in outputs/{context.run_id}/.",
        f"From {deliverable.origin}.",
    )
    if understood.audience is not None:
        found["AUDIENCE"] = _instruction(
            "AUDIENCE", f"{understood.audience.value}.", f"From {understood.audience.origin}."
        )
    found["LENGTH"] = _instruction(
        "LENGTH", f"{understood.length.value}, ±15 %.", f"From {understood.length.origin}."
    )
    found["SOURCES"] = _instruction(
        "SOURCES",
        sources_instruction(understood),
        "The files of assets/ and the catalog"
        + (", less what you asked to leave out." if understood.left_out else "."),
    )
    if understood.charts:
        found["CHART"] = _instruction(
            "CHART",
            "; ".join(chart.instruction() for chart in understood.charts) + ".",
            "From " + "; ".join(chart.origin for chart in understood.charts) + ".",
        )
    found["LANGUAGE"] = _instruction(
        "LANGUAGE", f"Write in {understood.language.value}.", f"From {understood.language.origin}."
    )
    found["FORMAT"] = _instruction(
        "FORMAT",
        "Markdown with headings and short sections; every fact with its source and location.",
        "House default.",
    )
    if understood.research is not None:
        found["RESEARCH"] = _instruction(
            "RESEARCH",
            "Complement the sources with a web search for outside information.",
            f"From {understood.research.origin}.",
        )
    guidelines = guideline_docs(context)
    if guidelines:
        content = f"Follow the format and style rules of {', '.join(guidelines)}."
        found["STYLE"] = _instruction("STYLE", content, "Guideline documents present.")
    texts = modifications(context)
    if texts:
        content = " ".join(f"({n}) {' '.join(t.split())}" for n, t in enumerate(texts, start=1))
        found["USER_MODIFICATION"] = _instruction(
            "USER_MODIFICATION", content, "Your modifications, verbatim and in order."
        )
    return found


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _short(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def with_supersedes(
    instructions: list[ProposedInstruction], past: list[UserInstruction], run_id: str
) -> tuple[list[ProposedInstruction], list[str], int]:
    """Mark what each instruction supersedes; returns them, the conflict lines, the agreements."""
    active = [p for p in past if p.status is InstructionStatus.ACTIVE and p.run_id != run_id]
    result, conflicts, agreements = [], [], 0
    for item in instructions:
        same_type = [p for p in active if p.instruction_type == item.instruction_type]
        agreements += sum(1 for p in same_type if _same(p.content, item.content))
        replaced = [p for p in same_type if not _same(p.content, item.content)]
        for old in replaced:
            conflicts.append(
                f"{item.instruction_type}: {old.instruction_id} of {old.run_id} says "
                f'"{_short(old.content)}" but the proposal says "{_short(item.content)}"; '
                f"{old.instruction_id} would be superseded."
            )
        ids = [p.instruction_id for p in replaced]
        result.append(item.model_copy(update={"supersedes": ids}) if ids else item)
    return result, conflicts, agreements


def propose(context: PlanContext) -> Proposal:
    """The offline proposal: the request and every MODIFY since the first proposal, in order."""
    understood = understand(context)
    instructions, conflicts, agreements = with_supersedes(
        list(base_instructions(context, understood).values()),
        context.past_instructions,
        context.run_id,
    )
    return Proposal(
        understanding=understanding_text(context, understood, len(conflicts), agreements),
        instructions=instructions,
        conflicts=conflicts,
        made_offline=True,
    )


def _table(columns: list[str], rows: list[list[str]]) -> str:
    return "".join(render_table(columns, rows)).rstrip("\n")


def understanding_text(
    context: PlanContext, understood: Understanding, conflicts: int, agree: int
) -> str:
    """How the request was understood: a table of constraints with their origin, then what was
    not understood, what each MODIFY changed, the past work reused and the learning context."""
    rows = [[item.kind.lower(), item.value, item.origin] for item in understood.items()]
    used = [s for s in understood.sources if s not in understood.left_out]
    rows.append(
        [
            "sources",
            f"{len(used)} file(s): " + ", ".join(f"`{s}`" for s in used) if used else "none",
            "assets/ and the catalog",
        ]
    )
    if understood.research is None:
        rows.append(["web search", "none", "the request asks for no outside information"])
    parts = [
        "Read offline by fixed rules; each line says where it came from.",
        _table(["asked", "understood as", "from"], rows),
        "**Not understood offline** (nothing was guessed; a model would read these):",
    ]
    missing = [f'- "{i.value}" ({i.kind.lower()}): {i.origin}' for i in understood.not_understood]
    parts.append(
        "\n".join(missing) if missing else "- nothing: every part of the request was read."
    )
    if understood.changes:
        parts += [
            "**Changed by your modifications** (all applied, in order):",
            "\n".join(f"- {line}" for line in understood.changes),
        ]
    reused = past_work(context)
    if reused:
        parts += [
            "**Past work reused** (the deliverables of similar past runs, read as references):",
            "\n".join(f"- `{path}` (run {run}, BM25 {score:.3f})" for path, run, score in reused),
        ]
    past = len(context.learning.past_runs)
    parts.append(
        f"Learning context: {past} similar past run(s); {agree} earlier instruction(s) agree, "
        f"{conflicts} conflict."
        if past or context.past_instructions
        else "Learning context: first run, no past runs."
    )
    return "\n\n".join(parts)
