"""The builtin amendment proposal (SPEC §6.4, §6a): the request spec, and instructions derived
from it.

The request and every MODIFY since are read once, into the spec (`request_spec` below), and
checked against the files. Every instruction is derived from that spec and from nothing else
of the request: GOAL, DELIVERABLE, AUDIENCE, LENGTH, LANGUAGE, SOURCES, LEAVE_OUT (one per
group of files left out), CHART (one per drawable chart: table, measures, dimension,
aggregation, filters, series, top-N), QUESTION (one per question, with its answer when
checked), RESEARCH, FORMAT (with the format rules found), STYLE when guidelines exist, and
USER_MODIFICATION with every MODIFY text in order; in the requester's language. Every ACTIVE
instruction of an earlier run with the same type and a content none of the new ones has is a
conflict the first new instruction of that type supersedes.

Also here: the request spec the offline Planner reads (SPEC §6a): the request and every MODIFY
since, read by the offline rules against a light scan of the home, checked by the one validator.

Also here: why a request that asks questions is a run and not an answer at once (said in the
proposal and at `submit`), and whether a request is a question the tables answer at once (the
mode decision).
"""

from __future__ import annotations

from pathlib import Path

from multiverse.documents import look, why_unread
from multiverse.home import Home
from multiverse.models import AssetType, InstructionStatus, UserInstruction
from multiverse.roles import PlanContext, Proposal, ProposedInstruction
from multiverse.spec import Chart, HomeScan, Question, RequestSpec, check_spec, scan_home
from offline import read_request, why_run
from planner.proposal_doc import (
    ask_words,
    length_label,
    reading_words,
    render_spec,
    rule_words,
    short,
)
from planner.wording import language_name, words


def modifications(context: PlanContext) -> list[str]:
    """Every MODIFY text since the first proposal, in order."""
    texts = [text for text in context.modifications if text.strip()]
    if not texts and context.modification and context.modification.strip():
        texts = [context.modification]
    return texts


def read_spec(request: str, texts: list[str], scan: HomeScan, root: Path) -> RequestSpec:
    """A request and its MODIFY texts read by the rules, checked, with why it is a run."""
    return settle_spec(read_request(request, texts, scan, len(texts)), scan, root)


def settle_spec(spec: RequestSpec, scan: HomeScan, root: Path) -> RequestSpec:
    """A spec (the rules' or a model's) checked against the files, with why it is a run; a
    file that may not be read (a link leaving the home, a pipe) is never a source."""
    spec = check_spec(spec, scan, root)
    readable = [path for path in spec.sources if why_unread(look(root / path, root)) is None]
    spec = spec.model_copy(update={"sources": readable})
    return spec.model_copy(update={"why_run": why_run(spec)}) if spec.questions else spec


def request_spec(context: PlanContext) -> RequestSpec:
    """The run's request and every MODIFY since, read against the home and checked."""
    home = Home(Path(context.home))
    scan = scan_home(home, context.search_provider)
    return read_spec(context.request, modifications(context), scan, home.root)


def run_spec(context: PlanContext) -> RequestSpec:
    """The spec a later plan reads: the one CONFIRM froze, else (a run made before there were
    specs, or before CONFIRM) the request read afresh."""
    return context.spec if context.spec is not None else request_spec(context)


def answered_at_once(request: str, home: Path) -> RequestSpec | None:
    """The checked spec of a request whose every question the home's tables answer now; None
    when it asks none, asks more than its questions, or one has no answer yet."""
    scan = scan_home(Home(home))
    spec = read_spec(request, [], scan, home)
    if not spec.questions or spec.why_run:
        return None
    return spec


GOAL_LIMIT = 1000


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


def _why(reading_text: str) -> str:
    """A justification: the words that chose it, as a sentence."""
    return reading_text[:1].upper() + reading_text[1:] + "."


