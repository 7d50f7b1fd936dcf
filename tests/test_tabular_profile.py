"""Profiles: the time axis in every form, roles, kinds and units, shapes, the catalog line."""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from test_tabular_oracle import FORMS, MEASURES, Gen, key_of, label_of, tables

from multiverse.tabular import profile

FORM_NAMES = {"year": {"year"}, "year+quarter": {"year+quarter"},
              "quarter label": {"quarter label"}, "year+month": {"year+month"},
              "year-month": {"year-month"}, "month name": {"month name"}, "yyyymm": {"yyyymm"},
              "iso day": {"date", "datetime"}, "iso month": {"date"}, "iso year": {"date"}}


def _write(root: Path, header: list[str], rows: list[list[object]], name: str = "t.csv") -> Path:
    """Write rows as a CSV under root/assets and return the file's path."""
    (root / "assets").mkdir(parents=True, exist_ok=True)
    path = root / "assets" / name
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=tables())
def test_the_time_axis_is_found_in_every_form(gen: Gen) -> None:
    """Each generated form gives its columns, form, frequency, first and last periods, and
    the measures their kinds' aggregations."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        gen.write(root)
        found = profile(Path("assets/table.csv"), root=root)
    axis = found.time
    assert axis is not None
    assert axis.columns == FORMS[gen.form][1]
    assert axis.form in FORM_NAMES[gen.form]
    assert axis.frequency == gen.grain
    keys = sorted({key_of(gen.grain, m) for m in gen.moments})
    assert (axis.first, axis.last, axis.periods) == (label_of(gen.grain, keys[0]),
                                                   label_of(gen.grain, keys[-1]), len(keys))
    for name in gen.measures:
        if all(v is None for v in gen.values[name]):
            continue  # an empty column measures nothing
        column = found.column(name)
        assert column is not None and column.role == "measure"
        assert column.aggregation == MEASURES[name]
    assert found.shape == ("long" if gen.category_column else "single")
    if gen.category_column:
        assert set(found.categories["region"]) == set(gen.categories)
    assert ("aggregation of reading assumed mean: its kind is not stated" in found.notes) == (
        "reading" in gen.measures and any(v is not None for v in gen.values["reading"]))


DESCRIPTION = """Variables::

    jobless   - Seasonally adjusted jobless rate (%)
    output    - Real output (Bil. of chained 2012 US$,
                seasonally adjusted annual rate)
    people    - End of the quarter resident population (thousands)

| variable | description | unit |
| --- | --- | --- |
| cost | cost of a basket | KRW |

