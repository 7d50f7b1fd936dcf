"""Questions about a table's make-up and comparisons the corpus's real tables ask, each checked
against the csv module over all of the corpus's tables (not one fixture): how many different
values a label column holds, which columns a table has, which of a chart's like measures is
largest, a "which was the worst" question answered by both ends, a measure beside a wide group
of months keyed by its own rows, "from <first year> on" keeping every row, a "by <what no
column is>" over a table whose like measures are the categories, and a limit on each bullet
read as such (SPEC §6)."""

from __future__ import annotations

import csv
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from multiverse.home import Home, init_home
from multiverse.spec import RequestSpec, check_spec, scan_home
from multiverse.tabular import ComputeQuery, Fact, chart_data, compute, profile
from multiverse.tabular.models import ChartQuery
from offline import read_request

CORPUS = Path(__file__).resolve().parent / "corpus"
MANIFEST: dict[str, dict[str, Any]] = yaml.safe_load(
    (CORPUS / "tables.yaml").read_text(encoding="utf-8")
)["tables"]
CSV_TABLES = {name: meta for name, meta in MANIFEST.items() if meta["file"].endswith(".csv")}


def _rows(meta: dict[str, Any]) -> tuple[list[str], list[dict[str, str]]]:
    with (CORPUS / meta["file"]).open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _label_columns() -> Iterator[tuple[str, str]]:
    for name, meta in CSV_TABLES.items():
        for column in meta["columns"]:
            if column.get("role") in ("category", "identifier"):
                yield name, column["name"]


@contextmanager
def _home(*tables: str, guidelines: dict[str, str] | None = None) -> Iterator[Home]:
    """A fresh home whose assets/ holds these corpus tables and their descriptions."""
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home")
        init_home(home)
        for name in tables:
            meta = MANIFEST[name]
            for path in (meta["file"], meta["description"]):
                shutil.copy(CORPUS / path, home.assets / Path(path).name)
        for file_name, text in (guidelines or {}).items():
            (home.guidelines / file_name).write_text(text, encoding="utf-8")
        yield home


def _spec(home: Home, request: str) -> RequestSpec:
    scan = scan_home(home)
    return check_spec(read_request(request, [], scan), scan, home.root)


@pytest.mark.parametrize(("table", "column"), list(_label_columns()))
def test_how_many_different_values_a_label_column_holds(table: str, column: str) -> None:
    """The count of different non-empty values, as the csv module counts them, with the rows
    it read cited."""
    meta = CSV_TABLES[table]
    _, rows = _rows(meta)
    filled = [row[column].strip() for row in rows if row[column].strip()]
    fact = compute(ComputeQuery(kind="distinct", file=meta["file"], measure=column), root=CORPUS)
    assert isinstance(fact, Fact), fact
    assert fact.value == len(set(filled))
    assert fact.citation.rows == len(filled)
    assert f"{len(set(filled))}" in fact.sentence("en")
    assert f"{len(set(filled))}개" in fact.sentence("ko")


@pytest.mark.parametrize("table", sorted(CSV_TABLES))
def test_which_columns_a_table_has(table: str) -> None:
    """Every column of the header is named (a wide group of periods as its first … last)."""
    meta = CSV_TABLES[table]
    header, _ = _rows(meta)
    fact = compute(ComputeQuery(kind="columns", file=meta["file"], measure=""), root=CORPUS)
    assert isinstance(fact, Fact), fact
    assert fact.value == len(header)
    named = fact.label.split(", ")
    grouped = [name for name in named if " … " in name]
    listed = [name for name in named if " … " not in name]
    assert set(listed) <= set(header)
    for group in grouped:
        first, last = group.split(" … ")
        assert header.index(first) < header.index(last)
        listed += header[header.index(first) : header.index(last) + 1]
    assert sorted(listed) == sorted(header)


