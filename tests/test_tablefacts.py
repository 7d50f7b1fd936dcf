"""The tables' part of a spec's deliverable, on corpus tables nobody here wrote: every chart value
and every fact equals an independent computation over the file with the csv module."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from executor.builtin.tablefacts import SourceTexts, draw_charts, standard_facts
from multiverse.home import Home
from multiverse.spec import Chart, RequestSpec
from multiverse.tabular import ChartData

from specbrief import chart, checked, corpus_home, rows

Expected = tuple[list[str], dict[str, list[float]]]  # labels, values by series


def by(key: Callable[[dict[str, str]], str], value: str, name: str,
       how: Callable[[list[float]], float]) -> dict[str, float]:  # fmt: skip
    """The rows of a table grouped by `key`, each group's `value` cells combined by `how`."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows(name):
        if row[value].strip():
            groups[key(row)].append(float(row[value]))
    return {group: how(cells) for group, cells in groups.items()}


def rate_by_year() -> Expected:
    """Danish bond rate (quarterly): the mean of each year's quarters."""
    means = by(lambda r: r["period"][:4], "ibo", "danish_money", statistics.mean)
    return sorted(means), {"ibo": [means[y] for y in sorted(means)]}


def births_by_month() -> Expected:
    """Daily births (a count): the sum of each month's days."""
    sums = by(lambda r: r["date"][:7], "births", "births_1978", sum)
    return sorted(sums), {"births": [sums[m] for m in sorted(sums)]}


def population_by_year() -> Expected:
    """US population (a stock, monthly): each year's last month."""
    last = by(lambda r: r["date"][:4], "pop", "economics", lambda cells: cells[-1])
    return sorted(last), {"pop": [last[y] for y in sorted(last)]}


def occupancy_in_victoria() -> Expected:
    """Occupancy (a rate) of one state only: the mean of each year's quarters."""
    victoria = [r for r in rows("aus_accommodation") if r["State"] == "Victoria"]
    groups: dict[str, list[float]] = defaultdict(list)
    for row in victoria:
        groups[row["Date"][:4]].append(float(row["Occupancy"]))
    return sorted(groups), {"Occupancy": [statistics.mean(groups[y]) for y in sorted(groups)]}


def top_five_sub_categories() -> Expected:
    """Sales (an amount) summed per sub-category, the five largest, largest first."""
    sums = by(lambda r: r["Sub-Category"], "Sales", "superstore", sum)
    top = sorted(sums, key=lambda name: -sums[name])[:5]
    return top, {"Sales": [sums[name] for name in top]}


def price_per_symbol_by_year() -> Expected:
    """Stock prices (monthly): one series per symbol, each year's mean."""
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows("stocks_monthly"):
        groups[row["symbol"]][row["date"].split()[-1]].append(float(row["price"]))
    years = sorted({year for by_year in groups.values() for year in by_year})
    return years, {symbol: [statistics.mean(by_year[y]) if y in by_year else math.nan
                            for y in years] for symbol, by_year in groups.items()}  # fmt: skip


def wide_degrees() -> Expected:
    """A wide table: two columns of one measure, one series each, a value a year."""
    table = rows("women_degrees")
    years = [row["Year"] for row in table]
    return years, {field: [float(row[field]) for row in table]
                   for field in ("Biology", "Engineering")}  # fmt: skip


def saving_rate_by_month() -> Expected:
    """574 monthly values: a line with no ceiling on its points."""
    table = rows("economics")
    return [row["date"][:7] for row in table], {"psavert": [float(r["psavert"]) for r in table]}