* price: price in US dollars
"""


def test_descriptions_give_labels_units_and_kinds(tmp_path: Path) -> None:
    """Definition lines, continuations, markdown tables and bullets decide units and kinds."""
    rows = [[2001, q, 5 + q, 100 + q, 50 + q, 10, 3] for q in (1, 2, 3, 4)]
    path = _write(tmp_path, ["year", "quarter", "jobless", "output", "people", "cost", "price"],
                  rows)
    found = profile(path, root=tmp_path, descriptions=[DESCRIPTION])
    by_name = {c.name: c for c in found.columns}
    assert (by_name["jobless"].label, by_name["jobless"].unit, by_name["jobless"].kind,
            by_name["jobless"].aggregation) == ("jobless rate", "%", "rate", "mean")
    assert by_name["output"].unit == "Bil. of chained 2012 US$"
    assert (by_name["output"].kind, by_name["output"].aggregation) == ("amount", "mean")
    assert (by_name["people"].kind, by_name["people"].aggregation) == ("stock", "last")
    assert (by_name["cost"].unit, by_name["cost"].aggregation) == ("KRW", "sum")
    assert (by_name["price"].unit, by_name["price"].kind) == ("US dollars", "price")
    assert not [n for n in found.notes if n.startswith("aggregation of")]


@pytest.mark.parametrize(("name", "label", "unit"), [
    ("revenue_eur_m", "revenue", "EUR million"), ("sales_usd_bn", "sales", "US$ billion"),
    ("units_k", "units", "thousand"), ("pop_thousands", "pop", "thousand"),
    ("exports_krw", "exports", "KRW"), ("margin_pct", "margin", "%"),
    ("height_m", "height m", None), ("temp_k", "temp k", None),
])  # fmt: skip
def test_a_header_says_its_unit_and_scale(
    tmp_path: Path, name: str, label: str, unit: str | None
) -> None:
    """A scale after a currency (`_m`, `_bn`) or alone (`_k`, `_thousands`) is part of the
    unit: 1,520 in `revenue_eur_m` is EUR 1,520 million, not 1,520 euros; `_m` alone may be
    metres and `_k` of a temperature kelvin, so they are no scale."""
    rows = [[2020 + n, 10 + n] for n in range(4)]
    found = profile(_write(tmp_path, ["year", name], rows), root=tmp_path)
    column = next(c for c in found.columns if c.name == name)
    assert (column.label, column.unit) == (label, unit)


@pytest.mark.parametrize(("name", "kind", "aggregation"), [
    ("실업률", "rate", "mean"), ("소비자물가지수", "index", "mean"), ("가격", "price", "mean"),
    ("방문자수", "count", "sum"), ("매출액", "amount", "sum"), ("인구", "stock", "last"),
    ("잔액", "stock", "last"), ("n_customers", "count", "sum"), ("total_sales", "amount", "sum"),
    ("avg_sales", "amount", "mean"), ("temperature", "other", "mean"),
    ("pct_urban", "rate", "mean"),
    ("inventory", "stock", "last"), ("number of trips", "count", "sum"),
    ("tbilrate", "rate", "mean"), ("realgdp", "amount", "sum"),
    ("corporate_income", "amount", "sum"), ("account_balance", "stock", "last"),
    ("construction_jobs", "stock", "last"), ("nonfarm", "stock", "last"),
    ("nonfarm_change", "count", "sum"), ("employment", "stock", "last"),
])
def test_names_decide_kinds(tmp_path: Path, name: str, kind: str, aggregation: str) -> None:
    """English and Korean words of a name give the measure's kind and aggregation."""
    path = _write(tmp_path, ["year", name], [[2000 + i, 10 + i] for i in range(5)])
    column = profile(path, root=tmp_path).column(name)
    assert column is not None
    assert (column.kind, column.aggregation) == (kind, aggregation)


def test_percent_cells_are_shares_and_undecided_kinds_are_noted(tmp_path: Path) -> None:
    """Cells written `12.5%` make a share; a plain unknown column is assumed mean, noted."""
    path = _write(tmp_path, ["year", "urban", "xval"],
                  [[2000 + i, f"{10 + i}.5%", i] for i in range(5)])
    found = profile(path, root=tmp_path)
    urban = found.column("urban")
    assert urban is not None and (urban.kind, urban.unit, urban.maximum) == ("share", "%", 14.5)
    assert found.notes == ["aggregation of xval assumed mean: its kind is not stated"]


def test_identifiers_are_neither_time_nor_measures(tmp_path: Path) -> None:
    """Ids, zip codes and zero-padded codes are identifiers, even when they look like years."""
    rows = [[1001 + i, f"{2000 + i}", f"0{i}12", 2000 + i, i * 1.5] for i in range(30)]
    path = _write(tmp_path, ["customer_id", "zip", "code_num", "yr", "spend"], rows)
    found = profile(path, root=tmp_path)
    roles = {c.name: c.role for c in found.columns}
    assert roles == {"customer_id": "identifier", "zip": "identifier", "code_num": "identifier",
                     "yr": "time", "spend": "measure"}
    assert found.time is not None and found.time.columns == ["yr"]


def test_unnamed_rising_years_are_time_but_a_count_is_not(tmp_path: Path) -> None:
    """A column of rising whole years is the time axis whatever its name."""
    path = _write(tmp_path, ["Período", "valor"], [[1990 + i, 1500 + i] for i in range(10)])
    found = profile(path, root=tmp_path)
    assert found.time is not None and found.time.columns == ["Período"]


