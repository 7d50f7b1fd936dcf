"""Generated tables of every time form, and their expected charts computed without pandas.

Other tabular tests import the strategy and the oracle from here; the tests at the bottom pin
the oracle itself on hand-made tables.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import random
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December"]
# A measure's name decides its aggregation: these are the words each kind is known by.
MEASURES = {"sales": "sum", "unemployment_rate": "mean", "population": "last",
            "price_index": "mean", "visitors_count": "sum", "reading": "mean"}
CATEGORIES = ["North", "South", "East", "West", "Central", "Island"]
# form → (its grain, the header of its time columns)
FORMS = {
    "year": ("year", ["year"]), "year+quarter": ("quarter", ["year", "quarter"]),
    "quarter label": ("quarter", ["period"]), "year+month": ("month", ["year", "month"]),
    "year-month": ("month", ["period"]), "month name": ("month", ["date"]),
    "yyyymm": ("month", ["date"]), "iso day": ("day", ["date"]),
    "iso month": ("month", ["date"]), "iso year": ("year", ["date"]),
}


@dataclass
class Gen:
    """A generated table: its cells as written and what each row means."""

    form: str
    grain: str
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    moments: list[tuple[int, int, int]] = field(default_factory=list)  # per row: y, m, d
    categories: list[str] = field(default_factory=list)  # per row ("" in a single table)
    values: dict[str, list[float | None]] = field(default_factory=dict)  # per measure, per row
    category_column: str | None = None

    @property
    def measures(self) -> list[str]:
        """The measure columns."""
        return list(self.values)

    def line(self, row: int) -> int:
        """A row's line in the written file (the header is line 1)."""
        return row + 2

    def write(self, root: Path, name: str = "table.csv", delimiter: str = ",") -> str:
        """Write the table as a CSV under root/assets and return its home-relative path."""
        folder = root / "assets"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, delimiter=delimiter)
            writer.writerow(self.header)
            writer.writerows(self.rows)
        return f"assets/{name}"


def key_of(grain: str, moment: tuple[int, int, int]) -> int:
    """A period key computed with the standard library."""
    year, month, day = moment
    return {"year": year, "quarter": year * 4 + (month - 1) // 3, "month": year * 12 + month - 1,
            "day": dt.date(year, month, day).toordinal()}[grain]


def label_of(grain: str, key: int) -> str:
    """A period label computed with the standard library."""
    if grain == "year":
        return str(key)
    if grain == "quarter":
        return f"{key // 4}Q{key % 4 + 1}"
    if grain == "month":
        return f"{key // 12}-{key % 12 + 1:02d}"
    return dt.date.fromordinal(key).isoformat()


def time_cells(form: str, moment: tuple[int, int, int], variant: int) -> list[str]:
    """The time cells of one row in a form (the variant picks among its spellings)."""
    year, month, day = moment
    quarter = (month - 1) // 3 + 1
    name = MONTH_NAMES[month - 1]
    return {
        "year": [str(year)],
        "year+quarter": [str(year), [str(quarter), f"Q{quarter}"][variant % 2]],
        "quarter label": [[f"{year}Q{quarter}", f"{year}-Q{quarter}", f"{year} Q{quarter}",
                           f"Q{quarter} {year}"][variant % 4]],
        "year+month": [str(year), [str(month), name[:3], name][variant % 3]],
        "year-month": [[f"{year}-{month:02d}", f"{year}/{month:02d}"][variant % 2]],
        "month name": [[f"{name[:3]} {year}", f"{name} {year}",
                        f"{name[:3]} 1 {year}"][variant % 3]],
        "yyyymm": [f"{year}{month:02d}"],
        "iso day": [[f"{year}-{month:02d}-{day:02d}",
                     f"{year}-{month:02d}-{day:02d}T00:00:00"][variant % 2]],
        "iso month": [f"{year}-{month:02d}-01"],
        "iso year": [f"{year}-01-01"],
    }[form]