def shape_instructions(spec: RequestSpec, run_id: str) -> list[ProposedInstruction]:
    """GOAL, DELIVERABLE, AUDIENCE, LENGTH and LANGUAGE, from the spec."""
    lang = spec.language
    said = words(lang)
    goal = spec.request or "(empty request)"
    goal = goal if len(goal) <= GOAL_LIMIT else goal[: GOAL_LIMIT - 1].rstrip() + "…"
    asked = spec.deliverable_reading.phrase
    kind = (asked or spec.deliverable) if lang == "ko" else spec.deliverable
    deliverable = said["deliverable_asked" if asked else "deliverable_default"]
    found = [
        _instruction("GOAL", goal, said["goal_why"]),
        _instruction(
            "DELIVERABLE",
            deliverable.format(kind=kind, run_id=run_id),
            _why(reading_words(spec.deliverable_reading, lang)),
        ),
    ]
    if spec.audience:
        found.append(
            _instruction(
                "AUDIENCE", f"{spec.audience}.", _why(reading_words(spec.audience_reading, lang))
            )
        )
    found.append(
        _instruction(
            "LENGTH",
            said["length_value"].format(label=length_label(spec, lang)),
            _why(reading_words(spec.length_reading, lang)),
        )
    )
    language = language_name(spec.language, lang)
    found.append(
        _instruction(
            "LANGUAGE",
            said["language_value"].format(name=language),
            _why(reading_words(spec.language_reading, lang))
            if not spec.language_reading.phrase.startswith("written in ")
            else _why(said["written_in"].format(name=language)),
        )
    )
    return found


def source_instructions(spec: RequestSpec) -> list[ProposedInstruction]:
    """SOURCES (the files worked from, then those left out) and one LEAVE_OUT per group."""
    said = words(spec.language)
    excluded = [path for group in spec.left_out for path in group.files]
    content = (
        said["sources_value"].format(files=file_list_all(spec.sources))
        if spec.sources
        else said["sources_none"]
    )
    if excluded:
        content += said["sources_left_out"].format(files=file_list_all(excluded))
    found = [
        _instruction(
            "SOURCES", content, said["sources_why_less" if excluded else "sources_why"]
        )
    ]
    found += [
        _instruction(
            "LEAVE_OUT",
            said["leave_out_value"].format(files=file_list_all(group.files)),
            _why(reading_words(group.reading, spec.language)),
        )
        for group in spec.left_out
    ]
    return found


def file_list_all(paths: list[str]) -> str:
    """Every file in backticks (an instruction names them all: it is read back)."""
    return ", ".join(f"`{path}`" for path in paths)


def chart_instruction(chart: Chart, language: str) -> ProposedInstruction | None:
    """The CHART instruction of a drawable chart; None for one that cannot be drawn."""
    data = chart.data
    if not chart.drawable or data is None:
        return None
    said = words(language)
    extras = "".join(
        said["only"].format(column=f"`{column}`", values=", ".join(values))
        for column, values in data.filters.items()
    )
    if data.series_by:
        extras += said["series"].format(column=data.series_by)
    if data.top_n:
        extras += said["top"].format(count=data.top_n)
    aggregation = said[data.aggregation] if data.aggregation else said["kind_aggregation"]
    # An English head names the columns in plain words ("revenue eur by country"): a reader
    # of the instruction (and a brief that reads "<measure> by <dimension>") finds them so.
    measures = said["and"].join(_plain(name, language) for name in data.measures)
    dimension = (
        _plain(data.dimension, language)
        if data.dimension != "time"
        else said[data.frequency or "time"]
    )
    head = said["by"].format(measures=measures, dimension=dimension)
    content = said["chart_value"].format(
        head=head,
        title=chart.title,
        file=data.file,
        columns=ask_words(data, language),
        aggregation=aggregation,
        extras=extras,
    )
    return _instruction("CHART", content, _why(reading_words(chart.reading, language)))


def _plain(column: str, language: str) -> str:
    """A column's name in plain English words ("revenue_eur" → "revenue eur"); as it is in a
    text of another language (a value, never translated)."""
    return column.replace("_", " ") if language == "en" else column