def test_a_question_naming_a_label_column_by_its_plural_is_counted() -> None:
    """A "how many <things> …" in English and Korean reads the label column the words name, for
    every corpus table with a category column named in plain words."""
    asked = 0
    for name, meta in CSV_TABLES.items():
        columns = [c["name"] for c in meta["columns"] if c.get("role") == "category"
                   and re.fullmatch(r"[A-Za-z]+", c["name"])]  # fmt: skip
        if not columns:
            continue
        file_name = Path(meta["file"]).name
        with _home(name) as home:
            for column in columns[:1]:
                spec = _spec(home, f"How many different {column.lower()}s does {file_name} have?")
                asked += 1
                kinds = [(q.compute.kind, q.compute.measure) for q in spec.questions
                         if q.compute is not None]  # fmt: skip
                assert kinds == [("distinct", column)], (name, spec.questions)
                assert spec.mode == "simple"
                assert spec.questions[0].answerable
    assert asked >= 5


def test_a_korean_count_question_and_a_columns_question_are_answered_at_once() -> None:
    with _home("fertility", "tips") as home:
        counted = _spec(home, "fertility.csv에는 몇 개 나라가 들어 있나요?")
        columns = _spec(home, "Which columns does tips.csv have?")
    _, rows = _rows(MANIFEST["fertility"])
    countries = len({row["Country Name"] for row in rows})
    assert counted.mode == "simple" and counted.questions[0].answerable
    assert f"{countries}개" in counted.questions[0].answer
    assert columns.mode == "simple" and columns.questions[0].answerable
    header, _ = _rows(MANIFEST["tips"])
    assert all(name in columns.questions[0].answer for name in header)


def _like_groups() -> Iterator[tuple[str, list[str]]]:
    """Per corpus table, its summed measures of one unit (two or more), as the manifest says."""
    for name, meta in CSV_TABLES.items():
        groups: dict[tuple[Any, ...], list[str]] = {}
        for column in meta["columns"]:
            if column.get("role") == "measure" and column.get("aggregation") == "sum":
                groups.setdefault((column.get("kind"), column.get("unit")), []).append(
                    column["name"]
                )
        for columns in groups.values():
            if len(columns) >= 2:
                yield name, columns


@pytest.mark.parametrize(("table", "columns"), list(_like_groups()))
def test_the_largest_of_like_measures_is_the_one_with_the_largest_total(
    table: str, columns: list[str]
) -> None:
    """Over every row, the column whose total is largest, and that total (Decimal sums)."""
    meta = CSV_TABLES[table]
    _, rows = _rows(meta)
    totals = {c: sum((Decimal(r[c]) for r in rows if r[c].strip()), Decimal(0)) for c in columns}
    best = max(totals, key=lambda c: totals[c])
    description = (CORPUS / meta["description"]).read_text(encoding="utf-8")
    time = profile(CORPUS / meta["file"], root=CORPUS, descriptions=[description]).time
    fact = compute(
        ComputeQuery(kind="largest", file=meta["file"], measure=columns[0], compared=columns[1:],
                     start=time.first if time else None, end=time.last if time else None),
        root=CORPUS, descriptions=[description],
    )  # fmt: skip
    assert isinstance(fact, Fact), fact
    assert fact.category == best
    assert Decimal(str(fact.value)) == totals[best]


def test_unlike_measures_are_never_compared() -> None:
    """A comparison needs two columns or more, and only ranks."""
    refused = compute(ComputeQuery(kind="max", file="tables/crimea.csv", measure="disease",
                                   compared=["wounds"]), root=CORPUS)  # fmt: skip
    assert not isinstance(refused, Fact)


def test_a_judgement_question_is_answered_with_both_ends_and_no_verdict() -> None:
    with _home("us_unemployment_1948") as home:
        spec = _spec(home, "Draw the annual US unemployment rate. Which year was the worst?")
    _, rows = _rows(MANIFEST["us_unemployment_1948"])
    annual = {row["Year"]: Decimal(row["Annual"]) for row in rows}
    highest = max(annual, key=lambda year: (annual[year], -int(year)))
    lowest = min(annual, key=lambda year: (annual[year], int(year)))
    kinds = [q.compute.kind for q in spec.questions if q.compute is not None]
    assert kinds == ["max", "min"]
    assert highest in spec.questions[0].answer and lowest in spec.questions[1].answer
    assert any("judgement" in r.phrase for r in spec.not_understood)


