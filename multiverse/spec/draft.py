"""The spec as a model fills it (SPEC §6a): a JSON schema made for one home, whose enums are
its actual files and each table's actual columns, and the conversion of an answer into a
`RequestSpec` (pure: no I/O, no model call here).

A small model cannot name a column that does not exist: a chart or a question is one of
several shapes, one per table, each allowing only that table's measures and label columns
(a discriminated union on `file`). What the schema cannot hold (a category value, a period
label) is checked by the one validator afterwards, as the rules' reading is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from multiverse.spec import (
    Aggregation,
    Chart,
    ChartAsk,
    Computation,
    ComputeKind,
    FileSet,
    FormatRule,
    FormatRuleKind,
    Frequency,
    Lookup,
    Mode,
    Question,
    Reading,
    RequestSpec,
    Research,
)
from multiverse.spec.check import HomeScan, ScannedFile

MAX_TABLES = 12  # tables offered to the model, most relevant first (the schema grows with each)
ORIGIN = "model"


class _Draft(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Wording(_Draft):
    """The request's own words for one item."""

    phrase: str = Field(default="", description="the words of the request that asked it")


def _literal(values: list[str]) -> Any:
    """`Literal[...]` of the values (a schema enum)."""
    return Literal[tuple(values)]


def draft_model(scan: HomeScan, tables: list[ScannedFile] | None = None) -> type[BaseModel]:
    """The answer schema for this home: files, and per table its measures and labels."""
    files = [item.path for item in scan.files] or ["(none)"]
    offered = (tables if tables is not None else scan.tables())[:MAX_TABLES]
    charts = [_chart_model(index, item) for index, item in enumerate(offered)]
    questions = [m for index, item in enumerate(offered) for m in _question_models(index, item)]
    fields: dict[str, Any] = {
        "mode": (Mode, Field(description="simple: one answer from the files; run: a deliverable")),
        "why_run": (str, Field(default="", description="why a question needs a whole run")),
        "deliverable": (str, Field(default="brief", description="memo, report, brief, answer…")),
        "audience": (str | None, None),
        "length_words": (int | None, Field(default=None, ge=1)),
        "language": (str, Field(default="en", description="ISO 639-1 code of the request")),
        "left_out": (_list_of(_left_out_model(files)), Field(default_factory=list)),
        "format_rules": (_list_of(_rule_model()), Field(default_factory=list)),
        "research": (list[str], Field(default_factory=list, description="web search queries, "
                                      "only when the request asks for outside information")),
        "not_understood": (list[str], Field(default_factory=list)),
    }  # fmt: skip
    if charts:
        union: Any = Annotated[_union(charts), Field(discriminator="file")]
        fields["charts"] = (_list_of(union), Field(default_factory=list))
    if questions:
        fields["questions"] = (_list_of(_union(questions)), Field(default_factory=list))
    model: type[BaseModel] = create_model("SpecDraft", __base__=_Draft, **fields)
    return model


def _list_of(item: Any) -> Any:
    """`list[item]` for a type made at run time."""
    return list[item]


def _union(models: list[type[BaseModel]]) -> Any:
    if len(models) == 1:
        return models[0]
    union: Any = models[0]
    for model in models[1:]:
        union = union | model
    return union


def _left_out_model(files: list[str]) -> type[BaseModel]:
    return create_model(
        "LeftOut",
        __base__=Wording,
        files=(_list_of(_literal(files)), Field(min_length=1)),
    )


def _rule_model() -> type[BaseModel]:
    return create_model(
        "Rule", __base__=Wording, rule=(FormatRuleKind, ...), value=(str, "")
    )


def _columns(item: ScannedFile) -> tuple[list[str], list[str], bool]:
    """A table's measures (a wide table's group by its label too), its label columns, and
    whether it has a time axis."""
    profile = item.profile
    assert profile is not None
    measures = [c.name for c in profile.columns if c.role == "measure"]
    if profile.wide is not None:
        measures = [profile.wide.label, *[m for m in measures if m not in profile.wide.columns]]
    labels = [c.name for c in profile.columns if c.role in ("category", "identifier")]
    timed = profile.time is not None
    return measures or ["(none)"], labels, timed


def _label_or_none(labels: list[str]) -> tuple[Any, None]:
    """A field naming one of a table's label columns, or nothing; only nothing (null) for a
    table without one, so that no free text can stand where a column is meant."""
    return (_literal(labels) | None if labels else None, None)


