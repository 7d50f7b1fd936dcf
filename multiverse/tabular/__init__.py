"""The home's data tables (experimental face for integration)."""

from __future__ import annotations

from multiverse.tabular.charts import chart_data
from multiverse.tabular.compute import compute
from multiverse.tabular.lookup import lookup
from multiverse.tabular.models import (
    ChartData,
    ChartQuery,
    ChartRefusal,
    Citation,
    ColumnProfile,
    ComputeQuery,
    Fact,
    FactRefusal,
    LookupAnswer,
    LookupQuery,
    TableProfile,
    TimeAxis,
    WideGroup,
)
from multiverse.tabular.numbers import format_number
from multiverse.tabular.profiling import profile

TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".xlsx", ".xlsm", ".json")

__all__ = [
    "TABLE_SUFFIXES",
    "ChartData",
    "ChartQuery",
    "ChartRefusal",
    "Citation",
    "ColumnProfile",
    "ComputeQuery",
    "Fact",
    "FactRefusal",
    "LookupAnswer",
    "LookupQuery",
    "TableProfile",
    "TimeAxis",
    "WideGroup",
    "chart_data",
    "compute",
    "format_number",
    "lookup",
    "profile",
]
