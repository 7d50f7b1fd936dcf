"""Tests of the one-line catalog summaries and of BuiltinExecutor.summarize."""

from __future__ import annotations

import shutil
from pathlib import Path

from executor.builtin import BuiltinExecutor

ASSETS = Path(__file__).parent / "fixtures" / "assets"
CORPUS = Path(__file__).parent / "corpus" / "tables"


def summary(path: Path) -> str:
    text = BuiltinExecutor().summarize(path)
    assert "\n" not in text and len(text) <= 300
    return text


def test_markdown_summary_is_its_first_meaningful_lines() -> None:
    """A markdown file is summarised by its first lines as it writes them (heading marks off)."""
    text = summary(ASSETS / "market_report_2024.md")
    assert text.startswith(
        "European E-Bike Market Report 2024 Prepared by the Strategy Office, March 2024. "
        "Executive summary The European e-bike market reached €18.5 billion in 2023"
    )


def test_korean_summary() -> None:
    """A Korean report is summarised by its own Korean lines, its key figure among them."""
    text = summary(ASSETS / "korea_market_ko.md")
    assert text.startswith("국내 전기자전거 시장 동향 보고서 ") and "1,200억 원" in text


def test_a_document_summary_skips_what_says_nothing(tmp_path: Path) -> None:
    """Front matter, empty lines, bare links, rules and fences are skipped; the lines kept are
    the file's own, never reworded."""
    path = tmp_path / "notes.md"
    path.write_text(
        "---\ntitle: x\nauthor: y\n---\n\n<https://example.com/data>\n\nhttps://example.org\n"
        "\n---\n# Charging notes\n\n```\n\nNorway   had 24,000 fast chargers in 2024.\n"
        "- [source](https://example.com/a)\n",
        "utf-8",
    )
    assert summary(path) == "Charging notes Norway had 24,000 fast chargers in 2024."


def test_a_csv_summary_is_its_profile() -> None:
    """A CSV is summarised by its rows, its period and its columns (categories with values,
    measures with units)."""
    text = summary(ASSETS / "quarterly_revenue.csv")
    assert text.startswith("CSV table, 8 rows: quarter (2023Q1–2023Q4, quarterly)")
    assert "region (2: Germany, France)" in text and "revenue_eur_m (EUR million)" in text
    assert "margin_pct (%)" in text


def test_a_table_summary_takes_units_from_its_description(tmp_path: Path) -> None:
    """A table beside the document that describes it gets the units that document states."""
    for suffix in (".csv", ".md"):
        shutil.copy(CORPUS / f"grunfeld{suffix}", tmp_path / f"grunfeld{suffix}")
    text = summary(tmp_path / "grunfeld.csv")
    assert text.startswith("CSV table, 220 rows: year (1935–1954)")
    assert "1947 dollars" in text and "firm (11: General Motors, US Steel" in text


def test_a_table_summary_never_sums_codes() -> None:
    """Year and quarter numbers are the period the table covers, never a sum."""
    text = summary(CORPUS / "residual_oil.csv")
    assert text.startswith("CSV table, 136 rows: Year, Qtr (1983Q1–2016Q4, quarterly)")
    assert "sum" not in text and "Oil" in text


def test_binary_empty_and_missing_files(tmp_path: Path) -> None:
    """Binary files are described by size; empty or missing files do not raise."""
    blob = tmp_path / "logo.png"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)) * 48)
    assert summary(blob) == "binary file, 12,298 bytes"
    (tmp_path / "empty.md").write_text("", "utf-8")
    assert summary(tmp_path / "empty.md") == "empty file"
    assert summary(tmp_path / "missing.md").startswith("unreadable file")


def test_long_text_is_cut_to_300_characters(tmp_path: Path) -> None:
    """A summary never exceeds 300 characters, even for very long sentences."""
    path = tmp_path / "long.txt"
    path.write_text("Revenue " + "grew strongly again " * 200 + ".\n", "utf-8")
    assert summary(path).endswith("…")


def test_cp949_text_is_read(tmp_path: Path) -> None:
    """A Korean text saved in CP949 (not UTF-8) is still summarised as text."""
    path = tmp_path / "legacy.txt"
    shutil.copy(ASSETS / "korea_market_ko.md", tmp_path / "src.md")
    path.write_bytes((tmp_path / "src.md").read_text("utf-8").encode("cp949"))
    assert "1,200억 원" in summary(path)