def _filter_model(index: int, item: ScannedFile) -> type[BaseModel]:
    """One filter of a table: a label (or time) column and the values it keeps."""
    _measures, labels, timed = _columns(item)
    assert item.profile is not None
    times = list(item.profile.time.columns[:1]) if timed and item.profile.time else []
    return create_model(
        f"Filter{index}",
        __base__=_Draft,
        column=(_literal([*labels, *times] or ["(none)"]), ...),
        values=(list[str], Field(min_length=1, description="as written in the table; for a "
                                 "time column a period or a range such as 2015 or 1935–1954")),
    )  # fmt: skip


def _chart_model(index: int, item: ScannedFile) -> type[BaseModel]:
    measures, labels, timed = _columns(item)
    dimensions = (["time"] if timed else []) + labels or ["time"]
    filters = _filter_model(index, item)
    return create_model(
        f"Chart{index}",
        __base__=Wording,
        file=(_literal([item.path]), ...),
        measures=(_list_of(_literal(measures)), Field(min_length=1)),
        dimension=(_literal(dimensions), "time" if timed else dimensions[0]),
        frequency=(Frequency | None, None),
        aggregation=(Aggregation | None, None),
        filters=(_list_of(filters), Field(default_factory=list)),
        series_by=_label_or_none(labels),
        top_n=(int | None, Field(default=None, ge=1)),
    )  # fmt: skip


def _question_models(index: int, item: ScannedFile) -> list[type[BaseModel]]:
    measures, labels, _timed = _columns(item)
    filters = _filter_model(index, item)
    lookup = create_model(
        f"Lookup{index}",
        __base__=Wording,
        file=(_literal([item.path]), ...),
        row=(_list_of(filters), Field(min_length=1, description="the values picking one row "
                                      "(one value each)")),
        column=(_literal(measures), ...),
    )  # fmt: skip
    compute = create_model(
        f"Compute{index}",
        __base__=Wording,
        file=(_literal([item.path]), ...),
        kind=(ComputeKind, ...),
        measure=(_literal(measures), ...),
        category=_label_or_none(labels),
        filters=(_list_of(filters), Field(default_factory=list)),
        start=(str | None, None),
        end=(str | None, None),
        frequency=(Frequency | None, None),
    )
    return [lookup, compute]


def describe_home(scan: HomeScan, tables: list[ScannedFile] | None = None) -> str:
    """The home as the model reads it before filling the spec: each file with its kind and
    title; each table with its columns (role, label, unit), its period and a few category
    values (which a filter must name as written)."""
    lines: list[str] = []
    offered = {item.path for item in (tables if tables is not None else scan.tables())}
    for item in scan.files:
        title = f" — {item.title}" if item.title else ""
        lines.append(f"- `{item.path}` ({item.kind}){title}")
        profile = item.profile
        if profile is None or item.path not in offered:
            continue
        if profile.time is not None:
            time = profile.time
            lines.append(f"  - time: {', '.join(time.columns)} ({time.frequency}, {time.first} "
                         f"to {time.last}, {time.periods} periods)")
        for column in profile.columns:
            if column.role == "time":
                continue
            words: list[str] = [column.role]
            if column.label and column.label != column.name:
                words.append(column.label)
            if column.unit:
                words.append(column.unit)
            if column.role == "category":
                shown = ", ".join(profile.categories.get(column.name, [])[:8])
                words.append(f"values: {shown}{', …' if column.distinct > 8 else ''}")
            lines.append(f"  - `{column.name}`: {'; '.join(words)}")
        if profile.wide is not None:
            wide = profile.wide
            lines.append(f"  - `{wide.label}`: the values of columns {wide.columns[0]} … "
                         f"{wide.columns[-1]} ({wide.axis} of one measure)")
    return "\n".join(lines) or "(no files)"


