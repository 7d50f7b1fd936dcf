"""SIMPLE_TASK requests answered offline: list assets, convert a CSV, summarise, count words."""

from __future__ import annotations

import re
from pathlib import Path

from executor.builtin.evidence import BANNER
from executor.builtin.paths import TaskError, resolve_reference
from executor.builtin.sources import MAX_BYTES, decode
from executor.builtin.summary import summarize_path
from executor.builtin.tabular import format_number, markdown_table, parse_csv
from executor.builtin.text import word_count
from multiverse.unread import open_regular

MAX_TABLE_ROWS = 1000
_PATH = re.compile(r"[`'\"]?((?:\.{0,2}/)?[\w.\-/가-힣]+\.[A-Za-z0-9]{1,6})[`'\"]?")
_LIST = re.compile(r"\b(?:list|show|ls)\b.*\bassets?\b|\bassets?\b.*\blist\b|목록", re.I | re.S)
_CONVERT = re.compile(r"\bconvert\b|\bto markdown\b|마크다운|변환", re.I)
_SUMMARIZE = re.compile(r"\bsummar(?:i[sz]e|y)\b|요약", re.I)
_COUNT = re.compile(r"\bcount\b.*\bwords?\b|\bword count\b|단어\s*수", re.I | re.S)
HELP = """The offline engine understands these simple commands:

- `list the assets` (or `자산 목록`): the files in `assets/` with their sizes
- `convert assets/<file>.csv to markdown`: the CSV as a markdown table
- `summarize assets/<file>`: a short extractive summary
- `count words in assets/<file>`: words, lines and characters

For anything else, write a structured request (it becomes a run), or configure a model in
`runtime-mapping.yaml`."""


def _size(size: int) -> str:
    for unit, limit in (("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= limit:
            return f"{size / limit:.1f} {unit}"
    return f"{size} bytes"


def list_assets(home: Path) -> str:
    """The files of assets/ with their sizes."""
    folder = home / "assets"
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
    if not files:
        return "`assets/` is empty: put the material to work on there."
    lines = [f"`assets/` holds {len(files)} file(s):", ""]
    lines += [f"- `{p.relative_to(home).as_posix()}` ({_size(p.stat().st_size)})" for p in files]
    return "\n".join(lines)


def _text(path: Path) -> str:
    try:
        handle = open_regular(path)  # never blocks on a named pipe
    except OSError as error:
        raise TaskError(f"`{path.name}` cannot be read: {error.strerror or error}") from None
    with handle:
        text = decode(handle.read(MAX_BYTES))
    if text is None:
        raise TaskError(f"`{path.name}` is a binary file; it holds no text to work on")
    return text


def convert_csv(home: Path, path: Path) -> str:
    """A CSV file as a markdown table."""
    if path.suffix.lower() not in (".csv", ".tsv"):
        raise TaskError(f"`{path.name}` is not a CSV file; only CSV converts to a markdown table")
    table = parse_csv(_text(path))
    if not table.header:
        return f"`{path.relative_to(home).as_posix()}` is empty."
    shown = table.rows[:MAX_TABLE_ROWS]
    note = (
        f"\n\n_First {len(shown)} of {len(table.rows)} rows._"
        if len(shown) < len(table.rows)
        else ""
    )
    return markdown_table(table.header, shown) + note


def count_words(home: Path, path: Path) -> str:
    """Words, lines and characters of a text file."""
    text = _text(path)
    name = path.relative_to(home).as_posix()
    return (
        f"`{name}`: {format_number(word_count(text))} words, "
        f"{format_number(len(text.splitlines()))} lines, {format_number(len(text))} characters."
    )


def answer(request: str, home: Path) -> str:
    """The reply to a simple request (markdown); refusals and errors are replies too."""
    home = home.resolve()
    try:
        body = _dispatch(request, home)
    except TaskError as error:
        body = f"Could not do that: {error}."
    return f"{BANNER}\n\n{body}\n"


def _body(request: str) -> str:
    """The request without its front matter."""
    return re.sub(r"\A---\n.*?\n---\n", "", request, flags=re.S)


def named_paths(request: str) -> list[str]:
    """The file paths a request names, those naming their folder first."""
    named = [m.group(1) for m in _PATH.finditer(_body(request))]
    # A real path usually names its folder; "e.g." and the like do not.
    return [n for n in named if "/" in n] + [n for n in named if "/" not in n]


def is_known_command(request: str) -> bool:
    """Whether the offline engine answers this request itself rather than with its help text."""
    text = _body(request)
    targeted = bool(named_paths(request)) and any(
        pattern.search(text) for pattern in (_COUNT, _CONVERT, _SUMMARIZE)
    )
    return targeted or _LIST.search(text) is not None


def _dispatch(request: str, home: Path) -> str:
    text = _body(request)
    named = named_paths(request)
    name = named[0] if named else None
    target = resolve_reference(home, name) if name else None
    if target is not None and target.is_dir():
        raise TaskError(f"`{name}` is a folder, not a file")
    if _COUNT.search(text) and target is not None:
        return count_words(home, target)
    if _CONVERT.search(text) and target is not None:
        return convert_csv(home, target)
    if _SUMMARIZE.search(text) and target is not None:
        return f"`{target.relative_to(home).as_posix()}`: {summarize_path(target)}"
    if _LIST.search(text):
        return list_assets(home)
    return HELP
