"""Finding the first top-level pipe table of a markdown file.

mistletoe decides where the table block is (so a table inside a code fence, a list or a quote
is not taken for ours). Importing mistletoe costs ~150 ms, which a one-shot command like
`multiverse status` cannot afford, so files laid out as the store writes them (title, prose,
blank line, table) are recognised by a strict shape check first; anything else, every file a
person laid out differently, goes to mistletoe. Tests prove both agree on every fixture.
"""

from __future__ import annotations

import re
import threading

from multiverse.tablecodec import split_row

# mistletoe keeps its token list in module state; swapping it is not thread-safe. Every other
# user of mistletoe (e.g. rendering markdown to HTML) must hold the same lock.
MISTLETOE_LOCK = threading.Lock()

_DELIMITER = re.compile(r"\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*")
# A prose line that cannot open a block which could contain or hide a table: it starts with a
# letter, digit or a few safe characters, and is not an ordered-list item.
_PLAIN = re.compile(r"[^\s>\-*+_=<`~|\[#\\\d]|\d+(?![.)](\s|$))|`(?!``)")
_HEADING = re.compile(r"#{1,6}(\s|$)")


def _is_plain(line: str) -> bool:
    text = line.rstrip("\r\n")
    if not text.strip():
        return True
    if "|" in text:
        return False
    return bool(_HEADING.match(text) or _PLAIN.match(text))


def find_simple_table(lines: list[str]) -> tuple[int, int] | None:
    """(start, count) when the file has the store's simple shape; None means "ask mistletoe"."""
    index = next((n for n, line in enumerate(lines) if line.startswith("|")), None)
    if index is None or not all(_is_plain(line) for line in lines[:index]):
        return None
    if index > 0 and lines[index - 1].strip():
        return None  # a table right under a paragraph line: leave that judgement to mistletoe
    if index + 1 >= len(lines):
        return None
    delimiter = lines[index + 1].rstrip("\r\n")
    if not _DELIMITER.fullmatch(delimiter):
        return None
    if len(split_row(delimiter)) != len(split_row(lines[index].rstrip("\r\n"))):
        return None
    end = index + 2
    while end < len(lines) and "|" in lines[end]:
        end += 1
    return index, end - index


def find_table_with_mistletoe(lines: list[str]) -> tuple[int, int] | None:
    """(start, count) of the first top-level table as mistletoe parses the file."""
    from mistletoe import block_token

    class TableBlock(block_token.Table):
        """A table that keeps its raw lines and skips inline parsing of the cells."""

        def __init__(self, match: tuple[list[str], int]) -> None:
            table_lines, start_line = match
            self.raw_lines = table_lines
            self.line_number = start_line
            self.children = []

    with MISTLETOE_LOCK:
        types = block_token._token_types
        position = types.index(block_token.Table)
        types[position] = TableBlock
        try:
            document = block_token.Document(lines)
        finally:
            types[position] = block_token.Table
    for child in document.children or ():
        if isinstance(child, TableBlock):
            return child.line_number - 1, len(child.raw_lines)
    return None


def find_table(lines: list[str]) -> tuple[int, int] | None:
    """(first line index, line count) of the first top-level table, or None."""
    return find_simple_table(lines) or find_table_with_mistletoe(lines)
