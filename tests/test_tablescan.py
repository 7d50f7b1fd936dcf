"""CSV files summarised over every row, streamed: exact counts and sums, or a stated part."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from executor.builtin import BuiltinExecutor
from executor.builtin import tables as tablescan
from executor.builtin.digest import digest_scan
from executor.builtin.sources import read_references
from executor.builtin.tables import parse_csv, scan_csv, scan_rows, table_facts

ASSETS = Path(__file__).parent / "fixtures" / "assets"
ROWS = 300_000
REGIONS = ("DE", "FR", "IT", "ES", "NL")


def write_large_csv(path: Path) -> tuple[int, int]:
    """A CSV of ROWS rows (~9 MB); returns the exact sums of its units and cents columns."""
    units_sum = cents_sum = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write("date,region,product,units,revenue_eur\n")
        for i in range(ROWS):
            units, cents = i % 500, (i * 37) % 100_000
            units_sum += units
            cents_sum += cents
            handle.write(f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d},{REGIONS[i % 5]},P{i % 997},")
            handle.write(f"{units},{cents // 100}.{cents % 100:02d}\n")
    return units_sum, cents_sum


def test_a_large_csv_is_summarised_over_every_row(tmp_path: Path) -> None:
    """A 300,000-row CSV (past the old 2 MB and 100,000-row caps) has exact counts and sums in
    its digest; its catalog line counts every row."""
    path = tmp_path / "assets" / "sales.csv"
    path.parent.mkdir()
    units_sum, cents_sum = write_large_csv(path)
    assert path.stat().st_size > 8_000_000
    text = BuiltinExecutor().summarize(path)  # the catalog's line: the table's profile
    assert text.startswith("CSV table, 300,000 rows: date (2024-01-01–2024-12-28")
    assert "region (5: DE, FR, IT, ES, NL)" in text and "sum" not in text
    _, (digest,) = read_references(tmp_path, ["assets/sales.csv"])
    stats = {s.name: s for s in digest.table.numeric} if digest.table else {}
    assert stats["units"].count == ROWS and stats["units"].total == units_sum
    assert round(stats["revenue_eur"].total * 100) == cents_sum
    assert "labels: date (84 distinct" in "; ".join(digest.facts)
    assert "region (5 distinct: DE, FR, IT, ES, NL)" in "; ".join(digest.facts)
    assert digest.note == ""


def test_a_capped_scan_says_which_rows_it_covers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the scan cap the rest is counted; the digest says which rows the statistics cover."""
    monkeypatch.setattr(tablescan, "MAX_SCAN_ROWS", 10)
    text = "n,value\n" + "".join(f"{i},{i * 2}\n" for i in range(25))
    scan = scan_csv(io.StringIO(text))
    assert (scan.scanned, scan.total, scan.facts.row_count) == (10, 25, 25)
    assert scan.facts.numeric[1].total == sum(i * 2 for i in range(10))
    digest = digest_scan("numbers.csv", scan, "numbers")
    assert digest.note == "statistics over the first 10 rows of 25"
    assert digest.facts[0] == "25 rows × 2 columns" and digest.note in digest.facts


def test_the_scan_agrees_with_the_whole_table_statistics() -> None:
    """Streaming gives the statistics `table_facts` gives for a table held in memory."""
    text = (ASSETS / "quarterly_revenue.csv").read_text(encoding="utf-8")
    whole = table_facts(parse_csv(text))
    streamed = scan_csv(io.StringIO(text, newline="")).facts
    assert streamed == whole
    table = parse_csv('quarter,region,revenue\n2023-Q1,DE,"1,520"\n\n2023-Q2,FR,(12)\n')
    assert scan_rows(table.header, table.rows).facts == table_facts(table)


def test_csv_encodings_and_quoted_newlines_are_streamed(tmp_path: Path) -> None:
    """A CP949 file, and a cell holding a line break, are read as the table they are."""
    path = tmp_path / "지역.csv"
    rows = '지역,매출\n서울,100\n부산,"2,500"\n"대구\n광역시",50\n'
    path.write_bytes(rows.encode("cp949"))
    _, (digest,) = read_references(tmp_path, ["지역.csv"])
    assert digest.facts[0] == "3 rows × 2 columns"
    assert digest.points[0].text.startswith("Column 매출 ranges from 50 to 2,500 over 3 rows")
    assert "the highest is in the row with 지역 부산" in digest.points[0].text
