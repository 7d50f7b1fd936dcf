"""The builtin amendment proposal (SPEC §6.4): a keyword reading of the request, made offline.

One instruction per type: GOAL, DELIVERABLE, SOURCES, FORMAT, LANGUAGE, and when they apply
VISUALS, RESEARCH, STYLE. On MODIFY the user's text is kept verbatim (USER_MODIFICATION) and the
deliverable, format, visuals, research and language it mentions replace the earlier reading; a
negation ("no chart", "차트 없이") removes the visuals or research it names. Every ACTIVE
instruction of an earlier run with the same type and a different content is a conflict that the
new instruction supersedes.
"""

from __future__ import annotations

from multiverse.contracts import PlanContext, Proposal, ProposedInstruction
from multiverse.models import InstructionStatus, UserInstruction
from planner.builtin.reading import (
    Reading,
    chart_words,
    deliverables,
    format_words,
    length_limit,
    named_language,
    negated,
    outside_words,
    read_request,
)
from planner.builtin.sources import guideline_docs, original_sources
from planner.builtin.tasks import describe
from planner.mode import strip_front_matter

GOAL_LIMIT = 1000
Instructions = dict[str, ProposedInstruction]


def _instruction(kind: str, content: str, justification: str) -> ProposedInstruction:
    return ProposedInstruction(instruction_type=kind, content=content, justification=justification)


def _deliverable(labels: list[str], why: str) -> ProposedInstruction:
    named = " and ".join(f"{'an' if label[0] in 'aeiou' else 'a'} {label}" for label in labels)
    content = f"Deliver {named} as markdown in the run's outputs folder."
    return _instruction("DELIVERABLE", content, why)


def _format(length: str | None, formats: list[str], why: str) -> ProposedInstruction:
    parts = ["Markdown with headings, short paragraphs and tables for figures"]
    if formats:
        parts.append("using " + ", ".join(formats))
    if length:
        parts.append(length)
    return _instruction("FORMAT", "; ".join(parts) + ".", why)


def _visuals(words: list[str], why: str) -> ProposedInstruction:
    content = "Include charts of the main figures as self-contained HTML next to the deliverable."
    return _instruction("VISUALS", content, f"{why} ({', '.join(words)}).")


def _research(words: list[str], why: str) -> ProposedInstruction:
    content = "Complement the sources with a web search for recent outside information."
    return _instruction("RESEARCH", content, f"{why} ({', '.join(words)}).")


def base_instructions(context: PlanContext, reading: Reading) -> Instructions:
    """The instructions read from the request, the sources and the guidelines."""
    goal = strip_front_matter(context.request).strip() or "(empty request)"
    if len(goal) > GOAL_LIMIT:
        goal = goal[: GOAL_LIMIT - 1].rstrip() + "…"
    found = {
        "GOAL": _instruction("GOAL", goal, "The request as written is the run's goal."),
        "DELIVERABLE": _deliverable(
            reading.deliverables, "Named in the request (default: report)."
        ),
    }
    sources = original_sources(context)
    if sources:
        content = f"Work from the {len(sources)} source files: {', '.join(sources)}."
        found["SOURCES"] = _instruction("SOURCES", content, "Present in assets/ and the catalog.")
    else:
        content = "No source files in assets/: work from the request text alone."
        found["SOURCES"] = _instruction("SOURCES", content, "assets/ holds no files.")
    why = "Stated in the request." if reading.length or reading.formats else "House default."
    found["FORMAT"] = _format(reading.length, reading.formats, why)
    if reading.charts:
        found["VISUALS"] = _visuals(reading.charts, "The request asks for a visual")
    if reading.outside:
        found["RESEARCH"] = _research(reading.outside, "The request asks for outside information")
    found["LANGUAGE"] = _instruction(
        "LANGUAGE",
        f"Write the deliverables in {reading.language}.",
        f"The request is written in (or asks for) {reading.language}.",
    )
    guidelines = guideline_docs(context)
    if guidelines:
        content = f"Follow the format and style rules of {', '.join(guidelines)}."
        found["STYLE"] = _instruction("STYLE", content, "Guideline documents present.")
    return found


def revise(found: Instructions, text: str, reading: Reading) -> tuple[Instructions, list[str]]:
    """Apply a MODIFY text; returns the new instructions and what changed, in words."""
    revised = dict(found)
    changes = []
    why = "Your modification asks for it."
    labels = deliverables(text)
    if labels:
        revised["DELIVERABLE"] = _deliverable(labels, why)
        changes.append(f"deliverable is now {' and '.join(labels)}")
    length = length_limit(text)
    formats = format_words(text)
    if length or formats:
        revised["FORMAT"] = _format(length or reading.length, formats or reading.formats, why)
        changes.append("format follows your text")
    no = negated(text)
    for kind, words, build in (
        ("VISUALS", chart_words(text), _visuals),
        ("RESEARCH", outside_words(text), _research),
    ):
        if words and no:
            if revised.pop(kind, None) is not None:
                changes.append(f"{kind.lower()} removed")
        elif words:
            revised[kind] = build(words, "Your modification asks for it")
            changes.append(f"{kind.lower()} added")
    language = named_language(text)
    if language:
        revised["LANGUAGE"] = _instruction(
            "LANGUAGE", f"Write the deliverables in {language}.", why
        )
        changes.append(f"language is now {language}")
    revised["USER_MODIFICATION"] = _instruction(
        "USER_MODIFICATION", text.strip(), "Your modification, kept verbatim."
    )
    return revised, changes


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
    """The offline proposal, revised by `context.modification` when the user asked to MODIFY."""
    reading = read_request(context.request)
    found = base_instructions(context, reading)
    changes: list[str] | None = None
    if context.modification is not None and context.modification.strip():
        found, changes = revise(found, context.modification, reading)
    instructions, conflicts, agreements = with_supersedes(
        list(found.values()), context.past_instructions, context.run_id
    )
    understanding = _understanding(context, reading, changes, len(conflicts), agreements)
    return Proposal(
        understanding=understanding,
        instructions=instructions,
        conflicts=conflicts,
        made_offline=True,
    )


def _understanding(
    context: PlanContext, reading: Reading, changes: list[str] | None, conflicts: int, agree: int
) -> str:
    sources = original_sources(context)
    lines = [
        f"Request: {_short(strip_front_matter(context.request), 300)}",
        f"Deliverables detected: {', '.join(reading.deliverables)}"
        + (f", with charts ({', '.join(reading.charts)})" if reading.charts else "")
        + (f", {reading.length}" if reading.length else "")
        + ".",
        f"Sources available: {len(sources)} file(s): {describe(sources)}."
        if sources
        else "Sources available: none in assets/; the work relies on the request text.",
        f"Language: {reading.language}.",
    ]
    if reading.outside:
        lines.append(
            f"Outside information requested ({', '.join(reading.outside)}): a web search is "
            "planned before the consolidated analysis."
        )
    past = len(context.learning.past_runs)
    lines.append(
        f"Learning context: {past} similar past run(s); {agree} earlier instruction(s) agree, "
        f"{conflicts} conflict."
        if past or context.past_instructions
        else "Learning context: first run, no past runs."
    )
    if changes is not None:
        said = _short(context.modification or "", 300)
        done = "; ".join(changes) if changes else "kept as a verbatim instruction"
        lines.append(f'Revised after your modification "{said}": {done}.')
    lines.append("Made offline by the builtin engine: a keyword reading of the request, no model.")
    return "\n".join(f"- {line}" for line in lines)
