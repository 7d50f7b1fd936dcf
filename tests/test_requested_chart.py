"""The chart a request names ("revenue by country") is drawn from the whole table that holds it."""

from __future__ import annotations

from pathlib import Path

from executor.builtin.charts import ChartAsk, chart_asks, requested_charts
from executor.builtin.tables import parse_csv

FIXTURE = Path(__file__).parent / "fixtures" / "assets" / "quarterly_revenue.csv"


def test_asks_are_read_in_english_and_korean() -> None:
    """`<measure> by <dimension>` and `<dimension>별 <measure>` are both understood."""
    text = "Write a memo with a chart of revenue by country. 국가별 매출 차트도."
    assert chart_asks(text) == [ChartAsk("revenue", "country"), ChartAsk("매출", "국가")]


def test_revenue_by_country_sums_every_row_of_the_csv() -> None:
    """All rows count (not a preview): Germany and France summed over the four quarters."""
    table = parse_csv(FIXTURE.read_text(encoding="utf-8"))
    expected: dict[str, float] = {}
    for row in table.rows:
        expected[row[1]] = expected.get(row[1], 0.0) + float(row[2])
    [chart] = requested_charts("a chart of revenue by country", [(table, "assets/q.csv")])
    assert dict(zip(chart.labels, chart.lines[0].values, strict=True)) == expected
    assert chart.title == "revenue_eur_m by region (sum of 4 rows each)"
    assert chart.source == "assets/q.csv"


def test_nothing_is_drawn_when_no_table_carries_the_ask() -> None:
    """An ask no column answers draws nothing rather than something else."""
    table = parse_csv(FIXTURE.read_text(encoding="utf-8"))
    assert requested_charts("a chart of headcount by city", [(table, "assets/q.csv")]) == []
