"""Lookups return the exact cell and its line, whatever form the time selector is written in."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_tabular_oracle import MONTH_NAMES, Gen, Wide, tables, wide_tables

from multiverse.tabular import LookupQuery, lookup


def _selectors(gen: Gen, row: int, variant: int) -> dict[str, str]:
    """Selectors that pick one row: its period in some spelling, its category lowercased."""
    year, month, day = gen.moments[row]
    quarter = (month - 1) // 3 + 1
    name = MONTH_NAMES[month - 1]
    spellings = {
        "year": [{"time": str(year)}],
        "quarter": [{"time": f"{year}Q{quarter}"}, {"time": f"Q{quarter} {year}"},
                    {"period": f"{year} Q{quarter}"}],
        "month": [{"time": f"{year}-{month:02d}"}, {"time": f"{name} {year}"},
                  {"date": f"{name[:3]} {year}"}],
        "day": [{"time": f"{year}-{month:02d}-{day:02d}"}],
    }[gen.grain]
    if gen.form == "year+quarter":
        spellings.append({"year": str(year), "quarter": str(quarter)})
    if gen.form == "year+month":
        spellings.append({"year": str(year), "month": str(month)})
    selectors = dict(spellings[variant % len(spellings)])
    if gen.category_column:
        selectors[gen.category_column] = gen.categories[row].lower()
    return selectors


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=tables(), data=st.data())
def test_a_lookup_returns_the_exact_cell_and_its_line(gen: Gen, data: st.DataObject) -> None:
    """The selected cell is returned as written, with its number and its line in the file."""
    measure = data.draw(st.sampled_from(gen.measures))
    filled = [r for r, v in enumerate(gen.values[measure]) if v is not None]
    if not filled:
        return
    row = data.draw(st.sampled_from(filled))
    selectors = _selectors(gen, row, data.draw(st.integers(0, 5)))
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        answer = lookup(LookupQuery(file=gen.write(root), selectors=selectors, column=measure),
                        root=root)
    column = gen.header.index(measure)
    assert answer.found, (selectors, answer.note)
    assert answer.text == gen.rows[row][column]
    assert answer.number == gen.values[measure][row]
    assert answer.citation is not None and answer.citation.first == gen.line(row)
    assert answer.text.replace(",", "") in answer.sentence("en").replace(",", "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wide=wide_tables(), data=st.data())
def test_a_lookup_in_a_wide_table_returns_the_cell_and_its_line(wide: Wide,
                                                                data: st.DataObject) -> None:
    """A region and a year column, or a year and a country column, pick the cell as written."""
    if not wide.cells:
        return
    label, column = data.draw(st.sampled_from(sorted(wide.cells)))
    row = next(i for i, r in enumerate(wide.rows) if r[0] == label)
    if wide.by_year:
        query = {"selectors": {"region": label.upper(), "year": column}, "column": "value"}
    else:
        query = {"selectors": {"year": label}, "column": column}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        answer = lookup(LookupQuery.model_validate({"file": wide.write(root), **query}),
                        root=root)
    assert answer.found, answer.note
    assert answer.text == wide.rows[row][wide.header.index(column)]
    assert answer.citation is not None and answer.citation.first == row + 2


def _write(root: Path) -> str:
    """A long table of three sources over three years."""
    (root / "assets").mkdir(parents=True, exist_ok=True)
    with (root / "assets" / "e.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["year", "source", "net_generation"])
        for source in ("Fossil Fuels", "Nuclear Energy", "Renewables"):
            for year in (2015, 2016, 2017):
                writer.writerow([f"{year}-01-01", source, f"{year - 2000}{len(source)}"])
    return "assets/e.csv"


def test_a_category_matches_by_word_and_a_yearly_date_by_its_year(tmp_path: Path) -> None:
    """`renewables` picks `Renewables`, `2017` the row dated 2017-01-01; the sentence cites it."""
    answer = lookup(LookupQuery(file=_write(tmp_path), column="net_generation",
                                selectors={"year": "2017", "source": "renewables"}),
                    root=tmp_path)
    assert answer.found and answer.text == "1710" and answer.number == 1710
    assert answer.citation is not None and answer.citation.first == 10
    assert answer.sentence("en") == (
        "Net generation for Renewables in 2017 was 1,710 (assets/e.csv row 10).")
    assert answer.sentence("ko") == (
        "2017년 Renewables의 net generation은 1,710이었습니다 (assets/e.csv 10행).")
    fossil = lookup(LookupQuery(file="assets/e.csv", column="net_generation",
                                selectors={"time": "2016", "source": "fossil"}), root=tmp_path)
    assert fossil.found and fossil.text == "1612"


def test_a_missing_cell_gives_the_nearest_ones(tmp_path: Path) -> None:
    """No 2019 row: the same category's nearest periods; no `wind`: the same period's others."""
    file = _write(tmp_path)
    later = lookup(LookupQuery(file=file, column="net_generation",
                               selectors={"year": "2019", "source": "Renewables"}), root=tmp_path)
    assert not later.found
    assert [c.line for c in later.nearest] == [10, 9, 8]
    assert later.nearest[0].selectors == {"source": "Renewables", "year": "2017"}
    wind = lookup(LookupQuery(file=file, column="net_generation",
                              selectors={"year": "2017", "source": "wind"}), root=tmp_path)
    assert not wind.found and [c.text for c in wind.nearest] == ["1712", "1714", "1710"]
    assert "1712" in wind.sentence("en")


def test_several_matches_and_unknown_columns_are_not_found(tmp_path: Path) -> None:
    """A year alone picks three cells; an unknown column is named in the note."""
    file = _write(tmp_path)
    several = lookup(LookupQuery(file=file, column="net_generation", selectors={"year": "2017"}),
                     root=tmp_path)
    assert not several.found and several.note is not None and "source" in several.note
    assert len(several.nearest) == 3
    unknown = lookup(LookupQuery(file=file, column="output", selectors={"year": "2017"}),
                     root=tmp_path)
    assert not unknown.found and unknown.note is not None and "no column 'output'" in unknown.note
