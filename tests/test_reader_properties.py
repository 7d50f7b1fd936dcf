"""Generated tables and requests (hypothesis): the offline reader and the validator on tables
nobody wrote by hand. For any table of a measure, a category and a time column, in English or
Korean: a chart asked of the measure by the category, or over time, is drawn from that table and
column with the values an independent pandas computation gives; a file left out is never used.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multiverse.home import Home, init_home
from multiverse.spec import RequestSpec, check_spec, scan_home
from multiverse.spec.check import query_of
from multiverse.tabular import ChartData, chart_data
from offline import read_request

# (column name, English words, Korean words): measures people name in either language.
MEASURES = [
    ("sales", "sales", "매출"),
    ("population", "population", "인구"),
    ("exports", "exports", "수출"),
    ("deaths", "deaths", "사망자"),
    ("profit", "profit", "이익"),
    ("rainfall", "rainfall", "강수량"),
    ("visitors", "visitors", "방문객"),
    ("unemployment_rate", "unemployment rate", "실업률"),
    ("avg_temperature", "temperature", "기온"),
    ("revenue", "revenue", "수익"),
]
CATEGORIES = [
    ("region", "region", "지역"),
    ("country", "country", "국가"),
    ("store", "store", "매장"),
    ("city", "city", "도시"),
    ("product", "product", "상품"),
]
VALUES = ["Alpha", "Bravo", "Castle", "Delta", "Echo", "Falcon", "Garnet", "Harbor"]
EXCLUSIONS = ["Leave out {file}.", "Do not use {file}.", "{file} 파일은 빼 주세요."]
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, str, str, str, str]:
    """A long table: one row per category and year (or month), a measure of whole numbers."""
    measure, measure_en, measure_ko = draw(st.sampled_from(MEASURES))
    category, category_en, _category_ko = draw(st.sampled_from(CATEGORIES))
    names = draw(st.lists(st.sampled_from(VALUES), min_size=2, max_size=5, unique=True))
    first = draw(st.integers(1950, 2015))
    years = draw(st.integers(3, 12))
    monthly = draw(st.booleans())
    rows = []
    for year in range(first, first + years):
        for month in range(1, 13) if monthly else [None]:
            for name in names:
                value = draw(st.integers(0, 5000))
                when = f"{year}-{month:02d}" if month else year
                rows.append({"date" if monthly else "year": when, category: name, measure: value})
    frame = pd.DataFrame(rows)
    return frame, measure, measure_en, measure_ko, category_en


@contextmanager
def home_with(frame: pd.DataFrame, name: str, other: bool) -> Iterator[Home]:
    """A fresh home whose assets/ holds the table (and, when asked, a second table)."""
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home")
        init_home(home)
        frame.to_csv(home.assets / name, index=False)
        if other:
            pd.DataFrame({"year": [2000, 2001], "tonnage": [1, 2]}).to_csv(
                home.assets / "shipping_tonnage.csv", index=False
            )
        yield home


def _spec(home: Home, request: str) -> RequestSpec:
    scan = scan_home(home)
    return check_spec(read_request(request, [], scan), scan, home.root)


def _drawn(home: Home, spec: RequestSpec) -> ChartData:
    drawable = [chart for chart in spec.charts if chart.drawable and chart.data is not None]
    assert len(drawable) == 1, spec.charts
    data = drawable[0].data
    assert data is not None
    drawn = chart_data(query_of(data), root=home.root)
    assert isinstance(drawn, ChartData)
    return drawn


@SETTINGS
@given(tables(), st.booleans())
def test_a_chart_by_category_is_drawn_from_the_named_columns(
    table: tuple[pd.DataFrame, str, str, str, str], korean: bool
) -> None:
    """"Chart the total <measure> by <category>" (or its Korean): the table's columns, and
    each category's sum as pandas computes it."""
    frame, measure, measure_en, measure_ko, category_en = table
    category = next(c for c in frame.columns if c not in (measure, "year", "date"))
    category_ko = next(ko for name, _en, ko in CATEGORIES if name == category)
    request = (
        f"{category_ko}별 {measure_ko} 합계를 막대 차트로 그려 주세요."
        if korean
        else f"Chart the total {measure_en} by {category_en}."
    )
    with home_with(frame, f"{measure}_data.csv", other=True) as home:
        spec = _spec(home, request)
        drawn = _drawn(home, spec)
    assert drawn.query.file.endswith(f"{measure}_data.csv")
    assert drawn.query.measures == [measure]
    assert drawn.query.dimension == category
    expected = frame.groupby(category)[measure].sum()
    got = dict(zip(drawn.labels, drawn.series[0].values, strict=True))
    assert got == {str(k): float(v) for k, v in expected.items()}
    assert spec.language == ("ko" if korean else "en")


@SETTINGS
@given(tables())
def test_a_chart_over_the_years_averages_when_asked(
    table: tuple[pd.DataFrame, str, str, str, str],
) -> None:
    """"Chart the average <measure> by year": one point a year, the mean of its cells."""
    frame, measure, measure_en, _measure_ko, _category_en = table
    with home_with(frame, f"{measure}_data.csv", other=False) as home:
        drawn = _drawn(home, _spec(home, f"Chart the average {measure_en} by year."))
    years = frame["year"] if "year" in frame else frame["date"].str[:4].astype(int)
    expected = frame.groupby(years)[measure].mean()
    assert drawn.query.dimension == "time"
    assert drawn.labels == [str(year) for year in expected.index]
    assert drawn.series[0].values == [float(v) for v in expected.to_numpy()]