CASES: dict[str, tuple[str, Chart, Callable[[], Expected], str]] = {
    "mean of a rate per year": (
        "danish_money", chart("the bond rate by year", "danish_money.csv", "ibo",
                              frequency="year"), rate_by_year, "mean"),
    "sum of counts per month": (
        "births_1978", chart("births month by month", "births_1978.csv", "births",
                             frequency="month"), births_by_month, "sum"),
    "last value of a stock per year": (
        "economics", chart("population by year", "economics.csv", "pop", frequency="year"),
        population_by_year, "last"),
    "a category filter": (
        "aus_accommodation", chart("occupancy in Victoria", "aus_accommodation.csv",
                                   "Occupancy", frequency="year",
                                   filters={"State": ["Victoria"]}),
        occupancy_in_victoria, "mean"),
    "top-N categories": (
        "superstore", chart("the five largest sub-categories", "superstore.csv", "Sales",
                            dimension="Sub-Category", top_n=5), top_five_sub_categories, "sum"),
    "one series per category over time": (
        "stocks_monthly", chart("how each stock's price changed", "stocks_monthly.csv", "price",
                                frequency="year", series_by="symbol"),
        price_per_symbol_by_year, "mean"),
    "a wide table": (
        "women_degrees", chart("biology and engineering degrees", "women_degrees.csv", "Biology",
                               "Engineering"), wide_degrees, "mean"),
    "a long monthly line": (
        "economics", chart("the saving rate month by month", "economics.csv", "psavert",
                           frequency="month"), saving_rate_by_month, "mean"),
}  # fmt: skip


def drawn_from(home: Home, root: Path, spec: RequestSpec) -> ChartData:
    """The one chart of a checked spec, drawn as the deliverable draws it."""
    texts = SourceTexts(root, [path for path in spec.sources if path not in spec.excluded()])
    (drawn,) = draw_charts(spec, texts, "report", "refused")
    assert drawn.data is not None, drawn.why
    assert drawn.svg.startswith("<svg") and drawn.title in drawn.svg
    return drawn.data


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_chart_value_equals_an_independent_computation(home: Home, case: str) -> None:
    """Each chart's labels and values are the csv module's, by the aggregation its measure
    takes; the first values are the ones the proposal previewed."""
    name, asked, expected, how = CASES[case]
    root = corpus_home(home, name)
    spec = checked(home, RequestSpec(request=asked.reading.phrase, charts=[asked]))
    assert spec.charts[0].drawable, spec.charts[0].reason
    data = drawn_from(home, root, spec)
    labels, values = expected()
    assert data.labels == labels
    assert data.aggregation == how
    drawn = {series.name: series.values for series in data.series}
    assert sorted(drawn) == sorted(values) or list(drawn) == [data.y_label] or len(drawn) == 1
    for name_, want in values.items():
        got = drawn.get(name_, next(iter(drawn.values())) if len(drawn) == 1 else None)
        assert got is not None, f"no series {name_}"
        for g, w in zip(got, want, strict=True):
            assert (g is None and math.isnan(w)) or math.isclose(g or 0, w, rel_tol=1e-9)
    previewed = spec.charts[0].preview[0].split(": ", 1)[0]
    assert previewed == data.labels[0]  # the proposal previewed the very same data


def test_a_long_series_is_a_line_without_a_ceiling(home: Home) -> None:
    """574 months are drawn whole, as a line."""
    corpus_home(home, "economics")
    _, asked, _, _ = CASES["a long monthly line"]
    spec = checked(home, RequestSpec(request="saving rate", charts=[asked]))
    data = drawn_from(home, home.root.resolve(), spec)
    assert data.kind == "line" and len(data.labels) == 574
    # the column's own name, or the label the table's description gives it
    assert "psavert" in data.y_label.lower() or "savings rate" in data.y_label.lower()


