"""Plain data of the tabular package: profiles, queries, charts, answers and facts.

They do no I/O and import no pandas; `summary` and `sentences` render their words on demand.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["time", "measure", "category", "identifier", "text"]
Kind = Literal["rate", "share", "index", "price", "count", "amount", "stock", "other"]
Aggregation = Literal["mean", "sum", "last"]
ChartAggregation = Literal["mean", "sum", "last", "count"]
Frequency = Literal["decade", "year", "quarter", "month", "day"]
AxisFrequency = Literal["year", "quarter", "month", "week", "day", "hour", "irregular"]
Order = Literal["time", "value_desc", "value_asc"]
ComputeKind = Literal["first", "last", "min", "max", "change", "growth", "cagr", "mean",
                      "largest", "smallest", "fastest_growing",
                      "distinct", "columns"]  # of the table: values of a column, its columns
# The kinds that compare a table's categories and name the one that ranks first.
RANKING_KINDS: frozenset[ComputeKind] = frozenset({"largest", "smallest", "fastest_growing"})


class _Plain(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColumnProfile(_Plain):
    """One column: its role, and for a measure its unit, kind and how periods combine it."""

    name: str
    role: Role
    unit: str | None = None
    kind: Kind | None = None  # measures only
    aggregation: Aggregation | None = None  # measures only
    label: str  # readable: from a description that defines the column, else its name
    distinct: int
    missing: int
    minimum: float | None = None
    maximum: float | None = None
    examples: list[str] = Field(default_factory=list)
    decimals: int | None = None  # measures: the most decimals a cell writes


class TimeAxis(_Plain):
    """The columns that tell the time, their form and the periods they cover."""

    columns: list[str]
    form: str  # year | year+quarter | year+month | quarter label | date | datetime | ...
    frequency: AxisFrequency
    first: str
    last: str
    periods: int
    restated: list[str] = Field(default_factory=list)  # label columns repeating a part of it


class WideGroup(_Plain):
    """Numeric columns that are categories (or periods) of one measure."""

    columns: list[str]
    axis: Literal["time", "category"]  # what the columns' names are
    name: str  # the column they melt into: "time", or a category name
    label: str  # what their values are
    kind: Kind
    aggregation: Aggregation
    unit: str | None = None


class TableProfile(_Plain):
    """What a light scan of a table found: columns, time axis, shape, categories, notes."""

    file: str
    sheet: str | None = None
    format: str = "CSV"
    rows: int
    columns: list[ColumnProfile]
    time: TimeAxis | None = None
    shape: Literal["long", "wide", "single"]
    wide: WideGroup | None = None
    categories: dict[str, list[str]] = Field(default_factory=dict)  # at most 500 each
    notes: list[str] = Field(default_factory=list)

    def column(self, name: str) -> ColumnProfile | None:
        """A column by its name (exact, else ignoring case and edge spaces)."""
        for column in self.columns:
            if column.name == name:
                return column
        wanted = name.strip().lower()
        return next((c for c in self.columns if c.name.strip().lower() == wanted), None)

    def role(self, role: Role) -> list[ColumnProfile]:
        """The columns of one role, in table order."""
        return [column for column in self.columns if column.role == role]

    def summary(self) -> str:
        """One line for the knowledge catalog: columns with units, the period, the rows."""
        from multiverse.tabular.words import profile_summary

        return profile_summary(self)


class Citation(_Plain):
    """Where numbers come from: a file and the lines (rows) of it that were used."""

    file: str
    sheet: str | None = None
    first: int  # line of the first row used (header = 1)
    last: int
    rows: int  # how many rows were used

    def text(self, lang: str = "en") -> str:
        """`assets/x.csv rows 94–97` / `assets/x.csv 94–97행`."""
        from multiverse.tabular.words import citation_text

        return citation_text(self, lang)


class ChartQuery(_Plain):
    """What to chart: measures by a dimension, at a time grain, filtered, split into series."""

    file: str
    sheet: str | None = None
    measures: list[str]
    dimension: str = "time"  # a column name, or "time"
    frequency: Frequency | None = None  # None: the data's own grain
    aggregation: ChartAggregation | None = None  # None: from the measure's kind
    filters: dict[str, list[str]] = Field(default_factory=dict)
    series_by: str | None = None
    top_n: int | None = Field(default=None, ge=1)
    order: Order | None = None  # None: time for a time dimension, value_desc otherwise


class Series(_Plain):
    """One line (or one set of bars) of a chart."""

    name: str
    values: list[float | None]


class ChartData(_Plain):
    """A chart computed from a table: the same for the proposal's preview and the deliverable."""

    query: ChartQuery  # resolved: frequency, aggregation and order filled in
    title: str
    kind: Literal["line", "bar"]
    x_label: str
    y_label: str
    labels: list[str]
    series: list[Series]
    aggregation: ChartAggregation
    unit: str | None = None
    citation: Citation
    notes: list[str] = Field(default_factory=list)