def test_a_measure_beside_a_wide_group_of_months_is_keyed_by_its_own_rows() -> None:
    """An "Annual" column beside Jan … Dec: one value a year, as written, named as itself."""
    _, rows = _rows(MANIFEST["us_unemployment_1948"])
    drawn = chart_data(ChartQuery(file="tables/us_unemployment_1948.csv", measures=["Annual"]),
                       root=CORPUS)  # fmt: skip
    assert drawn.labels == [row["Year"] for row in rows]
    assert drawn.series[0].values == [float(row["Annual"]) for row in rows]
    fact = compute(ComputeQuery(kind="max", file="tables/us_unemployment_1948.csv",
                                measure="Annual"), root=CORPUS)  # fmt: skip
    assert isinstance(fact, Fact) and fact.label == "Annual" and fact.aggregation is None


@pytest.mark.parametrize("table", ["us_unemployment_1948", "economics", "driving"])
def test_from_the_first_year_on_keeps_every_row_and_a_later_year_filters(table: str) -> None:
    meta = MANIFEST[table]
    first = meta["time"]["first"][:4]
    later = str(int(first) + 2)
    measure = next(c["name"] for c in meta["columns"] if c.get("role") == "measure")
    with _home(table) as home:
        whole = _spec(home, f"Chart {measure} by year from {first} on.")
        part = _spec(home, f"Chart {measure} by year from {later} on.")
    assert whole.charts[0].drawable and not whole.charts[0].data.filters  # type: ignore[union-attr]
    assert part.charts[0].drawable and part.charts[0].data.filters  # type: ignore[union-attr]


def test_by_what_no_column_is_over_like_measures_charts_each_of_them() -> None:
    """Crimea's causes are its columns: "by cause" draws disease, wounds and other over time;
    a table with category columns keeps refusing what it cannot read."""
    with _home("crimea") as home:
        spec = _spec(home, "Chart the monthly deaths from disease by cause.")
    data = spec.charts[0].data
    assert spec.charts[0].drawable and data is not None
    assert sorted(data.measures) == ["disease", "other", "wounds"]
    assert data.dimension == "time"
    with _home("tips") as home:
        refused = _spec(home, "Chart the total tip by weather.")
    assert not refused.charts[0].drawable and "weather" in refused.charts[0].reason


def test_a_limit_on_each_bullet_is_not_a_limit_on_the_whole() -> None:
    with _home("driving", guidelines={"style.txt": "Keep every bullet under 25 words."}) as home:
        spec = _spec(home, "Summarise driving and gas prices.")
        rules = {(r.rule, r.value) for r in spec.format_rules}
    assert ("item_words", "25") in rules and not any(rule == "max_words" for rule, _ in rules)
    with _home("driving", guidelines={"style.txt": "Keep the summary under 300 words."}) as home:
        whole = {(r.rule, r.value) for r in _spec(home, "Summarise driving.").format_rules}
    assert whole == {("max_words", "300")}


def test_a_brief_under_a_limit_on_each_bullet_keeps_its_facts_and_says_longer_items() -> None:
    """The facts stay (a limit on each bullet caps no whole brief), and items past the limit
    are counted under "Not followed"."""
    from evals.corpus import deliver

    for limit in (25, 8):
        rule = f"Write in bullet points. Keep every bullet under {limit} words."
        with _home("driving", guidelines={"style.txt": rule}) as home:
            spec = _spec(home, "Summarise how driving and gas prices moved from 1956 to 2010.")
            report, _ = deliver(home, spec)
        bullets = [line[2:] for line in report.splitlines() if line.startswith("- ")]
        facts = [b for b in bullets if "assets/driving.csv" in b and "row" in b]
        assert len(facts) >= 4, report
        longer = [b for b in bullets if len(b.split()) > limit and "Not followed" not in b]
        said = [line for line in report.splitlines() if f"under {limit} words" in line]
        assert bool(longer) == bool(said), (limit, said)


def _finer_than_years() -> Iterator[tuple[str, str]]:
    """Tables whose rows are quarters or months (one row a period), with a measure named in
    plain words."""
    for name, meta in CSV_TABLES.items():
        time = meta.get("time") or {}
        if time.get("frequency") not in ("quarter", "month", "day") or time.get("in_header"):
            continue
        if meta.get("shape") != "single":
            continue
        for column in meta["columns"]:
            plain_name = re.fullmatch(r"[A-Za-z][A-Za-z_]{2,}", column["name"])
            if column.get("role") == "measure" and plain_name:
                yield name, column["name"]
                break


