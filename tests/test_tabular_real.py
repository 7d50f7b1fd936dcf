"""Real public tables (tests/fixtures/tabular, public domain): profiles, charts, lookups and facts
checked against values computed from the same files with the csv module."""

from __future__ import annotations

import csv
import math
import shutil
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from multiverse.tabular import (
    ChartData,
    ChartQuery,
    ComputeQuery,
    Fact,
    LookupQuery,
    chart_data,
    compute,
    lookup,
    profile,
)

FIXTURES = Path(__file__).parent / "fixtures" / "tabular"
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A home whose assets are the fixture tables."""
    shutil.copytree(FIXTURES, tmp_path / "assets")
    return tmp_path


def _rows(name: str) -> list[dict[str, str]]:
    """A fixture's rows read with the csv module (a BOM dropped)."""
    with (FIXTURES / name).open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def _close(a: float | None, b: float) -> bool:
    """Equal up to floating-point rounding."""
    return a is not None and math.isclose(a, b, rel_tol=1e-9)


def test_grunfeld_is_a_long_table_of_firms_by_year(root: Path) -> None:
    """Firms by year: total investment per year equals the csv module's sums."""
    found = profile(Path("assets/grunfeld.csv"), root=root)
    assert found.shape == "long" and found.time is not None
    assert (found.time.columns, found.time.first, found.time.last) == (["year"], "1935", "1954")
    assert len(found.categories["firm"]) == 11
    totals: dict[str, float] = defaultdict(float)
    for row in _rows("grunfeld.csv"):
        totals[row["year"]] += float(row["invest"])
    chart = chart_data(ChartQuery(file="assets/grunfeld.csv", measures=["invest"],
                                  aggregation="sum"), root=root)
    assert isinstance(chart, ChartData)
    assert chart.labels == sorted(totals) and chart.title.startswith("Total invest by year")
    assert all(_close(v, totals[x]) for x, v in zip(chart.labels, chart.series[0].values,
                                                    strict=True))


def test_grunfeld_cells_are_looked_up_by_firm_and_year(root: Path) -> None:
    """General Motors' 1935 investment is the cell on line 2."""
    answer = lookup(LookupQuery(file="assets/grunfeld.csv", column="invest",
                                selectors={"year": "1935", "firm": "general motors"}), root=root)
    assert answer.found and answer.text == "317.6"
    assert answer.citation is not None and answer.citation.first == 2


def test_danish_quarter_labels_behind_a_bom(root: Path) -> None:
    """`1974Q1` labels in a file starting with a BOM: a quarterly axis, yearly means."""
    found = profile(Path("assets/danish_data.csv"), root=root)
    assert found.columns[0].name == "period" and found.time is not None
    assert (found.time.form, found.time.frequency) == ("quarter label", "quarter")
    assert (found.time.first, found.time.last, found.time.periods) == ("1974Q1", "1987Q3", 55)
    by_year: dict[str, list[float]] = defaultdict(list)
    for row in _rows("danish_data.csv"):
        by_year[row["period"][:4]].append(float(row["lrm"]))
    chart = chart_data(ChartQuery(file="assets/danish_data.csv", measures=["lrm"],
                                  frequency="year"), root=root)
    assert isinstance(chart, ChartData) and chart.labels == sorted(by_year)
    assert all(_close(v, statistics.fmean(by_year[x]))
               for x, v in zip(chart.labels, chart.series[0].values, strict=True))
    answer = lookup(LookupQuery(file="assets/danish_data.csv", column="lrm",
                                selectors={"period": "Q3 1974"}), root=root)
    assert answer.found and answer.text == _rows("danish_data.csv")[2]["lrm"]
    assert answer.citation is not None and answer.citation.first == 4


def test_elnino_month_columns_beside_a_year_column(root: Path) -> None:
    """A year per row and a month per column make a monthly axis; yearly means equal the rows'."""
    found = profile(Path("assets/elnino.csv"), root=root)
    assert found.shape == "wide" and found.time is not None
    assert (found.time.frequency, found.time.first, found.time.last) == (
        "month", "1950-01", "2010-12")
    assert found.summary() == ("CSV table, 61 rows: YEAR × JAN … DEC (one measure, "
                               "1950-01–2010-12, monthly).")
    rows = _rows("elnino.csv")
    chart = chart_data(ChartQuery(file="assets/elnino.csv", measures=["value"],
                                  frequency="year"), root=root)
    assert isinstance(chart, ChartData) and chart.labels == [r["YEAR"] for r in rows]
    for row, value in zip(rows, chart.series[0].values, strict=True):
        assert _close(value, statistics.fmean(float(row[m]) for m in MONTHS))
    line = next(i for i, r in enumerate(rows) if r["YEAR"] == "1982") + 2
    answer = lookup(LookupQuery(file="assets/elnino.csv", column="value",
                                selectors={"time": "March 1982"}), root=root)
    assert answer.found and answer.text == rows[line - 2]["MAR"]
    assert answer.citation is not None and answer.citation.first == line


def test_elec_equip_month_names_with_days(root: Path) -> None:
    """`Jan-1-1995` dates a month apart read as a monthly axis; the yearly maximum is found."""
    found = profile(Path("assets/elec_equip.csv"), root=root)
    assert found.time is not None
    assert (found.time.frequency, found.time.first) == ("month", "1995-01")
    measure = found.role("measure")[0].name
    by_year: dict[str, list[float]] = defaultdict(list)
    for row in _rows("elec_equip.csv"):
        by_year[row["DATE"][-4:]].append(float(row[measure]))
    means = {year: statistics.fmean(values) for year, values in by_year.items()}
    peak = max(means, key=lambda year: means[year])
    fact = compute(ComputeQuery(kind="max", file="assets/elec_equip.csv", measure=measure,
                                frequency="year"), root=root)
    assert isinstance(fact, Fact) and fact.period == peak and _close(fact.value, means[peak])
    assert fact.aggregation == "mean" and fact.citation.rows == len(by_year[peak])