def question_instruction(question: Question, language: str) -> ProposedInstruction:
    """The QUESTION instruction: the question in its words, with its checked answer."""
    said = words(language)
    phrase = short(question.reading.phrase)
    if question.answerable:
        content = said["question_value"].format(phrase=phrase, answer=question.answer)
    else:
        reason = short(question.reason or question.answer, 240)
        content = said["question_open"].format(phrase=phrase, reason=reason)
    return _instruction("QUESTION", content, _why(reading_words(question.reading, language)))


def work_instructions(spec: RequestSpec, guidelines: list[str]) -> list[ProposedInstruction]:
    """CHART, QUESTION, RESEARCH, FORMAT and STYLE, from the spec (and the guideline files)."""
    lang = spec.language
    said = words(lang)
    found = [made for chart in spec.charts if (made := chart_instruction(chart, lang))]
    found += [question_instruction(question, lang) for question in spec.questions]
    research = spec.research
    if research is not None:
        queries = "; ".join(f'"{short(query, 80)}"' for query in research.queries[:3])
        content = (
            said["research_value"].format(provider=research.provider, queries=queries)
            if research.provider
            else said["research_none"]
        )
        found.append(
            _instruction("RESEARCH", content, _why(reading_words(research.reading, lang)))
        )
    content = said["format_value"]
    if spec.format_rules:
        rules = "; ".join(
            f"{rule_words(rule, lang)} ({reading_words(rule.reading, lang)})"
            for rule in spec.format_rules
        )
        content += said["format_rules_value"].format(rules=rules)
    why = said["format_why_rules" if spec.format_rules else "format_why"]
    found.append(_instruction("FORMAT", content, why))
    if guidelines:
        files = file_list_all(guidelines)
        found.append(
            _instruction("STYLE", said["style_value"].format(files=files), said["style_why"])
        )
    return found


def derived_instructions(
    spec: RequestSpec, run_id: str, guidelines: list[str], texts: list[str]
) -> list[ProposedInstruction]:
    """Every instruction of the proposal, derived from the spec, in the order shown."""
    found = shape_instructions(spec, run_id)
    found += source_instructions(spec)
    found += work_instructions(spec, guidelines)
    if texts:
        content = " ".join(f"({n}) {' '.join(t.split())}" for n, t in enumerate(texts, start=1))
        found.append(
            _instruction(
                "USER_MODIFICATION", content, words(spec.language)["modification_why"]
            )
        )
    return found


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


# The types a model or a person may have written for what the spec calls by one name: an
# instruction of an earlier run is matched by what it governs, not by its spelling.
_KINDS = {
    "RESEARCH": ("WEB_SEARCH", "SEARCH", "WEB", "WEB_RESEARCH", "ONLINE_SEARCH", "OUTSIDE_INFO"),
    "LANGUAGE": ("LANG", "OUTPUT_LANGUAGE", "LOCALE"),
    "SOURCES": ("SOURCE", "DATA", "DATA_SOURCES", "INPUTS", "ASSETS", "REFERENCES", "MATERIALS"),
    "LEAVE_OUT": ("EXCLUDE", "EXCLUSION", "EXCLUSIONS", "EXCLUDED", "EXCLUDED_SOURCES"),
    "CHART": ("CHARTS", "VISUAL", "VISUALS", "VISUALIZATION", "GRAPH", "GRAPHS", "FIGURE"),
    "LENGTH": ("SIZE", "PAGES", "WORD_COUNT", "WORDS"),
    "AUDIENCE": ("READER", "READERS", "RECIPIENT"),
    "GOAL": ("OBJECTIVE", "PURPOSE", "AIM"),
    "QUESTION": ("QUESTIONS",),
}
_KIND_OF = {alias: kind for kind, aliases in _KINDS.items() for alias in (kind, *aliases)}


def instruction_kind(instruction_type: str) -> str:
    """The kind of thing an instruction governs: its type, or the spec's name for it."""
    return _KIND_OF.get(instruction_type.upper(), instruction_type.upper())