def test_the_standard_facts_equal_an_independent_computation(home: Home) -> None:
    """First, last, extremes with when, change, annual growth and mean of a yearly rate."""
    corpus_home(home, "us_marriages_divorces")
    asked = chart("the marriage rate", "us_marriages_divorces.csv", "Marriages_per_1000")
    spec = checked(home, RequestSpec(request="How has the marriage rate moved?", charts=[asked]))
    texts = SourceTexts(home.root.resolve(), spec.sources)
    (facts,) = standard_facts(spec, texts)
    by_kind = {fact.kind: fact for fact in facts}
    years = [(int(r["Year"]), float(r["Marriages_per_1000"]))
             for r in rows("us_marriages_divorces") if r["Marriages_per_1000"].strip()]
    (y0, v0), (y1, v1) = years[0], years[-1]
    top = max(years, key=lambda p: p[1])
    low = min(years, key=lambda p: p[1])
    assert (by_kind["first"].value, by_kind["first"].period) == (v0, str(y0))
    assert (by_kind["last"].value, by_kind["last"].period) == (v1, str(y1))
    assert (by_kind["max"].value, by_kind["max"].period) == (top[1], str(top[0]))
    assert (by_kind["min"].value, by_kind["min"].period) == (low[1], str(low[0]))
    assert math.isclose(by_kind["change"].value, v1 - v0)
    assert math.isclose(by_kind["change"].percent or 0, (v1 - v0) / v0 * 100)
    cagr = ((v1 / v0) ** (1 / (y1 - y0)) - 1) * 100
    assert math.isclose(by_kind["cagr"].value, cagr)
    assert math.isclose(by_kind["mean"].value, statistics.mean(v for _, v in years))
    sentence = by_kind["max"].sentence("en")
    assert f"highest in {top[0]}, at {top[1]}" in sentence
    assert f"row {years.index(top) + 2 + _skipped_before(top[0])}" in sentence


def _skipped_before(year: int) -> int:
    """Rows of the marriages table with no rate before a year (they still have lines)."""
    return sum(1 for r in rows("us_marriages_divorces")
               if int(r["Year"]) < year and not r["Marriages_per_1000"].strip())  # fmt: skip


def test_the_largest_and_fastest_growing_categories(home: Home) -> None:
    """Per-category facts of a long table: the largest in the latest year, the fastest-growing
    from the first year to the last, each as the csv module finds it."""
    corpus_home(home, "grunfeld")
    asked = chart("investment by firm", "grunfeld.csv", "invest", series_by="firm")
    spec = checked(home, RequestSpec(request="How did each firm's investment change?",
                                     charts=[asked]))  # fmt: skip
    (facts,) = standard_facts(spec, SourceTexts(home.root.resolve(), spec.sources))
    by_kind = {fact.kind: fact for fact in facts}
    table = rows("grunfeld")
    first, last = min(r["year"] for r in table), max(r["year"] for r in table)
    at_last = {r["firm"]: float(r["invest"]) for r in table if r["year"] == last}
    at_first = {r["firm"]: float(r["invest"]) for r in table if r["year"] == first}
    largest = max(at_last, key=lambda firm: at_last[firm])
    growth = {f: (at_last[f] - at_first[f]) / at_first[f] for f in at_last if f in at_first}
    fastest = max(growth, key=lambda firm: growth[firm])
    assert (by_kind["largest"].category, by_kind["largest"].value) == (largest, at_last[largest])
    assert by_kind["fastest_growing"].category == fastest
    assert by_kind["fastest_growing"].period == f"{first}–{last}"
    assert math.isclose(by_kind["fastest_growing"].percent or 0, growth[fastest] * 100)


def test_the_facts_take_the_aggregation_the_chart_asks(home: Home) -> None:
    """A chart of takings summed per year (one line per state): the facts are of the yearly
    totals too, as the csv module adds them up, over whole years (2016 holds two quarters)."""
    corpus_home(home, "aus_accommodation")
    asked = chart("total takings per state and year", "aus_accommodation.csv", "Takings",
                  frequency="year", aggregation="sum", series_by="State")  # fmt: skip
    spec = checked(home, RequestSpec(request="How did takings change?", charts=[asked]))
    (facts,) = standard_facts(spec, SourceTexts(home.root.resolve(), spec.sources))
    totals = by(lambda r: r["Date"][:4], "Takings", "aus_accommodation", sum)
    quarters = by(lambda r: r["Date"][:4], "Takings", "aus_accommodation", len)
    whole = max(quarters.values())
    totals = {year: total for year, total in totals.items() if quarters[year] == whole}
    change = next(fact for fact in facts if fact.kind == "change")
    assert change.aggregation == "sum"
    assert math.isclose(change.start_value or 0, totals[min(totals)])
    assert math.isclose(change.end_value or 0, totals[max(totals)])
    top = max(totals, key=lambda year: totals[year])
    peak = next(fact for fact in facts if fact.kind == "max")
    assert (peak.period, round(peak.value, 6)) == (top, round(totals[top], 6))