@SETTINGS
@given(tables(), st.sampled_from(EXCLUSIONS))
def test_a_file_left_out_is_never_used(
    table: tuple[pd.DataFrame, str, str, str, str], phrase: str
) -> None:
    """An exclusion by file name, in English or Korean, leaves the file out of the sources,
    the charts and the questions, and no other file."""
    frame, measure, measure_en, _measure_ko, _category_en = table
    request = f"Write a short brief on {measure_en}. " + phrase.format(file="shipping_tonnage.csv")
    with home_with(frame, f"{measure}_data.csv", other=True) as home:
        spec = _spec(home, request)
    assert spec.excluded() == {"assets/shipping_tonnage.csv"}
    assert "assets/shipping_tonnage.csv" not in spec.sources
    assert f"assets/{measure}_data.csv" in spec.sources
    assert all(c.data is None or c.data.file != "assets/shipping_tonnage.csv" for c in spec.charts)


ABSENT = ["Zephyr", "Quorra", "Ilvermorny", "Tallis"]  # names no generated table holds


@SETTINGS
@given(tables(), st.sampled_from(ABSENT), st.booleans())
def test_a_question_is_answered_for_the_name_it_asks_or_not_at_all(
    table: tuple[pd.DataFrame, str, str, str, str], absent: str, held: bool
) -> None:
    """"What was <name>'s <measure> in <year>?": for a name the table holds, that name's own
    value of the year (pandas, by the measure's aggregation); for a name it does not hold, no
    answer, never the total of every row."""
    frame, measure, measure_en, _measure_ko, _category_en = table
    category = next(c for c in frame.columns if c not in (measure, "year", "date"))
    years = frame["year"] if "year" in frame else frame["date"].str[:4].astype(int)
    year = int(years.iloc[-1])
    name = str(frame[category].iloc[0]) if held else absent
    with home_with(frame, f"{measure}_data.csv", other=False) as home:
        spec = _spec(home, f"What was {name}'s {measure_en} in {year}?")
    assert len(spec.questions) == 1, spec.questions
    (question,) = spec.questions
    if not held:
        assert not question.answerable, question
        assert absent in question.reason or "no table" in question.reason
        return
    assert question.answerable, question.reason
    cells = frame[(years == year) & (frame[category] == name)][measure]
    # a stock is the year's last value, a rate or level its mean, a count or amount the sum
    how = {"population": "last", "unemployment_rate": "mean", "avg_temperature": "mean"}
    expected = {"last": cells.iloc[-1], "mean": cells.mean()}.get(how.get(measure, ""), cells.sum())
    shown = f"{expected:,.2f}".rstrip("0").rstrip(".") if expected % 1 else f"{int(expected):,}"
    assert shown in question.answer and name in question.answer


@SETTINGS
@given(st.sampled_from(MEASURES), st.integers(2, 12), st.integers(1, 11), st.integers(3, 8),
       st.lists(st.integers(0, 5000), min_size=120, max_size=120))
def test_the_first_and_last_full_years_leave_out_years_held_in_part(
    measure: tuple[str, str, str], first_month: int, last_month: int, years: int,
    cells: list[int],
) -> None:
    """A monthly series that starts and ends inside a year: "compare the first and last full
    years" is the change between the first and the last year of twelve months, each year's
    value combined as the measure's kind says (pandas computes the same)."""
    name, words, _korean = measure
    dates = pd.period_range(f"2001-{first_month:02d}", f"{2001 + years}-{last_month:02d}",
                            freq="M")
    frame = pd.DataFrame({"month": dates.strftime("%Y-%m"), name: cells[: len(dates)]
                          + [0] * max(0, len(dates) - len(cells))})  # fmt: skip
    with home_with(frame, f"{name}_monthly.csv", other=False) as home:
        spec = _spec(home, f"Chart the {words} by year and compare the first and last full years.")
    (question,) = spec.questions
    assert question.answerable, question.reason
    years_of = frame["month"].str[:4].astype(int)
    counts = years_of.value_counts()
    whole = sorted(year for year, count in counts.items() if count == 12)
    how = {"population": "last", "unemployment_rate": "mean", "avg_temperature": "mean"}
    combine = how.get(name, "sum")
    values = frame.groupby(years_of)[name].agg(combine)
    assert f"in {whole[0]}" in question.answer and f"in {whole[-1]}" in question.answer
    change = values[whole[-1]] - values[whole[0]]
    shown = f"{abs(change):,.2f}" if change % 1 else f"{int(abs(change)):,}"
    assert shown in question.answer, (question.answer, change)


@SETTINGS
@given(tables())
def test_a_chart_by_decade_averages_each_decade(
    table: tuple[pd.DataFrame, str, str, str, str],
) -> None:
    """"Chart the average <measure> by decade": one point a decade (`1950s`), the mean of its
    cells, as pandas computes it."""
    frame, measure, measure_en, _measure_ko, _category_en = table
    with home_with(frame, f"{measure}_data.csv", other=False) as home:
        drawn = _drawn(home, _spec(home, f"Chart the average {measure_en} by decade."))
    years = frame["year"] if "year" in frame else frame["date"].str[:4].astype(int)
    expected = frame.groupby(years // 10)[measure].mean()
    assert drawn.query.frequency == "decade"
    assert drawn.labels == [f"{decade * 10}s" for decade in expected.index]
    assert drawn.series[0].values == pytest.approx([float(v) for v in expected.to_numpy()])
