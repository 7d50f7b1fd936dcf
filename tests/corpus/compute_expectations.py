#!/usr/bin/env python3
"""Recompute every lookup and figure of tests/corpus/requests.yaml from the tables and check it."""
from __future__ import annotations

import sys
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from check_manifest import AGG_BY_KIND, period_key, read_table  # noqa: E402
from make_documents import DOCUMENTS  # noqa: E402

REQUESTS = HERE / "requests.yaml"
KINDS = {
    "change", "growth", "cagr", "largest", "smallest", "fastest_growing",
    "mean", "first", "last", "max", "min",
}
Key = tuple[int, ...]
Point = tuple[Key, str, Decimal]


class Table:
    """One vendored table with its manifest entry."""

    def __init__(self, meta: dict[str, Any]) -> None:
        """Read the file named by a manifest entry."""
        self.meta = meta
        self.header, self.rows = read_table(HERE / meta["file"])
        self.columns = {c["name"]: c for c in meta["columns"]}
        self.time = meta.get("time")

    def col(self, row: list[str], name: str) -> str:
        """Return the cell of a row in a named column."""
        return row[self.header.index(name)]

    def period(self, row: list[str]) -> tuple[Key, str]:
        """Return the period key and label of a row."""
        assert self.time and not self.time.get("in_header"), self.meta["file"]
        return period_key(self.time["form"], tuple(self.col(row, c) for c in self.time["columns"]))

    def selected(self, wanted: dict[str, list[str]] | None) -> list[list[str]]:
        """Return the rows whose cells are among the wanted values of each filter column."""
        wanted = wanted or {}
        return [r for r in self.rows
                if all(self.col(r, c) in map(str, v) for c, v in wanted.items())]


def number(cell: str) -> Decimal | None:
    """Parse a numeric cell; None when it is missing."""
    return None if cell.strip() in ("", "NA") else Decimal(cell.strip())


def combine(values: list[Decimal], how: str) -> Decimal:
    """Combine values with mean, sum or last."""
    if how == "sum":
        return sum(values, Decimal(0))
    if how == "last":
        return values[-1]
    return sum(values, Decimal(0)) / len(values)


def grain_key(key: Key, label: str, wanted: str) -> bool:
    """Tell whether a period falls on a wanted label (a bare year matches all of that year)."""
    if len(wanted) == 4 and wanted.isdigit():
        return key[0] == int(wanted)
    return label == wanted


def series(table: Table, measure: str, rows: list[list[str]], by_year: bool) -> list[Point]:
    """Return the ordered (period, label, value) series of a measure, rows of a period combined."""
    if table.time and table.time.get("in_header"):
        assert len(rows) == 1, "a wide-by-year table needs a filter selecting one row"
        cells = [(period_key(table.time["form"], (c,)), number(table.col(rows[0], c)))
                 for c in table.time["columns"]]
        return [(k, lab, v) for (k, lab), v in sorted(cells) if v is not None]
    kind = table.columns[measure]["kind"]
    across = "sum" if kind in ("count", "amount", "stock") else "mean"
    groups: dict[Key, list[Decimal]] = defaultdict(list)
    labels: dict[Key, str] = {}
    for row in rows:
        value = number(table.col(row, measure))
        if value is None:
            continue
        key, label = table.period(row)
        groups[key].append(value)
        labels[key] = label
    points: list[Point] = [(k, labels[k], combine(groups[k], across)) for k in sorted(groups)]
    if not by_year:
        return points
    years: dict[Key, list[Decimal]] = defaultdict(list)
    for key, _label, value in points:
        years[(key[0],)].append(value)
    how = table.columns[measure]["aggregation"]
    return [(k, str(k[0]), combine(v, how)) for k, v in sorted(years.items())]


def at(points: list[Point], wanted: str) -> Decimal:
    """Return the value of a series at a wanted period."""
    found = [v for k, lab, v in points if grain_key(k, lab, wanted)]
    assert len(found) == 1, f"period {wanted!r} found {len(found)} times"
    return found[0]


def within(points: list[Point], start: str | None, end: str | None) -> list[Decimal]:
    """Return the values of a series between two periods, both included."""
    lo, hi = 0, len(points) - 1
    if start:
        lo = next(i for i, (k, lab, _v) in enumerate(points) if grain_key(k, lab, start))
    if end:
        hi = max(i for i, (k, lab, _v) in enumerate(points) if grain_key(k, lab, end))
    return [v for _k, _lab, v in points[lo:hi + 1]]