def spec_of_draft(
    answer: BaseModel, request: str, scan: HomeScan, fallback: RequestSpec
) -> RequestSpec:
    """The spec a model's answer says (`fallback`: the rules' reading, for what it leaves out:
    the guidelines' format rules and the changes of each MODIFY)."""
    data = answer.model_dump()
    known = {item.path for item in scan.files}
    left_out = [
        FileSet(files=[f for f in group["files"] if f in known], reading=_reading(group))
        for group in data.get("left_out", [])
    ]
    excluded = {path for group in left_out for path in group.files}
    charts = [_chart(chart) for chart in data.get("charts", [])]
    questions = [_question(item) for item in data.get("questions", [])]
    rules = [
        FormatRule(rule=rule["rule"], value=rule.get("value", ""), reading=_reading(rule))
        for rule in data.get("format_rules", [])
    ]
    rules += [rule for rule in fallback.format_rules if rule.rule not in {r.rule for r in rules}]
    research = None
    if data.get("research"):
        research = Research(reading=Reading(origin=ORIGIN), queries=list(data["research"]))
    language = data.get("language") or fallback.language
    return fallback.model_copy(
        update={
            "request": request,
            "mode": data["mode"],
            "why_run": data.get("why_run", ""),
            "deliverable": data.get("deliverable") or fallback.deliverable,
            "deliverable_reading": Reading(origin=ORIGIN),
            "audience": data.get("audience"),
            "audience_reading": Reading(origin=ORIGIN),
            "length_words": data.get("length_words"),
            "length_reading": Reading(origin=ORIGIN),
            "language": language if len(language) == 2 else fallback.language,
            "sources": sorted(known - excluded),
            "left_out": [group for group in left_out if group.files],
            "charts": charts,
            "questions": questions,
            "research": research,
            "format_rules": rules,
            "not_understood": [Reading(phrase=text, origin=ORIGIN)
                               for text in data.get("not_understood", [])],
        }
    )  # fmt: skip


def draft_of_spec(spec: RequestSpec) -> dict[str, Any]:
    """A spec (the rules' reading) in the answer's shape: the starting point the model
    corrects."""
    def picks(filters: dict[str, list[str]]) -> list[dict[str, Any]]:
        return [{"column": column, "values": values} for column, values in filters.items()]

    charts = [
        {"phrase": c.reading.phrase, "file": c.data.file, "measures": c.data.measures,
         "dimension": c.data.dimension, "frequency": c.data.frequency,
         "aggregation": c.data.aggregation, "filters": picks(c.data.filters),
         "series_by": c.data.series_by, "top_n": c.data.top_n}
        for c in spec.charts if c.data is not None
    ]  # fmt: skip
    questions: list[dict[str, Any]] = []
    for q in spec.questions:
        if q.lookup is not None:
            row = picks({k: [v] for k, v in q.lookup.selectors.items()})
            questions.append({"phrase": q.reading.phrase, "file": q.lookup.file, "row": row,
                              "column": q.lookup.column})  # fmt: skip
        elif q.compute is not None:
            c = q.compute
            questions.append({"phrase": q.reading.phrase, "file": c.file, "kind": c.kind,
                              "measure": c.measure, "category": c.category,
                              "filters": picks(c.filters), "start": c.start, "end": c.end,
                              "frequency": c.frequency})  # fmt: skip
    return {
        "mode": spec.mode,
        "why_run": spec.why_run,
        "deliverable": spec.deliverable,
        "audience": spec.audience,
        "length_words": spec.length_words,
        "language": spec.language,
        "left_out": [{"phrase": g.reading.phrase, "files": g.files} for g in spec.left_out],
        "format_rules": [{"phrase": r.reading.phrase, "rule": r.rule, "value": r.value}
                         for r in spec.format_rules],
        "research": list(spec.research.queries) if spec.research else [],
        "not_understood": [r.phrase for r in spec.not_understood],
        "charts": charts,
        "questions": questions,
    }


def _reading(item: dict[str, Any]) -> Reading:
    return Reading(phrase=item.get("phrase", ""), origin=ORIGIN)


def _chart(item: dict[str, Any]) -> Chart:
    ask = ChartAsk(
        file=item["file"],
        measures=list(dict.fromkeys(item["measures"])),
        dimension=item.get("dimension") or "time",
        frequency=item.get("frequency"),
        aggregation=item.get("aggregation"),
        filters=_filters(item),
        series_by=item.get("series_by"),
        top_n=item.get("top_n"),
    )
    return Chart(data=ask, reading=_reading(item))


def _filters(item: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pick in item.get("filters") or []:
        found.setdefault(pick["column"], []).extend(pick["values"])
    return found


def _question(item: dict[str, Any]) -> Question:
    if "row" in item:
        selectors = {pick["column"]: pick["values"][0] for pick in item["row"]}
        lookup = Lookup(file=item["file"], selectors=selectors, column=item["column"])
        return Question(reading=_reading(item), lookup=lookup)
    compute = Computation(
        kind=item["kind"],
        file=item["file"],
        measure=item["measure"],
        category=item.get("category"),
        filters=_filters(item),
        start=item.get("start"),
        end=item.get("end"),
        frequency=item.get("frequency"),
    )
    return Question(reading=_reading(item), compute=compute)


__all__ = ["MAX_TABLES", "describe_home", "draft_model", "draft_of_spec", "spec_of_draft"]
