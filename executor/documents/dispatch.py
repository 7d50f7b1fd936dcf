"""`convert(path)`: a document file read as markdown by the reader its bytes and name call for.

The only door to the readers: it looks at the file's first bytes (`sniff`), refuses what
cannot be read with a note, and never lets a damaged file's exception escape.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import structlog

from executor.documents.converted import Converted, unreadable
from executor.documents.docx import read_docx
from executor.documents.html import read_html
from executor.documents.pdf import read_pdf
from executor.documents.pptx import read_pptx
from executor.documents.sniff import HEAD_BYTES, ZIP_MAGIC, container_problem, document_kind
from executor.documents.xlsx import read_xlsx
from multiverse.unread import open_regular

log = structlog.get_logger(__name__)

# The readers hold the whole parsed document in memory; a larger file is a scan or a media
# dump far more often than prose, and would stall the catalog step that summarises it.
MAX_DOCUMENT_BYTES = 100_000_000
_READERS: dict[str, Callable[[BinaryIO], Converted]] = {
    "pdf": read_pdf,
    "docx": read_docx,
    "xlsx": read_xlsx,
    "pptx": read_pptx,
    "html": read_html,
}


def _zip_names(handle: BinaryIO) -> tuple[list[str], str]:
    """The entries of a zip archive and "", or no entries and why it could not be opened."""
    try:
        with zipfile.ZipFile(handle) as archive:
            return archive.namelist(), ""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as error:
        return [], str(error) or type(error).__name__


def sniff(path: Path) -> str | None:
    """The kind of document a file is ("pdf", "docx", "xlsx", "pptx", "html", …), or None."""
    try:
        with open_regular(path) as handle:
            head = handle.read(HEAD_BYTES)
            names = _zip_names(handle)[0] if head.startswith(ZIP_MAGIC) else []
    except OSError:
        return None
    return document_kind(path.suffix, head, names)


def convert(path: Path) -> Converted:
    """The document at `path` as markdown, or a note saying why it cannot be read; never raises."""
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            return _convert(path, handle)
    except OSError as error:
        kind = document_kind(path.suffix, b"") or "file"
        return unreadable(kind, f"cannot be opened ({error.strerror or error})")


def _convert(path: Path, handle: BinaryIO) -> Converted:
    head = handle.read(HEAD_BYTES)
    names, zip_error = _zip_names(handle) if head.startswith(ZIP_MAGIC) else ([], "")
    kind = document_kind(path.suffix, head, names)
    if kind is None:
        return unreadable(path.suffix.lstrip(".") or "file", "not a document this engine reads")
    problem = container_problem(kind, path.suffix, head, names, zip_error)
    size = os.fstat(handle.fileno()).st_size
    if problem is None and size > MAX_DOCUMENT_BYTES:
        problem = f"too large to read ({size / 1e6:,.0f} MB; documents up to "
        problem += f"{MAX_DOCUMENT_BYTES / 1e6:,.0f} MB are read)"
    if problem is not None:
        return unreadable(kind, problem)
    handle.seek(0)
    try:
        return _READERS[kind](handle)
    except Exception as error:  # a damaged file may break a reader anywhere: it is a note
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        log.warning("document_unreadable", path=str(path), kind=kind, error=repr(error)[:300])
        return unreadable(kind, f"could not be read as {kind.upper()} ({reason})")
