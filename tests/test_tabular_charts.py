"""Charts computed from generated tables equal an independent standard-library computation."""

from __future__ import annotations

import csv
import datetime as dt
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tabular_oracle import (
    MEASURES,
    Gen,
    Wide,
    close,
    expected,
    key_of,
    label_of,
    tables,
    wide_tables,
)

from multiverse.tabular import ChartData, ChartQuery, ChartRefusal, chart_data

GRAINS = ("year", "quarter", "month", "day")
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _sorted_labels(grain: str, labels: set[str], gen: Gen) -> list[str]:
    """Labels in time order, by the oracle's keys."""
    keys = {label_of(grain, key_of(grain, m)): key_of(grain, m) for m in gen.moments}
    return sorted(labels, key=lambda label: keys[label])


@SETTINGS
@given(gen=tables(), data=st.data())
def test_chart_values_equal_a_stdlib_computation(gen: Gen, data: st.DataObject) -> None:
    """Every aggregation, grain, filter and series split gives the values the oracle computes,
    labels in time order, and a citation of exactly the lines used."""
    measure = data.draw(st.sampled_from(gen.measures))
    how = data.draw(st.sampled_from([None, "sum", "mean", "last", "count"]))
    grain = data.draw(st.sampled_from([None, *GRAINS[: GRAINS.index(gen.grain) + 1]]))
    long = gen.category_column is not None
    split = long and data.draw(st.booleans())
    keep = set(data.draw(st.lists(st.sampled_from(sorted(set(gen.categories))), min_size=1,
                                  unique=True))) if long and data.draw(st.booleans()) else None
    filters = {"region": [k.lower() for k in sorted(keep)]} if keep else {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        query = ChartQuery(file=gen.write(root), measures=[measure], frequency=grain,
                           aggregation=how, series_by="region" if split else None,
                           filters=filters)
        chart = chart_data(query, root=root)
    want = expected(gen, measure, grain or gen.grain, how or MEASURES[measure],
                    by_category=split, keep=keep)
    if not want:
        assert isinstance(chart, ChartRefusal)
        return
    assert isinstance(chart, ChartData), chart
    labels = _sorted_labels(grain or gen.grain, {x for s in want.values() for x in s}, gen)
    assert chart.labels == labels
    assert chart.aggregation == (how or MEASURES[measure])
    assert {s.name for s in chart.series} == (set(want) if split else {chart.series[0].name})
    for series in chart.series:
        wanted = want[series.name if split else ""]
        for label, value in zip(chart.labels, series.values, strict=True):
            assert close(value, wanted.get(label)), (label, value, wanted.get(label))
    assert chart.kind == ("line" if len(labels) > 12 or split else "bar")
    assert chart.citation.file == "assets/table.csv"
    assert chart.citation.first >= 2 and chart.citation.last <= len(gen.rows) + 1


@SETTINGS
@given(gen=tables(long=True), data=st.data())
def test_a_category_dimension_is_ordered_by_value_and_cut_to_top_n(gen: Gen,
                                                                  data: st.DataObject) -> None:
    """By region, bars are the regions' values, largest first, and top_n keeps the largest."""
    measure = data.draw(st.sampled_from(gen.measures))
    top = data.draw(st.one_of(st.none(), st.integers(1, 4)))
    order = data.draw(st.sampled_from([None, "value_desc", "value_asc"]))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        query = ChartQuery(file=gen.write(root), measures=[measure], dimension="region",
                           top_n=top, order=order, aggregation="sum")
        chart = chart_data(query, root=root)
    totals: dict[str, float] = {}
    for row, category in enumerate(gen.categories):
        value = gen.values[measure][row]
        if value is not None:
            totals[category] = totals.get(category, 0.0) + value
    if not totals:
        assert isinstance(chart, ChartRefusal)
        return
    assert isinstance(chart, ChartData)
    ranked = sorted(totals, key=lambda c: -totals[c])[: top or None]
    ranked.sort(key=lambda c: totals[c], reverse=order != "value_asc")
    assert chart.kind == "bar"
    assert [totals[label] for label in chart.labels] == [totals[c] for c in ranked]
    assert all(close(v, totals[label]) for label, v in zip(chart.labels, chart.series[0].values,
                                                           strict=True))


@SETTINGS
@given(wide=wide_tables(), split=st.booleans())
def test_wide_tables_melt_into_the_values_of_their_cells(wide: Wide, split: bool) -> None:
    """Year columns chart over time (a series per region, or their mean); country columns give
    one series per column; every value equals the cells."""
    columns = wide.header[1:]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        file = wide.write(root)
        query = ChartQuery(file=file, measures=["value"] if wide.by_year else columns,
                           series_by="region" if wide.by_year and split else None)
        chart = chart_data(query, root=root)
    if not wide.cells:
        assert isinstance(chart, ChartRefusal)
        return
    assert isinstance(chart, ChartData), chart
    labels = {row[0] for row in wide.rows}
    if not wide.by_year:
        assert [s.name for s in chart.series] == [c for c in columns
                                                   if any((x, c) in wide.cells for x in labels)]
        for series in chart.series:
            for year, value in zip(chart.labels, series.values, strict=True):
                assert close(value, wide.cells.get((year, series.name)))
        return
    for series in chart.series:
        for year, value in zip(chart.labels, series.values, strict=True):
            found = [v for (region, column), v in wide.cells.items() if column == year
                     and (not split or region == series.name)]
            assert close(value, sum(found) / len(found) if found else None)
    assert chart.labels == sorted({column for _, column in wide.cells})


def _write(root: Path, header: list[str], rows: list[list[object]], name: str = "t.csv") -> str:
    """Write rows as a CSV under root/assets."""
    (root / "assets").mkdir(parents=True, exist_ok=True)
    with (root / "assets" / name).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return f"assets/{name}"


def test_quarterly_rates_are_averaged_per_year_not_summed(tmp_path: Path) -> None:
    """A quarterly rate charted by year is the mean of its quarters, and the title says so."""
    rows = [[1982, q, rate] for q, rate in zip((1, 2, 3, 4), (8.8, 9.4, 9.9, 10.7), strict=True)]
    rows += [[1983, q, 10.0] for q in (1, 2, 3, 4)]
    file = _write(tmp_path, ["year", "quarter", "unemployment_rate"], rows)
    chart = chart_data(ChartQuery(file=file, measures=["unemployment_rate"], dimension="year"),
                       root=tmp_path)
    assert isinstance(chart, ChartData)
    assert chart.labels == ["1982", "1983"]
    assert close(chart.series[0].values[0], 9.7)
    assert chart.title.startswith("Mean unemployment rate by year, 1982–1983")
    assert "quarterly values averaged per year" in chart.notes


def test_an_integer_year_column_is_a_time_axis_ordered_by_time(tmp_path: Path) -> None:
    """`by year` bars stay in year order, whatever the values."""
    rows = [[year, 100 - year % 7] for year in range(2001, 2006)]
    file = _write(tmp_path, ["year", "sales"], rows)
    chart = chart_data(ChartQuery(file=file, measures=["sales"], dimension="year"), root=tmp_path)
    assert isinstance(chart, ChartData)
    assert chart.labels == ["2001", "2002", "2003", "2004", "2005"]
    assert chart.kind == "bar"


def test_a_line_has_no_ceiling_and_series_have_no_group_limit(tmp_path: Path) -> None:
    """500 daily points and 46 series are all drawn."""
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(500)]
    rows = [[d.isoformat(), "S1", i] for i, d in enumerate(days)]
    rows += [["2020-01-01", f"S{i}", i] for i in range(2, 47)]
    file = _write(tmp_path, ["date", "group", "sales"], rows)
    chart = chart_data(ChartQuery(file=file, measures=["sales"], series_by="group"), root=tmp_path)
    assert isinstance(chart, ChartData)
    assert len(chart.labels) == 500 and len(chart.series) == 46
    assert chart.kind == "line"