def fmt(value: Decimal, decimals: int | None, percent: bool = False) -> str:
    """Format a figure: exact when decimals is None, else rounded half up."""
    if decimals is not None:
        value = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    text = format(value.normalize() if decimals is None else value, "f")
    return text + ("%" if percent else "")


def growth(first: Decimal, last: Decimal) -> Decimal:
    """Return the percent growth from first to last."""
    return (last / first - 1) * 100


def compute(spec: dict[str, Any], table: Table) -> str:
    """Compute the answer of one computation spec."""
    kind, dec = spec["kind"], spec.get("decimals")
    rows = table.selected(spec.get("filter"))
    measures = spec["measure"] if isinstance(spec["measure"], list) else [spec["measure"]]
    start, end, when = (str(spec.get(k) or "") for k in ("from", "to", "at"))
    yearly = table.time is not None and table.time["frequency"] == "year"
    by_year = not yearly and any(len(p) == 4 and p.isdigit() for p in (start, end, when))
    if kind in ("largest", "smallest", "fastest_growing"):
        scores: dict[str, Decimal] = {}
        if spec.get("category"):
            groups: dict[str, list[list[str]]] = defaultdict(list)
            for row in rows:
                groups[table.col(row, spec["category"])].append(row)
            items = [(name, measures[0], group) for name, group in groups.items()]
        else:
            items = [(m, m, rows) for m in measures]
        for name, measure, group in items:
            if kind == "fastest_growing":
                points = series(table, measure, group, by_year)
                scores[name] = growth(at(points, start), at(points, end))
            elif when:
                scores[name] = at(series(table, measure, group, by_year), when)
            else:
                cells = [number(table.col(r, measure)) for r in group]
                values = [v for v in cells if v is not None]
                scores[name] = combine(values, table.columns[measure]["aggregation"])
        pick = min if kind == "smallest" else max
        return pick(scores, key=lambda name: scores[name])
    measure = measures[0]
    if not table.time:
        cells = [number(table.col(r, measure)) for r in rows]
        values = [v for v in cells if v is not None]
        assert kind in ("mean", "max", "min"), kind
        return fmt({"mean": combine(values, "mean"), "max": max(values), "min": min(values)}[kind],
                   dec if dec is not None or kind != "mean" else 2)
    points = series(table, measure, rows, by_year)
    if kind == "change":
        return fmt(at(points, end) - at(points, start), dec)
    if kind == "growth":
        rise = growth(at(points, start), at(points, end))
        return fmt(rise, 1 if dec is None else dec, percent=True)
    if kind == "cagr":
        first, last = at(points, start), at(points, end)
        years = int(end[:4]) - int(start[:4])
        rate = (float(last / first) ** (1 / years) - 1) * 100
        return fmt(Decimal(repr(rate)), 1 if dec is None else dec, percent=True)
    values = within(points, start, end)
    if kind == "mean":
        return fmt(combine(values, "mean"), 2 if dec is None else dec)
    chosen = {"first": values[0], "last": values[-1], "max": max(values), "min": min(values)}
    return fmt(chosen[kind], dec)


def check_lookup(spec: dict[str, Any], table: Table) -> list[str]:
    """Check that a lookup names the cell (and line) of the file, or a cell that is absent."""
    if spec["column"] not in table.header:
        absent = f"column {spec['column']} is not in {spec['file']}"
        return [] if spec["value"] is None else [absent]
    hits = [(i + 2, r) for i, r in enumerate(table.rows)
            if all(table.col(r, c) == str(v) for c, v in spec["row"].items())]
    if not hits:
        if spec["value"] is None and spec.get("line") is None:
            return []
        return [f"no row {spec['row']} in {spec['file']}"]
    if len(hits) > 1:
        return [f"row {spec['row']} matches {len(hits)} rows of {spec['file']}"]
    line, row = hits[0]
    cell = table.col(row, spec["column"])
    if spec["value"] is None and cell.strip() in ("", "NA"):
        empty = f"lookup {spec['row']}: the empty cell is on line {line}"
        return [] if spec.get("line") == line else [empty]
    if spec["value"] != cell or spec.get("line") != line:
        return [f"lookup {spec['row']}/{spec['column']}: file has {cell!r} on line {line}"]
    return []