@pytest.mark.parametrize(("table", "measure"), list(_finer_than_years()))
def test_which_year_of_a_finer_table_compares_years(table: str, measure: str) -> None:
    """A "which year had the highest X" of quarterly or monthly rows: the years' values (as the
    measure combines) compared, the year named — not a quarter or a month."""
    sys.path.insert(0, str(CORPUS))
    try:
        from compute_expectations import Table, series  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(CORPUS))
    expected = Table(MANIFEST[table])
    years = series(expected, measure, expected.rows, by_year=True)
    best = max(years, key=lambda point: (point[2], -point[0][0]))
    # A table of one year (births_1978) has nothing to compare: its year is said as the only one.
    ranked = f" in {best[1]}," if len(years) > 1 else f"{best[1]} is the only year with "
    for request, said in ((f"Which year had the highest {measure}?", ranked),
                          (f"{measure}가 가장 높았던 해는 언제인가요?", f" {best[1]}년에 ")):
        with _home(table) as home:
            spec = _spec(home, request)
        asked = [q for q in spec.questions if q.compute is not None]
        assert asked and asked[0].compute is not None, (request, spec.questions)
        assert asked[0].compute.frequency == "year", request
        assert asked[0].answerable and said in asked[0].answer, asked[0].answer


@pytest.mark.parametrize("seed", range(6))
def test_measure_columns_named_by_a_category_columns_values_are_one_measure(seed: int) -> None:
    """Generated elections: candidates as columns beside a `winner` column naming them are one
    measure's categories; a category column whose values are not all column names makes none."""
    import random

    from multiverse.tabular import profile as profile_of

    rng = random.Random(seed)
    names = rng.sample(["Avery", "Blake", "Casey", "Drew", "Emery", "Finley", "Gray"],
                       rng.randint(2, 4))  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for control in (False, True):
            lines = [",".join(["district", *names, "total", "winner"])]
            for number in range(rng.randint(5, 30)):
                votes = [rng.randint(0, 5000) for _ in names]
                winner = names[votes.index(max(votes))] if not control else "nobody"
                lines.append(",".join([f"D{number}", *map(str, votes), str(sum(votes)), winner]))
            (root / "election.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
            found = profile_of(root / "election.csv", root=root)
            winners = set(found.categories.get("winner", []))
            if control or len(winners) < 2:  # no column names the candidates' columns
                assert found.wide is None
            else:  # the candidates, those that never won too; never the total
                assert found.wide is not None and found.wide.axis == "category"
                assert found.wide.columns == names


def test_votes_each_candidate_got_across_all_districts_are_the_columns_totals() -> None:
    """"Across all districts" sums over them; "each candidate" and "후보별" are the columns."""
    _, rows = _rows(MANIFEST["montreal_election"])
    totals = {name: sum(int(row[name]) for row in rows) for name in ("Coderre", "Bergeron", "Joly")}
    for request in (
        "Chart the total votes each candidate got across all districts in the election.",
        "2013년 몬트리올 시장 선거 결과를 정리해 주세요. 후보별 득표 합계 차트도 넣어 주세요.",
    ):
        with _home("montreal_election") as home:
            spec = _spec(home, request)
            chart = spec.charts[0]
            assert chart.drawable and chart.data is not None, chart.reason
            assert sorted(chart.data.measures) == sorted(totals)
            drawn = chart_data(ChartQuery(file=chart.data.file, measures=chart.data.measures,
                                          dimension=chart.data.dimension,
                                          aggregation=chart.data.aggregation),
                               root=home.root)  # fmt: skip
        assert dict(zip(drawn.labels, drawn.series[0].values, strict=True)) == totals


def test_a_count_with_a_condition_is_not_read_as_a_count_of_the_tables_values() -> None:
    """"How many years was it above …" needs the condition applied: never answered as the
    number of years the table holds."""
    with _home("sunspots") as home:
        plain = _spec(home, "How many different years does sunspots.csv cover?")
        conditioned = _spec(home, "How many years had more than 100 sunspots?")
    assert [q.compute.kind for q in plain.questions if q.compute] == ["distinct"]
    assert not any(q.compute and q.compute.kind == "distinct" for q in conditioned.questions)
