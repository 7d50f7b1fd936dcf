"""Tests of the one-line catalog summaries and of BuiltinExecutor.summarize."""

from __future__ import annotations

import shutil
from pathlib import Path

from executor.builtin import BuiltinExecutor

ASSETS = Path(__file__).parent / "fixtures" / "assets"


def summary(path: Path) -> str:
    text = BuiltinExecutor().summarize(path)
    assert "\n" not in text and len(text) <= 300
    return text


def test_markdown_summary_is_title_and_key_sentence() -> None:
    """A markdown file is summarised by its title and its best sentence."""
    text = summary(ASSETS / "market_report_2024.md")
    assert text.startswith("European E-Bike Market Report 2024. ")
    assert "€" in text


def test_korean_summary() -> None:
    """A Korean report is summarised in Korean with its key figure."""
    text = summary(ASSETS / "korea_market_ko.md")
    assert text.startswith("국내 전기자전거 시장 동향 보고서.") and "1,200억 원" in text


def test_csv_summary_names_shape_and_columns() -> None:
    """A CSV is summarised by rows, columns and its leading numeric column."""
    text = summary(ASSETS / "quarterly_revenue.csv")
    assert "8 rows × 5 columns" in text and "revenue_eur_m" in text


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
