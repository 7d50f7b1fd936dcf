"""Reading references: files and folders inside the home turned into digests.

The I/O edge of extraction: decoding, size caps, and the choice of reader by file type. A
document (PDF, Word, Excel, PowerPoint, HTML) is converted to markdown by `executor.documents`
and digested like a markdown file; a CSV is scanned whole, row by row.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import yaml

from executor.builtin.digest import (
    digest_document,
    digest_note,
    digest_scan,
    digest_text,
)
from executor.builtin.evidence import Digest, is_builtin_document, merge, read_document
from executor.builtin.paths import inside, relative, resolve_reference
from executor.builtin.tablescan import scan_csv
from executor.builtin.tabular import describe_data
from executor.documents import convert, html_document, sniff
from executor.documents import source_text as source_text  # for the evidence brief
from executor.documents.decoding import decode as decode
from executor.documents.decoding import text_encoding
from executor.documents.source import MAX_TEXT_BYTES
from multiverse.home import Home
from multiverse.unread import look, open_regular, why_unread

MAX_BYTES = MAX_TEXT_BYTES
MAX_FOLDER_FILES = 50
TABLE_SUFFIXES = (".csv", ".tsv")
_ENCODING_PROBE = 1 << 16  # bytes that tell a CSV's encoding


def entries(path: Path) -> list[Path]:
    """`path` itself unless it is a folder, else the folder's visible entries that are not real
    folders (recursively, sorted, capped): linked folders, pipes and links are entries too."""
    if not path.is_dir():
        return [path]
    found = sorted(
        p
        for p in path.rglob("*")
        if (p.is_symlink() or not p.is_dir())
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    return found[:MAX_FOLDER_FILES]


def expand(path: Path, home: Path | None = None) -> list[Path]:
    """The files of `entries(path)` that may be read (`multiverse.unread`), judged inside
    `home` (by default inside `path` itself, the strictest); the others are left out."""
    root = home if home is not None else path
    return [p for p in entries(path) if why_unread(look(p, root)) is None]


def read_references(home: Path, references: list[str]) -> tuple[list[str], list[Digest]]:
    """The files the references name (relative to home) and their merged digests."""
    files: list[str] = []
    digests: list[Digest] = []
    for reference in references:
        for path in entries(resolve_reference(home, reference)):
            files.append(relative(home, path))
            digests.extend(read_file(home, path))
    return files, merge(digests)


def read_file(home: Path, path: Path) -> list[Digest]:
    """The digests of one file: its own, or those a builtin document cites.

    A file that may not be read (a link leaving the home, a broken link, a pipe: see
    `multiverse.unread`) is a note saying why; nothing is opened that could block.
    """
    source = relative(home, path)
    unread = why_unread(look(path, home))
    if unread is not None:
        return [digest_note(source, "unreadable", path.name, unread.note)]
    if path.suffix.lower() in TABLE_SUFFIXES:
        return [read_table(source, path)]
    if sniff(path) is not None and not _drawn_chart(home, path):
        return [digest_document(source, convert(path), path.stem)]
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_BYTES)
    except OSError as error:
        return [digest_note(source, "unreadable", path.name, f"unreadable: {error.strerror}")]
    text = decode(data)
    if text is None:
        return [digest_note(source, "binary", path.name, f"binary file, {size:,} bytes")]
    return digest_content(source, path.suffix.lower(), text, path.stem)


def read_table(source: str, path: Path) -> Digest:
    """A CSV (or TSV) file's digest over all its rows, read as a stream (`tablescan`)."""
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            encoding = text_encoding(handle.read(_ENCODING_PROBE))
            if encoding is None:
                return digest_note(source, "binary", path.name, f"binary file, {size:,} bytes")
            handle.seek(0)
            # errors="replace": a stray byte deep in a large file does not lose the table.
            with io.TextIOWrapper(handle, encoding, errors="replace", newline="") as lines:
                return digest_scan(source, scan_csv(lines), path.stem)
    except OSError as error:
        return digest_note(source, "unreadable", path.name, f"unreadable: {error.strerror}")


def is_chart_page(text: str, in_run_folders: bool) -> bool:
    """Whether an HTML text is a chart page a run drew (an `<svg` in runs/ or outputs/, or the
    engine's banner): it stays a chart to link, not a page to read."""
    return "<svg" in text and (in_run_folders or is_builtin_document(text))


def _drawn_chart(home: Path, path: Path) -> bool:
    if path.suffix.lower() not in (".html", ".htm"):
        return False
    try:
        with open_regular(path) as handle:
            text = decode(handle.read(MAX_BYTES)) or ""
    except OSError:
        return False
    return is_chart_page(text, inside(path, Home(home).runs) or inside(path, Home(home).outputs))


def digest_content(source: str, suffix: str, text: str, stem: str) -> list[Digest]:
    """The digests of decoded content, chosen by the file's suffix."""
    if suffix in TABLE_SUFFIXES:
        return [digest_scan(source, scan_csv(io.StringIO(text, newline="")), stem)]
    if suffix in (".json", ".yaml", ".yml"):
        try:
            shape = describe_data(text, suffix != ".json")
        except (json.JSONDecodeError, yaml.YAMLError) as error:
            shape = f"not valid {suffix[1:].upper()}: {str(error).splitlines()[0]}"
        return [digest_note(source, "data", stem, f"{suffix[1:].upper()} {shape}")]
    if suffix == ".svg" or (suffix in (".html", ".htm") and "<svg" in text):
        return [digest_note(source, "markup", stem, "chart (HTML with an SVG image)")]
    if suffix in (".html", ".htm"):
        return [digest_document(source, html_document(text), stem)]
    if is_builtin_document(text):
        return read_document(text)
    kind = "markdown" if suffix in (".md", ".markdown") else "text"
    return [digest_text(source, text, kind, stem)]