def check_chart(chart: dict[str, Any], table: Table) -> list[str]:
    """Check that a chart names columns and values that exist (or, if not drawable, one absent)."""
    errors: list[str] = []
    missing = [m for m in chart["measures"] if m not in table.header]
    if chart["drawable"] and missing:
        errors.append(f"chart on {chart['file']}: measures {missing} are not columns")
    dimension = chart["dimension"]
    if not chart["drawable"]:
        absent = missing or dimension.get("column", "") not in [*table.header, ""] or (
            "time" in dimension and not table.time)
        if not chart.get("why_not") or not absent:
            errors.append(f"chart on {chart['file']}: not drawable needs why_not and an absence")
        return errors
    if "time" in dimension and not table.time:
        errors.append(f"chart on {chart['file']}: no time axis")
    if "column" in dimension and dimension["column"] not in table.header:
        errors.append(f"chart on {chart['file']}: no column {dimension['column']}")
    wide = table.meta.get("wide") or {}
    in_wide = set(chart["measures"]) <= set(wide.get("columns", []))
    if "wide" in dimension and (dimension["wide"] != wide.get("by") or not in_wide):
        errors.append(f"chart on {chart['file']}: measures are not its {dimension['wide']} columns")
    for column, values in (chart.get("filter") or {}).items():
        present = {table.col(r, column) for r in table.rows}
        if not set(map(str, values)) <= present:
            errors.append(f"chart on {chart['file']}: filter {column}={values} not in the file")
    series_by = chart.get("series_by")
    if series_by and table.columns.get(series_by, {}).get("role") != "category":
        errors.append(f"chart on {chart['file']}: series_by {series_by} is not a category column")
    for measure in chart["measures"]:
        column = table.columns[measure]
        allowed = {"count"}
        if column["role"] == "measure":
            allowed |= AGG_BY_KIND[column["kind"]]
        if chart["aggregation"] not in allowed:
            errors.append(f"chart on {chart['file']}: {chart['aggregation']} misfits {measure}")
    return errors


def check_entry(entry: dict[str, Any], tables: dict[str, Table], show: bool) -> list[str]:
    """Check one request entry; print the computed answers when show is set."""
    errors: list[str] = []
    rid, expect, assets = entry["id"], entry["expect"], entry["assets"]
    if entry["lang"] not in ("en", "ko") or expect["mode"] not in ("run", "simple"):
        errors.append("lang or mode")
    built = {f"tables/{name}.{fmt}" for name, fmt in DOCUMENTS}
    for path in assets:
        if not (HERE / path).is_file() and path not in built:
            errors.append(f"asset {path} is missing")
    left_out, sources = set(expect.get("left_out") or []), set(expect.get("sources") or [])
    if not left_out <= set(assets) or not sources <= set(assets) or left_out & sources:
        errors.append("left_out/sources must be assets and disjoint")
    for part in ("charts", "lookups", "computations"):
        for spec in expect.get(part) or []:
            if spec["file"] not in assets or spec["file"] in left_out:
                errors.append(f"{part} on {spec['file']}, which is not an asset in use")
                continue
            table = tables[spec["file"]]
            if part == "charts":
                errors += check_chart(spec, table)
            elif part == "lookups":
                errors += check_lookup(spec, table)
            else:
                if spec["kind"] not in KINDS:
                    errors.append(f"computation kind {spec['kind']}")
                    continue
                got = compute(spec, table)
                if show:
                    print(f"{rid}: {spec['kind']} {spec['measure']} -> {got}")
                if got != str(spec["answer"]):
                    wrong = f"answer {spec['answer']!r}, computed {got!r}"
                    errors.append(f"{spec['kind']} on {spec['file']}: {wrong}")
    return [f"{rid}: {e}" for e in errors]


def main(argv: list[str]) -> int:
    """Check requests.yaml (--show prints each computed answer); exit 1 on any error."""
    manifest = yaml.safe_load((HERE / "tables.yaml").read_text(encoding="utf-8"))["tables"]
    tables = {meta["file"]: Table(meta) for meta in manifest.values()}
    for path, table in list(tables.items()):  # a JSON original holds the same records as its CSV
        twin = path.removesuffix(".csv") + ".json"
        if (HERE / twin).is_file():
            tables[twin] = table
    entries = yaml.safe_load(REQUESTS.read_text(encoding="utf-8"))
    errors: list[str] = []
    ids = [e["id"] for e in entries]
    if len(ids) != len(set(ids)):
        errors.append("duplicate ids")
    for entry in entries:
        errors += check_entry(entry, tables, "--show" in argv)
    langs = {lang: sum(e["lang"] == lang for e in entries) for lang in ("en", "ko")}
    if len(entries) < 70 or langs["en"] < 45 or langs["ko"] < 20:
        errors.append(f"too few requests: {len(entries)} ({langs})")
    for error in errors:
        print(error, file=sys.stderr)
    counts = f"{len(entries)} requests ({langs['en']} en, {langs['ko']} ko)"
    print(f"{counts} checked, {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