def test_wide_tables_are_recognised(tmp_path: Path) -> None:
    """Years as columns, months beside a year column, and one column per country are wide."""
    years = profile(_write(tmp_path, ["country", "1990", "2000", "2010"],
                           [["Korea", 1, 2, 3], ["Chile", 4, 5, 6]], "a.csv"), root=tmp_path)
    assert years.shape == "wide" and years.wide is not None and years.wide.axis == "time"
    assert years.time is not None and (years.time.first, years.time.last) == ("1990", "2010")
    months = ["JAN", "FEB", "MAR", "APR"]
    monthly = profile(_write(tmp_path, ["YEAR", *months], [[2001, 1, 2, 3, 4], [2002, 5, 6, 7, 8]],
                             "b.csv"), root=tmp_path)
    assert monthly.time is not None and monthly.time.frequency == "month"
    assert (monthly.time.first, monthly.time.last) == ("2001-01", "2002-04")
    countries = ["Korea", "Japan", "China", "India", "Vietnam"]
    rows = [[2000 + y, *range(5)] for y in range(3)]
    spread = profile(_write(tmp_path, ["year", *countries], rows, "c.csv"), root=tmp_path)
    assert spread.wide is not None and spread.wide.columns == countries
    assert spread.wide.axis == "category"


def test_the_summary_line_names_columns_units_period_and_rows(tmp_path: Path) -> None:
    """One catalog line: the period a time axis covers, the categories, the units."""
    sources = ["Coal", "Nuclear", "Wind"]
    rows = [[f"{y}-01-01", s, 10 * y + i] for i, s in enumerate(sources) for y in range(2001, 2018)]
    path = _write(tmp_path, ["year", "source", "net_generation"], rows)
    found = profile(path, root=tmp_path,
                    descriptions=["The net generation of each source, in thousand megawatthours."])
    assert found.summary() == ("CSV table, 51 rows: year (2001–2017), source (3: Coal, Nuclear, "
                               "Wind), net_generation (thousand MWh).")


def test_the_summary_never_sums_codes(tmp_path: Path) -> None:
    """A quarter column is part of the period, never a number to add up."""
    path = _write(tmp_path, ["year", "quarter", "sales"],
                  [[2001 + q // 4, q % 4 + 1, q] for q in range(8)])
    summary = profile(path, root=tmp_path).summary()
    assert summary == "CSV table, 8 rows: year, quarter (2001Q1–2002Q4, quarterly), sales."


def test_importing_the_package_does_not_import_pandas() -> None:
    """`import multiverse.tabular` stays cheap: pandas comes only with a table."""
    code = "import sys, multiverse.tabular; print('pandas' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(("definition", "label", "unit"), [
    ("the discharge at Aswan in 10^8, m^3", "the discharge at Aswan", "10^8, m^3"),
    ("Gross investment in 1947 dollars", "Gross investment", "1947 dollars"),
    ("personal consumption expenditures, in billions of dollars",
     "personal consumption expenditures", "billions of dollars"),
    ("Real gross domestic product, Bil. of chained 2005 US$ (SAAR)",
     "Real gross domestic product", "Bil. of chained 2005 US$"),
    ("Population, thousands of persons", "Population", "thousands of persons"),
    ("Unemployment rate, percent", "Unemployment rate", "%"),
    ("Civilian unemployment rate (percent)", "Civilian unemployment rate", "percent"),
    ("Number of births, by month", "Number of births, by month", None),
])  # fmt: skip
def test_a_definition_gives_a_label_without_its_unit(
    tmp_path: Path, definition: str, label: str, unit: str | None
) -> None:
    """A definition line's unit, wherever it is written (a parenthesis, `in …`, a clause
    after a comma), is the column's unit and is not repeated in its label."""
    path = _write(tmp_path, ["year", "value"], [[2000 + i, 10 + i] for i in range(5)])
    column = profile(path, root=tmp_path, descriptions=[f"value - {definition}\n"]).column("value")
    assert column is not None
    assert (column.label, column.unit) == (label, unit)