def test_the_standard_facts_average_a_quarterly_rate_per_year_first(home: Home) -> None:
    """A quarterly rate spanning several years: its facts are of the yearly means, and say so
    (ported from the tabular `facts()` the old brief used)."""
    rates = {1982: (8.8, 9.4, 9.9, 10.7), 1983: (10.4, 10.1, 9.4, 8.5),
             **{1984 + i: (7.5,) * 4 for i in range(3)}}
    lines = ["year,quarter,unemployment_rate"] + [
        f"{year},{quarter},{rate}" for year, values in rates.items()
        for quarter, rate in enumerate(values, start=1)
    ]
    (home.root / "assets" / "x.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    asked = chart("the unemployment rate", "x.csv", "unemployment_rate")
    spec = checked(home, RequestSpec(request="How has unemployment moved?", charts=[asked]))
    (facts,) = standard_facts(spec, SourceTexts(home.root.resolve(), spec.sources))
    assert facts
    assert all(f.aggregation == "mean" and f.frequency == "year" for f in facts)
    # each says the yearly values are means ("the mean … averaged" says it once)
    assert all(f.sentence("en").startswith("Mean unemployment rate") for f in facts
               if f.kind != "mean")  # fmt: skip
    assert all(f.sentence("en").startswith("Unemployment rate averaged") for f in facts
               if f.kind == "mean")  # fmt: skip
    peak = next(fact for fact in facts if fact.kind == "max")
    assert (peak.period, round(peak.value, 2)) == ("1982", 9.70)


def test_the_measures_the_request_names_lead_and_a_rate_changes_in_points(home: Home) -> None:
    """With no chart or question, the facts are of the measures the request names (not the
    table's first columns); a rate in % changes by percentage points and has no growth rate."""
    corpus_home(home, "economics")
    request = "Write a brief on the personal saving rate and the duration of unemployment."
    spec = checked(home, RequestSpec(request=request))
    lists = standard_facts(spec, SourceTexts(home.root.resolve(), spec.sources))
    measures = [facts[0].measure for facts in lists if facts]
    assert measures[:2] == ["psavert", "uempmed"], measures
    saving = {fact.kind: fact for fact in lists[0]}
    assert "cagr" not in saving
    change = saving["change"].sentence("en")
    assert "percentage points" in change or saving["change"].unit != "%", change
    assert "(+" not in change.split("change of", 1)[1].split("(assets", 1)[0], change
    yearly: dict[int, list[float]] = defaultdict(list)
    for row in rows("economics"):
        yearly[int(row["date"][:4])].append(float(row["psavert"]))
    whole = [year for year, cells in yearly.items() if len(cells) == 12]  # years held whole
    first, last = min(whole), max(whole)
    assert math.isclose(saving["change"].value,
                        statistics.mean(yearly[last]) - statistics.mean(yearly[first]))


@pytest.mark.parametrize("country", ["Korea, Rep.", "Brazil", "Kenya", "Finland", "Australia"])
def test_a_table_filtered_to_one_country_ranks_no_category(home: Home, country: str) -> None:
    """A chart of one country's GDP per capita (gapminder, filtered): no standard fact ranks its
    continent — the largest or fastest-growing "of" one category is a comparison no data made
    (the local model's Korean memo said Asia grew fastest, from a fact that said so)."""
    corpus_home(home, "gapminder")
    asked = chart("GDP per capita over time", "gapminder.csv", "gdpPercap",
                  filters={"country": [country]})  # fmt: skip
    spec = checked(home, RequestSpec(request=f"How did {country}'s GDP per capita grow?",
                                     charts=[asked]))  # fmt: skip
    (facts,) = standard_facts(spec, SourceTexts(home.root.resolve(), spec.sources))
    assert facts and not [fact for fact in facts if fact.kind in ("largest", "fastest_growing")]
    years = {r["year"]: float(r["gdpPercap"]) for r in rows("gapminder") if r["country"] == country}
    change = next(fact for fact in facts if fact.kind == "change")
    assert math.isclose(change.end_value or 0, years[max(years)])