def moments_of(grain: str, start: int, count: int) -> list[tuple[int, int, int]]:
    """`count` consecutive periods from January of `start`."""
    if grain == "day":
        first = dt.date(start, 1, 1)
        days = [first + dt.timedelta(days=i) for i in range(count)]
        return [(d.year, d.month, d.day) for d in days]
    step = {"year": 12, "quarter": 3, "month": 1}[grain]
    return [(start + (i * step) // 12, (i * step) % 12 + 1, 1) for i in range(count)]


@st.composite
def tables(draw: st.DrawFn, forms: tuple[str, ...] = tuple(FORMS),
           long: bool | None = None) -> Gen:
    """A table in one time form, single or long, with measures of known kinds, some missing."""
    form = draw(st.sampled_from(forms))
    grain, header = FORMS[form]
    rng = draw(st.randoms(use_true_random=False))
    count = draw(st.integers(2, 30))
    moments = moments_of(grain, draw(st.integers(1950, 2015)), count)
    is_long = draw(st.booleans()) if long is None else long
    categories = rng.sample(CATEGORIES, rng.randint(2, 4)) if is_long else [""]
    names = rng.sample(sorted(MEASURES), rng.randint(1, 2))
    gen = Gen(form, grain, [*header, *(["region"] if is_long else []), *names],
              category_column="region" if is_long else None)
    gen.values = {name: [] for name in names}
    variant = rng.randrange(12)
    cells = [(m, c) for m in moments for c in categories]
    if draw(st.booleans()):
        rng.shuffle(cells)  # the chart must put them back in time order
    for moment, category in cells:
        row = time_cells(form, moment, variant) + ([category] if is_long else [])
        for name in names:
            value, text = _value(rng)
            gen.values[name].append(value)
            row.append(text)
        gen.rows.append(row)
        gen.moments.append(moment)
        gen.categories.append(category)
    return gen


COUNTRIES = ["Korea", "Japan", "Chile", "Kenya", "Peru", "Norway", "Egypt", "Laos"]


@dataclass
class Wide:
    """A wide table: a measure spread over columns named by years or by countries."""

    header: list[str]
    rows: list[list[str]]
    cells: dict[tuple[str, str], float]  # (row label, column) → value, missing cells left out
    by_year: bool  # columns are years (else countries, with a year per row)

    def write(self, root: Path) -> str:
        """Write the table as a CSV under root/assets and return its home-relative path."""
        return Gen("wide", "year", self.header, self.rows).write(root, "wide.csv")


@st.composite
def wide_tables(draw: st.DrawFn) -> Wide:
    """Years as columns (a row per region) or countries as columns (a row per year)."""
    rng = draw(st.randoms(use_true_random=False))
    by_year = draw(st.booleans())
    start = draw(st.integers(1960, 2015))
    years = [str(start + i) for i in range(draw(st.integers(3, 8)))]
    if by_year:
        labels, columns = rng.sample(CATEGORIES, rng.randint(1, 4)), years
    else:
        labels, columns = years, rng.sample(COUNTRIES, rng.randint(5, 8))
    wide = Wide(["region" if by_year else "year", *columns], [], {}, by_year)
    for label in labels:
        row = [label]
        for column in columns:
            value, text = _value(rng)
            row.append(text)
            if value is not None:
                wide.cells[(label, column)] = value
        wide.rows.append(row)
    return wide


def _value(rng: random.Random) -> tuple[float | None, str]:
    """A measure's cell: a number with 0–2 decimals, now and then missing."""
    if rng.random() < 0.1:
        return None, rng.choice(["", "NA"])
    decimals = rng.randint(0, 2)
    number = rng.randint(0, 200_000) / 10**decimals
    return number, f"{number:.{decimals}f}"


def expected(gen: Gen, measure: str, grain: str, how: str, *, by_category: bool = False,
             keep: set[str] | None = None) -> dict[str, dict[str, float]]:
    """series → label → value, computed with the standard library only."""
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    for row, (moment, category) in enumerate(zip(gen.moments, gen.categories, strict=True)):
        if gen.values[measure][row] is None or (keep is not None and category not in keep):
            continue
        series = category if by_category else ""
        groups[(series, key_of(grain, moment))].append(row)
    result: dict[str, dict[str, float]] = defaultdict(dict)
    for (series, key), rows in groups.items():
        numbers = [gen.values[measure][r] for r in rows]
        clean = [n for n in numbers if n is not None]
        if how == "sum":
            value = math.fsum(clean)
        elif how == "mean":
            value = statistics.fmean(clean)
        elif how == "count":
            value = float(len(clean))
        else:
            value = _last(gen, measure, rows)
        result[series][label_of(grain, key)] = value
    return dict(result)


def _last(gen: Gen, measure: str, rows: list[int]) -> float:
    """The sum over categories of each one's value at its latest moment (the later row on a tie)."""
    latest: dict[str, int] = {}
    for row in rows:
        category = gen.categories[row]
        mine = (key_of("day", gen.moments[row]), row)
        if category not in latest or mine >= (key_of("day", gen.moments[latest[category]]),
                                               latest[category]):
            latest[category] = row
    return math.fsum(gen.values[measure][r] or 0.0 for r in latest.values())


def close(a: float | None, b: float | None) -> bool:
    """Equal up to floating-point rounding."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def test_oracle_sums_means_and_lasts_by_hand() -> None:
    """The oracle's sum, mean and last match values worked out by hand."""
    gen = Gen("year+quarter", "quarter", ["year", "quarter", "region", "population"],
              category_column="region")
    for year, quarter, region, value in [(2001, 1, "A", 1.0), (2001, 2, "A", 2.0),
                                         (2001, 1, "B", 10.0), (2001, 4, "B", 30.0)]:
        gen.rows.append([str(year), str(quarter), region, str(value)])
        gen.moments.append((year, 3 * quarter - 2, 1))
        gen.categories.append(region)
        gen.values.setdefault("population", []).append(value)
    assert expected(gen, "population", "year", "sum") == {"": {"2001": 43.0}}
    assert expected(gen, "population", "year", "mean") == {"": {"2001": 10.75}}
    assert expected(gen, "population", "year", "last") == {"": {"2001": 32.0}}
    assert expected(gen, "population", "quarter", "sum", by_category=True)["B"] == {
        "2001Q1": 10.0, "2001Q4": 30.0}


def test_oracle_labels_periods_like_the_data_write_them() -> None:
    """Period labels: 1959, 1959Q1, 2001-03, 2020-01-05."""
    assert label_of("year", key_of("year", (1959, 1, 1))) == "1959"
    assert label_of("quarter", key_of("quarter", (1959, 4, 1))) == "1959Q2"
    assert label_of("month", key_of("month", (2001, 3, 1))) == "2001-03"
    assert label_of("day", key_of("day", (2020, 1, 5))) == "2020-01-05"
