"""The home's data tables: read, profiled, charted, looked up and computed, with citations.

Every reading of a table goes through here, so a proposal's preview and the executed chart are
computed by the same code, and every number written about a table comes with the lines it was
computed from. pandas is imported only when a table is read: importing this package is cheap.
"""

from __future__ import annotations

from multiverse.tabular.cells import (
    CellNumber,
    format_number,
    numbers_in,
    parse_label,
    parse_number,
)
from multiverse.tabular.charts import chart_data
from multiverse.tabular.compute import compute
from multiverse.tabular.lookup import lookup
from multiverse.tabular.models import (
    RANKING_KINDS,
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
    NearestCell,
    Series,
    TableProfile,
    TimeAxis,
    WideGroup,
)
from multiverse.tabular.profiling import profile
from multiverse.tabular.reading import (
    MAX_BYTES,
    TABLE_SUFFIXES,
    Table,
    TableTooLarge,
    TabularError,
    read_table,
)

__all__ = [
    "MAX_BYTES",
    "RANKING_KINDS",
    "TABLE_SUFFIXES",
    "CellNumber",
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
    "NearestCell",
    "Series",
    "Table",
    "TableProfile",
    "TableTooLarge",
    "TabularError",
    "TimeAxis",
    "WideGroup",
    "chart_data",
    "compute",
    "format_number",
    "lookup",
    "numbers_in",
    "parse_label",
    "parse_number",
    "profile",
    "read_table",
]
