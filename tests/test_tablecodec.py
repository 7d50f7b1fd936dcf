"""Tests of the lossless cell codec and GFM row splitting (SPEC §3.1)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from multiverse.store.schemas import decode_cell, encode_cell, split_row

# Every value a person or a model may put in a cell. Hypothesis' text() never yields surrogates,
# which a Python str read from UTF-8 cannot hold either.
ANY_TEXT = st.text()
EDGY_TEXT = st.text(
    alphabet=st.sampled_from(
        list(" \t\n\r\\|<>`*_[]()&#!~-:br/u{}0123456789aA한👩\u200d💻\u2028\u3000\x00\x1b\x85")
    )
)

# Values that broke naive cell encodings; shared with the store's round-trip test.
NAMED_VALUES: list[str] = json.loads(
    (Path(__file__).parent / "fixtures" / "tables" / "named_values.json").read_text()
)


@pytest.mark.parametrize("value", NAMED_VALUES)
def test_named_values_round_trip(value: str) -> None:
    """Each named tricky value decodes back to exactly itself."""
    assert decode_cell(encode_cell(value)) == value


@pytest.mark.parametrize("value", NAMED_VALUES)
def test_named_values_stay_one_cell_of_one_line(value: str) -> None:
    """An encoded value never breaks its line or its row and has no edge whitespace."""
    encoded = encode_cell(value)
    assert len((encoded + "x").splitlines()) == 1
    assert encoded == encoded.strip()
    assert split_row(f"| {encoded} | next |") == [encoded, "next"]


@settings(max_examples=1000)
@given(ANY_TEXT)
def test_any_text_round_trips(value: str) -> None:
    """Any string decodes back exactly from its encoding."""
    assert decode_cell(encode_cell(value)) == value


@settings(max_examples=1000)
@given(st.lists(EDGY_TEXT | ANY_TEXT, min_size=1, max_size=4))
def test_any_row_splits_back_into_its_cells(values: list[str]) -> None:
    """A row of encoded values splits back into exactly its cells, with or without outer pipes."""
    encoded = [encode_cell(value) for value in values]
    with_pipes = "| " + " | ".join(encoded) + " |"
    assert [decode_cell(cell) for cell in split_row(with_pipes)] == values
    if encoded[0] and encoded[-1]:  # without outer pipes an empty edge cell reads as a border
        without_pipes = " | ".join(encoded)
        assert [decode_cell(cell) for cell in split_row(without_pipes)] == values


def test_literal_br_is_escaped_but_line_break_is_br() -> None:
    """A line break is written as <br>, while a typed <br> is kept as text."""
    assert encode_cell("a\nb") == "a<br>b"
    assert encode_cell("a<br>b") == "a\\<br>b"


def test_decode_reads_what_people_type() -> None:
    """Hand-typed <br/> forms, backslash escapes and \\u{hex} decode as a person means them."""
    assert decode_cell("a<br/>b<BR />c<br>d") == "a\nb\nc\nd"
    assert decode_cell("\\*not em\\* \\# \\|") == "*not em* # |"
    assert decode_cell("\\u{41}\\u{1F600}") == "A\U0001f600"


def test_decode_keeps_what_is_not_an_escape() -> None:
    """A backslash before a non-punctuation character, entities and markup stay verbatim."""
    assert decode_cell("C:\\path") == "C:\\path"
    assert decode_cell("&amp; **b** [x](y)") == "&amp; **b** [x](y)"
    assert decode_cell("\\u{110000}") == "\\u{110000}"
    assert decode_cell("trailing \\") == "trailing \\"


def test_edge_whitespace_and_controls_are_coded() -> None:
    """Edge whitespace and control characters become \\u{hex}, inner spaces stay."""
    assert encode_cell(" a b ") == "\\u{20}a b\\u{20}"
    assert encode_cell("a\rb\x00") == "a\\u{d}b\\u{0}"


@pytest.mark.parametrize(
    ("line", "cells"),
    [
        ("| a | b |", ["a", "b"]),
        ("a | b", ["a", "b"]),
        ("| a | b", ["a", "b"]),
        ("a | b |", ["a", "b"]),
        ("|a||c|", ["a", "", "c"]),
        ("| a |  | c |", ["a", "", "c"]),
        ("|| b |", ["", "b"]),
        ("| a ||", ["a", ""]),
        ("   |  spaced   |  out |   ", ["spaced", "out"]),
        ("| a \\| b | c |", ["a \\| b", "c"]),
        ("| a \\\\| b |", ["a \\\\", "b"]),
        ("| ends \\|", ["ends \\|"]),
        ("| `a|b` |", ["`a", "b`"]),
    ],
)
def test_split_row(line: str, cells: list[str]) -> None:
    """Rows split as GitHub does: optional outer pipes, kept empty cells, escaped pipes."""
    assert split_row(line) == cells


def _expected_inner(char: str) -> str:
    """The encoding rule stated by Unicode category, independent of the module's tables."""
    if char == "\n":
        return "<br>"
    if char in "\\|<":
        return "\\" + char
    if unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp"):
        return f"\\u{{{ord(char):x}}}"
    return char


def test_every_code_point_is_encoded_by_the_rule() -> None:
    """Over every code point, inside a value and at its edges, encode_cell follows the rule."""
    for code in range(0x110000):
        char = chr(code)
        inner = _expected_inner(char)
        assert encode_cell(f"a{char}a") == f"a{inner}a", hex(code)
        edge = f"\\u{{{code:x}}}" if char.isspace() and char != "\n" else inner
        assert encode_cell(f"{char}a") == f"{edge}a", hex(code)
        assert encode_cell(f"a{char}") == f"a{edge}", hex(code)
