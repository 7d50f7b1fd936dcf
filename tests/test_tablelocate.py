"""Locating the table: the fast shape check agrees with mistletoe wherever it answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiverse.store.schemas import find_simple_table, find_table_with_mistletoe
from multiverse.store.tablefile import new_file_lines, render_table

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "tables").glob("*.md"))


def _lines(text: str) -> list[str]:
    return [line + "\n" for line in text.split("\n")]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fast_path_agrees_with_mistletoe_on_every_fixture(path: Path) -> None:
    """On every hand-edited fixture the fast check either declines or finds mistletoe's table."""
    raw = path.read_bytes().decode("utf-8-sig", errors="replace")
    lines = _lines(raw.replace("\r\n", "\n"))
    fast = find_simple_table(lines)
    assert fast is None or fast == find_table_with_mistletoe(lines)


@pytest.mark.parametrize(
    "text",
    [
        "```\n| a | b |\n|---|---|\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        "- item\n\n    | a | b |\n    |---|---|\n",
        "> | a | b |\n> |---|---|\n",
        "prose line\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        "Title\n=====\n\n| a | b |\n|---|---|\n",
        "1. first\n\n| a | b |\n|---|---|\n",
        "    indented code\n\n| a | b |\n|---|---|\n",
    ],
)
def test_container_blocks_are_left_to_mistletoe(text: str) -> None:
    """Fences, lists, quotes, setext headings and code blocks are never judged by the fast check."""
    assert find_simple_table(_lines(text)) is None


@settings(max_examples=200, deadline=None)
@given(
    title=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30),
    rows=st.lists(st.lists(st.text(max_size=12), min_size=2, max_size=2), max_size=5),
)
def test_store_written_files_take_the_fast_path(title: str, rows: list[list[str]]) -> None:
    """Files as the store writes them are found by the fast check, exactly where mistletoe is."""
    clean = " ".join(title.split()) or "Title"
    lines = new_file_lines(clean, "A description.") + render_table(["a", "b"], rows)
    mistletoe = find_table_with_mistletoe(lines)
    fast = find_simple_table(lines)
    assert fast is None or fast == mistletoe
    if clean.isalnum():
        assert fast == mistletoe == (4, 2 + len(rows))