def test_a_bar_chart_keeps_its_40_largest_and_says_so(tmp_path: Path) -> None:
    """45 categories: the 40 largest are kept and a note says so."""
    file = _write(tmp_path, ["country", "sales"], [[f"C{i:02d}", i] for i in range(45)])
    chart = chart_data(ChartQuery(file=file, measures=["sales"], dimension="country"),
                       root=tmp_path)
    assert isinstance(chart, ChartData)
    assert len(chart.labels) == 40 and chart.labels[0] == "C44" and "C04" not in chart.labels
    assert any("40 largest" in note for note in chart.notes)


def test_a_year_per_column_table_is_charted_over_time(tmp_path: Path) -> None:
    """Columns 2001…2004 melt into a time axis; by region each series holds the cells."""
    rows = [["Seoul", 1, 2, 3, 4], ["Busan", 10, 20, 30, 40]]
    file = _write(tmp_path, ["region", "2001", "2002", "2003", "2004"], rows)
    chart = chart_data(ChartQuery(file=file, measures=["value"], series_by="region"),
                       root=tmp_path)
    assert isinstance(chart, ChartData)
    assert chart.labels == ["2001", "2002", "2003", "2004"]
    assert {s.name: s.values for s in chart.series} == {
        "Seoul": [1, 2, 3, 4], "Busan": [10, 20, 30, 40]}
    mean = chart_data(ChartQuery(file=file, measures=["2001", "2002"]), root=tmp_path)
    assert isinstance(mean, ChartData)
    assert mean.labels == ["2001", "2002"] and mean.series[0].values == [5.5, 11.0]


def test_a_country_per_column_table_gives_one_series_per_column(tmp_path: Path) -> None:
    """Five country columns over years: one series each, equal to its cells."""
    countries = ["Korea", "Japan", "China", "India", "Vietnam"]
    rows = [[2000 + y, *(10 * c + y for c in range(5))] for y in range(4)]
    file = _write(tmp_path, ["year", *countries], rows)
    chart = chart_data(ChartQuery(file=file, measures=countries), root=tmp_path)
    assert isinstance(chart, ChartData)
    assert [s.name for s in chart.series] == countries
    assert chart.series[2].values == [20, 21, 22, 23]


def test_refusals_say_why_and_offer_drawable_charts(tmp_path: Path) -> None:
    """A missing column, an unmatched filter, a text measure and a too fine grain are refused
    with the reason, and every alternative offered draws."""
    rows = [[2001, "Wind", 5], [2002, "Wind", 6], [2001, "Coal", 9], [2002, "Coal", 8]]
    file = _write(tmp_path, ["year", "source", "net_generation"], rows)
    cases = {
        "no column 'generation'": ChartQuery(file=file, measures=["generation"]),
        "'solar'; its values: Wind, Coal": ChartQuery(file=file, measures=["net_generation"],
                                                      filters={"source": ["solar"]}),
        "'source' in assets/t.csv is not a numeric measure": ChartQuery(file=file,
                                                                       measures=["source"]),
        "cannot be charted by month": ChartQuery(file=file, measures=["net_generation"],
                                                 frequency="month"),
    }
    for words, query in cases.items():
        refusal = chart_data(query, root=tmp_path)
        assert isinstance(refusal, ChartRefusal), words
        assert words in refusal.reason, refusal.reason
        assert refusal.alternatives, words
        for alternative in refusal.alternatives:
            assert isinstance(chart_data(alternative, root=tmp_path), ChartData)
