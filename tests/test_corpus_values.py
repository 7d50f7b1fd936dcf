"""Every chart the corpus's requests get, and every measure's kind, checked against work done
without the engine: the corpus's own reader (`tests/corpus/compute_expectations.py`: the csv
module and Decimal arithmetic, periods parsed by strptime from the hand-written manifest) and
the manifest's hand-labelled kinds (`tests/corpus/tables.yaml`).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.corpus import CORPUS, cases, corpus_home, spec_of
from multiverse.spec import Chart
from multiverse.spec.check import query_of
from multiverse.tabular import ChartData, chart_data, profile

sys.path.insert(0, str(CORPUS))
from compute_expectations import Table, number  # type: ignore[import-not-found]

sys.path.remove(str(CORPUS))

MANIFEST = yaml.safe_load((CORPUS / "tables.yaml").read_text(encoding="utf-8"))["tables"]
BY_FILE = {Path(meta["file"]).name: meta for meta in MANIFEST.values()}
CASES = cases()
# Measures whose words say nothing of how they combine (the profile assumes a mean, and says so).
UNSTATED = {("tips", "size")}


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The .docx and .pdf descriptions the corpus builds from their real text."""
    sys.path.insert(0, str(CORPUS))
    try:
        from make_documents import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(CORPUS))
    folder = tmp_path_factory.mktemp("documents")
    build(folder)
    yield folder


def test_every_measure_of_the_corpus_combines_as_its_manifest_says() -> None:
    """Over 23 real tables, each measure's aggregation (mean, sum, last) is the one a person
    labelled, from the column's name and its description's words."""
    wrong = []
    for name, meta in MANIFEST.items():
        texts = [(CORPUS / meta["description"]).read_text(encoding="utf-8")]
        found = profile(CORPUS / meta["file"], root=CORPUS, descriptions=texts)
        wide = found.wide
        for column in meta["columns"]:
            if column.get("role") != "measure":
                continue
            got = found.column(column["name"])
            how = (wide.aggregation if wide is not None and column["name"] in wide.columns
                   else got.aggregation if got is not None else None)  # fmt: skip
            if how != column["aggregation"] and (name, column["name"]) not in UNSTATED:
                wrong.append((name, column["name"], column["aggregation"], how))
    assert not wrong


def _charts(documents: Path) -> Iterator[tuple[str, Path, Chart, ChartData]]:
    for case in CASES:
        with corpus_home(case, documents) as home:
            spec, scan = spec_of(case, home)
            for chart in spec.charts:
                if not chart.drawable or chart.data is None:
                    continue
                texts = [
                    (home.root / path).read_text(encoding="utf-8")
                    for path in scan.companions(chart.data.file)
                    if path.endswith(".md")
                ]
                drawn = chart_data(query_of(chart.data), root=home.root, descriptions=texts)
                assert isinstance(drawn, ChartData), (case["id"], drawn)
                yield case["id"], home.root, chart, drawn


def test_every_drawn_chart_of_the_corpus_equals_an_independent_computation(
    documents: Path,
) -> None:
    """Each chart a corpus request gets, recomputed by the corpus's own reader from the same
    rows, periods, filters and stated aggregation: the same labels and values."""
    checked = 0
    for case, _root, _chart, drawn in _charts(documents):
        meta = BY_FILE.get(Path(drawn.query.file).name)
        if meta is None or (meta.get("time") or {}).get("in_header"):
            continue  # JSON originals and wide-by-year tables: their own readers' tests
        table = Table(meta)
        expected = _reference(table, drawn)
        if expected is None:
            continue
        got = {
            series.name: [v for v in series.values] for series in drawn.series
        }  # fmt: skip
        assert set(got) == set(expected), (case, drawn.title, set(got), set(expected))
        for name, values in expected.items():
            labels = [label for label, _ in values]
            assert len(labels) == len(drawn.labels), (case, drawn.title, name)
            for (label, value), shown, got_value in zip(
                values, drawn.labels, got[name], strict=True
            ):
                if value is None:
                    assert got_value is None, (case, drawn.title, label, shown)
                    continue
                assert got_value == pytest.approx(float(value), rel=1e-9, abs=1e-9), (
                    case,
                    drawn.title,
                    label,
                    shown,
                )
        checked += 1
    assert checked >= 30


