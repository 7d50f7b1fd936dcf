#!/usr/bin/env python3
"""Check tests/corpus/tables.yaml against the vendored tables; --write fills its computed fields."""
from __future__ import annotations

import csv
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "tables.yaml"
SHAPES = {"long", "wide", "single"}
ROLES = {"time", "measure", "category", "identifier", "text"}
FORMS = {"year", "year_quarter", "quarter_label", "date", "month", "datetime"}
FREQUENCIES = {"year", "quarter", "month", "week", "day"}
AGGREGATIONS = {"mean", "sum", "last"}
# which aggregations each kind of measure allows (an amount "at an annual rate" is a mean)
AGG_BY_KIND = {
    "rate": {"mean"}, "share": {"mean"}, "index": {"mean"}, "price": {"mean"},
    "count": {"sum"}, "amount": {"sum", "mean"}, "stock": {"last"}, "other": AGGREGATIONS,
}
MAX_LISTED = 30
QUARTER = re.compile(r"^(\d{4})\s*-?\s*Q([1-4])$")
DATE_FORMATS = ("%Y-%m-%d", "%b %d %Y")
MONTH_FORMATS = ("%Y-%m", "%Y %b", "%b %Y")


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """Return the header and the data rows of a UTF-8 CSV file."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def parse_with(text: str, formats: tuple[str, ...]) -> datetime:
    """Parse text with the first strptime format that fits."""
    for fmt in formats:
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    raise ValueError(f"unparsed time value {text!r}")


def period_key(form: str, parts: tuple[str, ...]) -> tuple[tuple[int, ...], str]:
    """Return a sort key and the label of one period given its time cells."""
    if form == "year":
        return (int(parts[0]),), parts[0]
    if form == "year_quarter":
        year, quarter = int(parts[0]), int(parts[1])
        return (year, quarter), f"{year} Q{quarter}"
    if form == "quarter_label":
        match = QUARTER.match(parts[0].strip())
        if not match:
            raise ValueError(f"unparsed quarter {parts[0]!r}")
        return (int(match.group(1)), int(match.group(2))), parts[0]
    if form == "month" and len(parts) == 2:
        year, month = int(parts[0]), int(parts[1])
        return (year, month), f"{year:04d}-{month:02d}"
    if form == "month":
        when = parse_with(parts[0], MONTH_FORMATS)
        return (when.year, when.month), parts[0]
    if form == "date":
        when = parse_with(parts[0], DATE_FORMATS)
        return (when.year, when.month, when.day), parts[0]
    when = datetime.fromisoformat(parts[0])
    return tuple(when.timetuple()[:6]), parts[0]


def compute(table: dict[str, Any]) -> dict[str, Any]:
    """Compute rows, the time span and the category values of one table from its file."""
    header, rows = read_table(HERE / table["file"])
    result: dict[str, Any] = {"header": header, "rows": len(rows), "categories": {}, "distinct": {}}
    time = table.get("time")
    if time:
        if time.get("in_header"):
            periods = {period_key(time["form"], (name,)) for name in time["columns"]}
        else:
            index = [header.index(name) for name in time["columns"]]
            periods = {period_key(time["form"], tuple(row[i] for i in index)) for row in rows}
        ordered = sorted(periods)
        result["time"] = {"first": ordered[0][1], "last": ordered[-1][1], "periods": len(ordered)}
    for column in table["columns"]:
        if column["role"] == "category":
            i = header.index(column["name"])
            values = sorted({row[i] for row in rows if row[i] != ""})
            result["distinct"][column["name"]] = len(values)
            result["categories"][column["name"]] = values if len(values) <= MAX_LISTED else None
    return result


def check_table(name: str, table: dict[str, Any]) -> list[str]:
    """Return the mismatches between one manifest entry and its file."""
    errors: list[str] = []
    for key in ("file", "description"):
        if not (HERE / table[key]).is_file():
            errors.append(f"{name}: {key} {table[key]} is missing")
    if errors:
        return errors
    got = compute(table)
    names = [column["name"] for column in table["columns"]]
    if names != got["header"]:
        errors.append(f"{name}: columns {names} differ from the header {got['header']}")
    if table["rows"] != got["rows"]:
        errors.append(f"{name}: rows {table['rows']} but the file has {got['rows']}")
    if not 10 <= got["rows"] <= 1000:
        errors.append(f"{name}: {got['rows']} rows is outside 10..1000")
    if table["shape"] not in SHAPES:
        errors.append(f"{name}: shape {table['shape']!r}")
    time = table.get("time")
    if time:
        if time["form"] not in FORMS or time["frequency"] not in FREQUENCIES:
            errors.append(f"{name}: time form/frequency {time['form']}/{time['frequency']}")
        for key in ("first", "last", "periods"):
            if str(time.get(key)) != str(got["time"][key]):
                wrong = f"{time.get(key)!r} but the file gives {got['time'][key]!r}"
                errors.append(f"{name}: time {key} {wrong}")
        roles = {c["name"] for c in table["columns"] if c["role"] == "time"}
        if not time.get("in_header") and not set(time["columns"]) <= roles:
            errors.append(f"{name}: time columns {time['columns']} are not all role time")
    for column in table["columns"]:
        label = f"{name}.{column['name']}"
        if column["role"] not in ROLES:
            errors.append(f"{label}: role {column['role']!r}")
        if column["role"] == "measure":
            kind, aggregation = column.get("kind"), column.get("aggregation")
            if kind not in AGG_BY_KIND or aggregation not in AGG_BY_KIND[kind]:
                errors.append(f"{label}: kind {kind!r} with aggregation {aggregation!r}")
        if column["role"] == "category":
            if column.get("categories") != got["categories"][column["name"]]:
                errors.append(f"{label}: categories differ from the file")
            if column.get("distinct") != got["distinct"][column["name"]]:
                has = got["distinct"][column["name"]]
                wrong = f"{column.get('distinct')} but the file has {has}"
                errors.append(f"{label}: distinct {wrong}")
    return errors


def write(manifest: dict[str, Any]) -> None:
    """Fill the computed fields of every table and rewrite the manifest."""
    for table in manifest["tables"].values():
        got = compute(table)
        table["rows"] = got["rows"]
        if table.get("time"):
            table["time"].update(got["time"])
        for column in table["columns"]:
            if column["role"] == "category":
                column["distinct"] = got["distinct"][column["name"]]
                column["categories"] = got["categories"][column["name"]]
    text = yaml.safe_dump(manifest, sort_keys=False, allow_unicode=True, width=120)
    MANIFEST.write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    """Check the manifest (or fill it with --write); exit 1 on any mismatch."""
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    if "--write" in argv:
        write(manifest)
    errors = [e for name, table in manifest["tables"].items() for e in check_table(name, table)]
    for error in errors:
        print(error, file=sys.stderr)
    print(f"{len(manifest['tables'])} tables checked, {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