def superseding_research(
    spec: RequestSpec, past: list[UserInstruction], run_id: str
) -> list[ProposedInstruction]:
    """A RESEARCH instruction saying no web search is made, when the spec asks for none and an
    ACTIVE instruction of an earlier run asks for one: the contradiction is stated, not left."""
    if spec.research is not None:
        return []
    earlier = [p for p in past if p.status is InstructionStatus.ACTIVE and p.run_id != run_id
               and instruction_kind(p.instruction_type) == "RESEARCH"]  # fmt: skip
    if not earlier:
        return []
    said = words(spec.language)
    return [_instruction("RESEARCH", said["research_not_asked"], said["research_not_asked_why"])]


def with_supersedes(
    instructions: list[ProposedInstruction],
    past: list[UserInstruction],
    run_id: str,
    language: str = "en",
) -> tuple[list[ProposedInstruction], list[str], int]:
    """Mark what each instruction supersedes; returns them, the conflict lines, the agreements.

    A type proposed several times (CHART, QUESTION) conflicts with a past instruction whose
    content none of them has; the first of that type supersedes it.
    """
    active = [p for p in past if p.status is InstructionStatus.ACTIVE and p.run_id != run_id]
    said = words(language)
    result, conflicts, agreements = [], [], 0
    first: dict[str, int] = {}
    for index, item in enumerate(instructions):
        first.setdefault(instruction_kind(item.instruction_type), index)
    for index, item in enumerate(instructions):
        kind = instruction_kind(item.instruction_type)
        same_type = [p for p in active if instruction_kind(p.instruction_type) == kind]
        agreements += sum(1 for p in same_type if _same(p.content, item.content))
        if first[kind] != index:
            result.append(item)
            continue
        siblings = [i for i in instructions if instruction_kind(i.instruction_type) == kind]
        replaced = [p for p in same_type if not any(_same(p.content, s.content) for s in siblings)]
        for old in replaced:
            conflicts.append(
                said["conflict"].format(
                    kind=item.instruction_type,
                    old_id=old.instruction_id,
                    run=old.run_id,
                    old=short(old.content, 120),
                    new=short(item.content, 120),
                )
            )
        ids = [p.instruction_id for p in replaced]
        result.append(item.model_copy(update={"supersedes": ids}) if ids else item)
    return result, conflicts, agreements


def propose(
    context: PlanContext, guidelines: list[str], spec: RequestSpec | None = None
) -> Proposal:
    """The proposal as the rendering of a spec: the rules' reading of the request and every
    MODIFY since, or `spec` (a model's reading, checked), and the instructions derived from it
    (`guidelines`: the home's guideline documents, which FORMAT and STYLE cite)."""
    offline = spec is None
    spec = request_spec(context) if spec is None else spec
    texts = modifications(context)
    derived = derived_instructions(spec, context.run_id, guidelines, texts)
    derived += superseding_research(spec, context.past_instructions, context.run_id)
    instructions, conflicts, agreements = with_supersedes(
        derived,
        context.past_instructions,
        context.run_id,
        spec.language,
    )
    return Proposal(
        understanding=understanding_text(context, spec, len(conflicts), agreements, offline),
        instructions=instructions,
        conflicts=conflicts,
        made_offline=offline,
        spec=spec,
    )


def understanding_text(
    context: PlanContext, spec: RequestSpec, conflicts: int, agree: int, offline: bool = True
) -> str:
    """The rendered spec (a model's is rendered below the proposal's own words), then the past
    work reused and the learning context."""
    said = words(spec.language)
    parts = [render_spec(spec, offline=True) if offline else said["read_by_model"]]
    reused = past_work(context)
    if reused:
        lines = [
            said["past_item"].format(path=path, run=run, score=f"{score:.3f}")
            for path, run, score in reused
        ]
        parts.append(f"{said['past_work']}\n\n" + "\n".join(lines))
    past = len(context.learning.past_runs)
    if past or context.past_instructions:  # a first run: the learning section says so once
        parts.append(said["learning_line"].format(past=past, agree=agree, conflicts=conflicts))
    return "\n\n".join(parts)