def _reference(table: Table, drawn: ChartData) -> dict[str, list[tuple[str, Any]]] | None:
    """The chart's series recomputed: name → [(key, value)] in the chart's order."""
    query = drawn.query
    how = drawn.aggregation
    rows = [row for row in table.rows if _kept(table, row, query.filters)]
    if query.dimension == "time":
        grain = query.frequency
        if grain is None or table.time is None:
            return None
        groups: dict[str, dict[tuple[int, ...], list[tuple[tuple[int, ...], str, Decimal]]]]
        groups = defaultdict(lambda: defaultdict(list))
        for row in rows:
            key, _label = table.period(row)
            for measure in query.measures:
                value = number(table.col(row, measure))
                if value is None:
                    continue
                name = table.col(row, query.series_by).strip() if query.series_by else measure
                parts = _parts(table, row, query)
                groups[name][_coarse(table, key, grain)].append((key, parts, value))
        keys = sorted({key for series in groups.values() for key in series})
        result = {}
        for name, series in groups.items():
            result[_series_name(drawn, name)] = [
                (str(key), _combine(series[key], how) if key in series else None)
                for key in keys
            ]
        return result
    if query.series_by or len(query.measures) > 1:
        return None
    column = query.dimension
    if column not in table.header:
        return None
    by: dict[str, list[tuple[tuple[int, ...], str, Decimal]]] = defaultdict(list)
    for row in rows:
        value = number(table.col(row, query.measures[0]))
        if value is not None:
            key = table.period(row)[0] if table.time else (0,)
            by[table.col(row, column).strip()].append((key, _parts(table, row, query), value))
    values = {label: _combine(cells, how) for label, cells in by.items()}
    shown = [(label, values.get(label)) for label in drawn.labels]
    return {drawn.series[0].name: shown}


def _series_name(drawn: ChartData, name: str) -> str:
    """The chart's name for a series of a measure column (its label) or of a category."""
    names = [series.name for series in drawn.series]
    if name in names:
        return name
    measures = drawn.query.measures
    if name in measures and len(names) == len(measures):
        return names[measures.index(name)]
    return name


def _parts(table: Table, row: list[str], query: Any) -> str:
    """The row's series within a period (its categories), where `last` values are taken."""
    taken = {query.dimension, query.series_by}
    labels = [
        c["name"]
        for c in table.meta["columns"]
        if c.get("role") == "category" and c["name"] not in taken
    ]
    return "|".join(table.col(row, name) for name in labels)


def _combine(cells: list[tuple[tuple[int, ...], str, Decimal]], how: str) -> Decimal | None:
    if not cells:
        return None
    values = [value for _key, _part, value in cells]
    if how == "sum":
        return sum(values, Decimal(0))
    if how == "count":
        return Decimal(len(values))
    if how == "last":
        last: dict[str, tuple[tuple[int, ...], Decimal]] = {}
        for key, part, value in cells:
            if part not in last or key >= last[part][0]:
                last[part] = (key, value)
        return sum((value for _key, value in last.values()), Decimal(0))
    return sum(values, Decimal(0)) / len(values)


def _coarse(table: Table, key: tuple[int, ...], grain: str) -> tuple[int, ...]:
    """A period key at the chart's grain: a year's decade, a month's year, a date's quarter."""
    form = table.time["form"]
    if grain == "decade":
        return (key[0] // 10,)
    if grain == "year":
        return key[:1]
    if grain == "quarter":
        if form in ("year_quarter", "quarter_label"):
            return key[:2]
        return (key[0], (key[1] - 1) // 3 + 1)
    if grain == "month":
        return key[:2]
    return key[:3]


def _kept(table: Table, row: list[str], filters: dict[str, list[str]]) -> bool:
    """Whether a row passes the chart's filters: category values as written, periods by
    their years or months."""
    for column, wanted in filters.items():
        if table.time and column in table.time["columns"]:
            key, _label = table.period(row)
            if not any(_within(key, text) for text in wanted):
                return False
        elif column in table.header and table.col(row, column).strip().lower() not in {
            v.lower() for v in wanted
        }:
            return False
    return True


def _within(key: tuple[int, ...], text: str) -> bool:
    """Whether a period key falls in `2015`, `2009-01–2016-12` or `1854-04–1856-03`."""
    ends = re.split(r"\s*–\s*", text)
    first, last = _bound(ends[0]), _bound(ends[-1])
    width = max(len(first), len(last))
    return first <= key[: len(first)] and key[: len(last)] <= last if width else True


def _bound(text: str) -> tuple[int, ...]:
    match = re.fullmatch(r"(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", text.strip())
    assert match is not None, text
    return tuple(int(group) for group in match.groups() if group)