class ChartRefusal(_Plain):
    """Why a chart cannot be drawn, and the nearest charts that can."""

    query: ChartQuery
    reason: str
    alternatives: list[ChartQuery] = Field(default_factory=list)


class LookupQuery(_Plain):
    """One cell: the row the selectors pick (column → value) and the column to read."""

    file: str
    sheet: str | None = None
    selectors: dict[str, str]
    column: str


class NearestCell(_Plain):
    """A cell near the one asked for: another period of the category, or another category."""

    selectors: dict[str, str]
    text: str
    number: float | None = None
    line: int


class LookupAnswer(_Plain):
    """A cell as written, its number and unit, and where it is; or the nearest cells."""

    query: LookupQuery
    found: bool
    text: str | None = None
    number: float | None = None
    unit: str | None = None
    label: str = ""
    decimals: int | None = None
    period: str | None = None  # the matched row's period, as the data label it
    where: dict[str, str] = Field(default_factory=dict)  # the matched categories, as written
    citation: Citation | None = None
    nearest: list[NearestCell] = Field(default_factory=list)
    note: str | None = None

    def sentence(self, lang: str = "en") -> str:
        """The answer as one sentence with its citation ("en" or "ko")."""
        from multiverse.tabular.words import lookup_words

        return lookup_words(self, lang)


class ComputeQuery(_Plain):
    """A computed fact of one measure: first, last, min, max, change, growth, cagr, mean, or
    the largest, smallest or fastest-growing category."""

    kind: ComputeKind
    file: str
    sheet: str | None = None
    measure: str
    # more columns compared with `measure` as its categories ("what killed most: disease,
    # wounds or other"): largest and smallest over the columns
    compared: list[str] = Field(default_factory=list)
    category: str | None = None  # a category column (largest...), or a value to keep
    start: str | None = None
    end: str | None = None
    frequency: Frequency | None = None
    aggregation: Aggregation | None = None
    filters: dict[str, list[str]] = Field(default_factory=dict)
    # sums over whole periods only: a first or last year the data covers in part is left out
    # (the standard facts; a period asked by name is answered as the data has it)
    whole_periods: bool = False


class Fact(_Plain):
    """A number computed from a table, with what it is, when, where from, and its sentence."""

    kind: ComputeKind
    measure: str
    label: str
    value: float
    unit: str | None = None
    period: str  # `1982`, or `2001–2017` for a change
    category: str | None = None
    citation: Citation
    figures: list[str] = Field(default_factory=list)  # every number the sentence prints
    aggregation: str | None = None  # how periods were formed: mean | sum | last | None (cells)
    frequency: str | None = None
    start: str | None = None
    end: str | None = None
    start_value: float | None = None
    end_value: float | None = None
    percent: float | None = None
    years: float | None = None
    # The precision of the measure's values as printed (the value, or the two values of a
    # change); None: computed (two decimals). Percents are always computed.
    decimals: int | None = None
    column: str | None = None  # the category column of largest/smallest/fastest_growing
    # How many categories a ranking compared: one (a table filtered to Korea, ranked by its
    # continent) is said as the only one, never as a comparison the data did not make.
    among: int | None = None

    def sentence(self, lang: str = "en") -> str:
        """The fact as one natural sentence with its citation ("en" or "ko")."""
        from multiverse.tabular.words import fact_words

        return fact_words(self, lang)


class FactRefusal(_Plain):
    """Why a fact cannot be computed, in plain words."""

    query: ComputeQuery
    reason: str
