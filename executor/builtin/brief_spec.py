"""What the evidence brief must be, read from the run's confirmed instructions.

Pure. The builtin Planner wrote the instructions from the request and every MODIFY; a person
may have edited them in the proposal before confirming. They are read back with the same rules
(`multiverse.asks`), so what was confirmed is what is done: the question (GOAL), the audience,
the length, the language, the charts, and every MODIFY text for ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from executor.builtin.relevance import purpose_focus
from multiverse import asks
from multiverse.models import InstructionStatus, UserInstruction


@dataclass(frozen=True)
class ChartWanted:
    """A chart the instructions ask for, and the table file they name for it (if any)."""

    ask: asks.ChartAsk
    source: str | None


@dataclass(frozen=True)
class BriefSpec:
    """The brief's question, reader, length, language, charts and ranking words."""

    question: str
    asked_kind: str | None
    audience: str | None
    length: asks.Length
    length_stated: bool
    language: str
    charts: list[ChartWanted] = field(default_factory=list)
    focus: str = ""  # MODIFY texts and the task's purpose: more words to rank facts by

    @property
    def query(self) -> str:
        """All the words the facts are ranked against."""
        # Not the audience: "for the board" says who reads, not which facts matter.
        question = self.question.replace(self.audience, " ") if self.audience else self.question
        return " ".join(part for part in (question, self.focus) if part)


def modification_focus(text: str) -> str:
    """The subject words of the MODIFY texts: what they leave out, the lengths and the charts
    they ask for are constraints, not subjects (the Korean report left out ranks nothing)."""
    for phrase in asks.leave_outs(text):
        text = text.replace(phrase, " ")
    return purpose_focus(text)


def _by_type(instructions: list[UserInstruction], run_id: str) -> dict[str, str]:
    own = [i for i in instructions if i.run_id == run_id and i.status is InstructionStatus.ACTIVE]
    return {i.instruction_type: i.content for i in own}


def charts_in(content: str) -> list[ChartWanted]:
    """The charts of a CHART instruction: each "; "-separated item's ask before its colon."""
    wanted = []
    for item in content.split(";"):
        head, _, rest = item.partition(":")
        named = [p for p in asks.paths_named(rest) if "/" in p]
        wanted += [ChartWanted(ask, named[0] if named else None) for ask in asks.chart_asks(head)]
    return wanted


def brief_spec(
    request: str, instructions: list[UserInstruction], run_id: str, purpose: str = ""
) -> BriefSpec:
    """The brief asked for by this run's ACTIVE instructions (the request where one is missing)."""
    found = _by_type(instructions, run_id)
    question = found.get("GOAL", request).strip()
    length = asks.length_asked(found.get("LENGTH", ""), pages_first=True)
    # A length the Planner filled in by default may be kept shorter; one asked for is kept.
    stated = length is not None and "default" not in found.get("LENGTH", "").casefold()
    if length is None:
        length = asks.length_asked(question) or asks.default_length(
            asks.deliverable_asked(question)
        )
        stated = asks.length_asked(question) is not None
    language = asks.language_asked(found.get("LANGUAGE", "")) or asks.script_language(question)
    audience = found.get("AUDIENCE", "").strip().rstrip(".") or asks.audience_asked(question)
    kind = asks.deliverable_asked(question)
    charts = charts_in(found["CHART"]) if "CHART" in found else []
    if "CHART" not in found and "GOAL" not in found:
        charts = [ChartWanted(ask, None) for ask in asks.chart_asks(question)]
    focus = " ".join(
        part
        for part in (modification_focus(found.get("USER_MODIFICATION", "")), purpose_focus(purpose))
        if part
    )
    return BriefSpec(
        question=question,
        asked_kind=kind[0] if kind else None,
        audience=audience or None,
        length=length,
        length_stated=stated,
        language=language,
        charts=charts,
        focus=focus,
    )
