"""The request spec as plain data (SPEC §6a): the run's one understanding of the request and of
every MODIFY; no I/O here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from multiverse.spec.asked import default_words

SPEC_VERSION = 1
SPEC_FILE = "spec.json"  # runs/<run_id>/spec.json: the latest proposal's spec, frozen at CONFIRM

Language = str  # an ISO 639-1 code: "en", "ko", …


class Plain(BaseModel):
    """Plain data: unknown fields refused, never mutated in place."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Reading(Plain):
    """Where an item of the spec came from: the words that chose it, and whose words they are."""

    phrase: str = ""  # the request's or MODIFY's own words ("" when nothing was said)
    origin: str = "default"  # "request", "MODIFY 2", "guidelines/style.md", "default", "model"


class FileSet(Plain):
    """Files chosen by one phrase (a file name, a plural, a group, a Korean phrase)."""

    files: list[str]
    reading: Reading


Aggregation = Literal["mean", "sum", "last", "count"]
ChartKind = Literal["line", "bar"]
Mode = Literal["run", "simple"]
Frequency = Literal["decade", "year", "quarter", "month", "week", "day"]


class ChartAsk(Plain):
    """What a chart draws: a table's measure(s) along a dimension (SPEC §6a).

    `dimension` is "time" (the table's time axis, at `frequency`) or a column. `aggregation`
    None lets the measure's kind decide (rates, shares, indices and prices averaged; counts and
    amounts summed; stocks their period's last value). `series_by` draws one series per value
    of that column (how each category changed); `filters` keep the rows whose column holds one
    of the values; `top_n` keeps the largest.
    """

    file: str
    measures: list[str] = Field(min_length=1)
    dimension: str = "time"
    frequency: Frequency | None = None
    aggregation: Aggregation | None = None
    filters: dict[str, list[str]] = Field(default_factory=dict)
    series_by: str | None = None
    top_n: int | None = Field(default=None, ge=1)
    kind: ChartKind | None = None  # None: line over time, bars across categories


class Chart(Plain):
    """A chart asked for; validated, it carries its first values, or why it cannot be drawn."""

    data: ChartAsk | None = None  # None when no table of the sources carries it
    reading: Reading
    drawable: bool = False
    title: str = ""  # the chart's title as it will be drawn (aggregation stated)
    preview: list[str] = Field(default_factory=list)  # first values: "1959: 5.13"
    reason: str = ""  # why it cannot be drawn
    alternative: ChartAsk | None = None  # the nearest drawable chart, offered, never promised


class Lookup(Plain):
    """One cell asked for: the row its selectors pick (column → value), and the column."""

    file: str
    selectors: dict[str, str]
    column: str


ComputeKind = Literal[
    "first",
    "last",
    "min",
    "max",
    "change",
    "growth",
    "cagr",
    "mean",
    "largest",
    "smallest",
    "fastest_growing",
    "distinct",  # how many different values a column holds ("how many countries")
    "columns",  # the table's columns ("which columns does it have")
]


class Computation(Plain):
    """A figure computed over a table: a change, a growth, a mean, the largest category…"""

    kind: ComputeKind
    file: str
    measure: str
    compared: list[str] = Field(default_factory=list)  # more columns ranked with `measure`
    category: str | None = None  # the column whose values are compared (largest, fastest…)
    filters: dict[str, list[str]] = Field(default_factory=dict)
    start: str | None = None  # a period label ("1970", "2009Q3", "2012-06")
    end: str | None = None
    frequency: Frequency | None = None
    aggregation: Aggregation | None = None  # None: the measure's kind decides
    whole_periods: bool = False  # "the first and last full years": periods held in part left out


class Question(Plain):
    """A question the request asks of a table: one cell, or a computation over cells."""

    reading: Reading
    lookup: Lookup | None = None
    compute: Computation | None = None
    answerable: bool = False
    answer: str = ""  # the sentence with its figure, unit and citation, computed when checked
    reason: str = ""  # why it cannot be answered (with the nearest cells, when there are)


FormatRuleKind = Literal[
    "no_tables", "bullets", "no_charts", "no_headings", "max_words", "item_words"
]  # item_words: a limit on each bullet or sentence, not on the whole


class FormatRule(Plain):
    """A format rule of guidelines/ (or of the request): obeyed by the deliverable or said."""

    rule: FormatRuleKind
    value: str = ""  # e.g. the word limit of max_words or item_words
    reading: Reading


class Research(Plain):
    """Outside information asked for: the queries, and whether a provider can make them."""

    reading: Reading
    queries: list[str] = Field(default_factory=list)
    provider: str | None = None  # the configured web_search provider; None: no search is made
    note: str = ""


class Change(Plain):
    """What one MODIFY did: applied, or said as not applied with why."""

    text: str
    applied: bool
    detail: str = ""


class RequestSpec(Plain):
    """The run's understanding of its request (and of every MODIFY since)."""

    version: int = SPEC_VERSION
    revision: int = 0  # the proposal revision it belongs to (0: the first)
    request: str
    mode: Mode = "run"
    why_run: str = ""  # why a question became a run (said at submit and in the proposal)
    deliverable: str = "brief"  # memo, report, brief, note, summary, answer, …
    deliverable_reading: Reading = Reading()
    audience: str | None = None
    audience_reading: Reading = Reading()
    length_words: int | None = None
    length_reading: Reading = Reading()
    language: Language = "en"
    language_reading: Reading = Reading()
    sources: list[str] = Field(default_factory=list)  # the files the work may use
    left_out: list[FileSet] = Field(default_factory=list)  # files it may never use
    charts: list[Chart] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)
    research: Research | None = None
    format_rules: list[FormatRule] = Field(default_factory=list)
    not_understood: list[Reading] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    confirmed: bool = False  # frozen by CONFIRM

    def excluded(self) -> set[str]:
        """Every file left out, by any phrase."""
        return {path for group in self.left_out for path in group.files}

    def length(self) -> tuple[int, bool]:
        """The deliverable's length in words, and whether it was asked (else its kind's default)."""
        if self.length_words:
            return self.length_words, True
        return default_words(self.deliverable), False

    def has_rule(self, rule: FormatRuleKind) -> bool:
        """Whether a format rule applies to the deliverable."""
        return any(item.rule == rule for item in self.format_rules)
