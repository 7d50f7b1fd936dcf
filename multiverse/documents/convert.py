"""`convert(path)`: a document file read as markdown by the reader its bytes and name call for
(told by its suffix and first bytes), and `source_text`: any readable file of the home as text.

Input files that are not read, and why (SPEC §2, §6.6 T03): nothing outside the home is read.
An entry of assets/ or guidelines/ is looked at without reading it (`look`: lstat, stat, the
real path), a pure decision says whether it may be read (`why_unread`), and a file that may is
opened without ever blocking (`open_regular`). A file that is not read gets a catalog row whose
summary is a note starting with NOTE_MARKER; `is_unread` recognises such a row everywhere.
"""

from __future__ import annotations

import errno
import os
import stat
import zipfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO

from multiverse.documents.converted import Converted, decode, decode_cut, unreadable
from multiverse.documents.formats import read_docx, read_html, read_pdf, read_pptx, read_xlsx
from multiverse.logs import lazy_logger
from multiverse.models import AssetType, CatalogEntry

NOTE_MARKER = "Not read: "
INPUT_TYPES = (AssetType.ORIGINAL_INPUT, AssetType.GUIDELINE_DOC)


class Kind(StrEnum):
    """What an entry is, its symbolic link followed."""

    FILE = "file"
    FOLDER = "folder"
    FIFO = "named pipe (FIFO)"
    SOCKET = "socket"
    DEVICE = "device"
    MISSING = "missing"
    LOOP = "loop"
    UNKNOWN = "file of an unknown type"


@dataclass(frozen=True)
class Sighting:
    """What was observed of one entry, without reading it."""

    kind: Kind
    link_target: str | None = None  # where a symbolic link leads (its real path)
    real_path: str = ""  # the entry's real path, every link followed
    inside: bool = True  # whether the real path lies in the home
    error: str | None = None  # why it could not be looked at or read (strerror)


@dataclass(frozen=True)
class Unread:
    """Why an entry is not read, and what the user can do about it."""

    reason: str
    advice: str

    @property
    def note(self) -> str:
        """The catalog summary of the entry."""
        return NOTE_MARKER + self.reason


COPY = "copy the file into assets/ (or guidelines/) instead of linking it"
RELINK = "remove the link, or copy the file it should lead to into assets/"
REGULAR = "replace it with a regular file"
PERMISSIONS = "fix its permissions (or copy it again) so that it can be read"


def why_unread(seen: Sighting) -> Unread | None:
    """Why the entry must not be read, or None when it may be read as a file."""
    if not seen.inside:
        if seen.link_target is not None:
            return Unread(
                f"a symbolic link to a place outside the home ({seen.link_target}); "
                "nothing outside the home is read",
                COPY,
            )
        return Unread(
            f"it lies outside the home ({seen.real_path}), through a linked folder; "
            "nothing outside the home is read",
            COPY,
        )
    if seen.kind is Kind.LOOP:
        return Unread("a symbolic link that loops and never reaches a file", RELINK)
    if seen.kind is Kind.MISSING:
        target = f"its target {seen.link_target} does not exist" if seen.link_target else "gone"
        return Unread(f"a broken symbolic link ({target})", RELINK)
    if seen.kind is Kind.FOLDER:
        if seen.link_target is not None:
            return Unread("a symbolic link to a folder; linked folders are not followed", COPY)
        listed = seen.error or "unknown error"
        return Unread(f"a folder that cannot be listed ({listed})", PERMISSIONS)
    if seen.error is not None:
        return Unread(f"it cannot be read ({seen.error})", PERMISSIONS)
    if seen.kind is not Kind.FILE:
        return Unread(f"a {seen.kind.value}, not a regular file", REGULAR)
    return None


def is_note(summary: str) -> bool:
    """Whether a summary is the note of a file that was not read."""
    return summary.startswith(NOTE_MARKER)


def is_unread(entry: CatalogEntry) -> bool:
    """Whether a catalog row stands for an input file that was not read (never a reference)."""
    return entry.run_id is None and entry.asset_type in INPUT_TYPES and is_note(entry.summary)


def look(path: Path, home: Path) -> Sighting:
    """What `path` is (its link followed) and where it really lies; nothing is opened."""
    try:
        own = os.lstat(path)
    except OSError as error:
        return Sighting(Kind.MISSING, error=_why(error))
    real = os.path.realpath(path)
    target = real if stat.S_ISLNK(own.st_mode) else None
    inside = Path(real).is_relative_to(os.path.realpath(home))
    if not inside:  # nothing outside the home is looked at further
        return Sighting(Kind.UNKNOWN, target, real, inside)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return Sighting(Kind.LOOP, target, real, inside)
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return Sighting(Kind.MISSING, target, real, inside)
        return Sighting(Kind.UNKNOWN, target, real, inside, _why(error))
    return Sighting(_kind(mode), target, real, inside)


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading if it is a regular file; never blocks on a FIFO (OSError else)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return Kind.FILE
    if stat.S_ISDIR(mode):
        return Kind.FOLDER
    if stat.S_ISFIFO(mode):
        return Kind.FIFO
    if stat.S_ISSOCK(mode):
        return Kind.SOCKET
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return Kind.DEVICE
    return Kind.UNKNOWN


def _why(error: OSError) -> str:
    return error.strerror or str(error)


PDF_MAGIC = b"%PDF-"
ZIP_MAGIC = b"PK\x03\x04"
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # old binary Office files, and encrypted new ones
PDF_HEADER_WINDOW = 1024  # readers accept junk before the header within the first kilobyte
HEAD_BYTES = 4096  # how much of a file the decisions look at

DOCUMENT_SUFFIXES = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".docm": "docx",
    ".dotx": "docx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".xltx": "xlsx",
    ".pptx": "pptx",
    ".pptm": "pptx",
    ".ppsx": "pptx",
    ".potx": "pptx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".doc": "doc",
    ".xls": "xls",
    ".ppt": "ppt",
}
OOXML_PARTS = {
    "docx": "word/document.xml",
    "xlsx": "xl/workbook.xml",
    "pptx": "ppt/presentation.xml",
}
LEGACY = {"doc": ".docx", "xls": ".xlsx", "ppt": ".pptx"}


def document_kind(suffix: str, head: bytes, names: Collection[str] = ()) -> str | None:
    """The reader for a file ("pdf", "docx", …), or None for a file that is not a document.

    `names` are the entries of a zip archive (empty for other files).
    """
    if head.startswith(PDF_MAGIC):
        return "pdf"
    for kind, part in OOXML_PARTS.items():
        if part in names:
            return kind
    return DOCUMENT_SUFFIXES.get(suffix.lower())


def container_problem(
    kind: str, suffix: str, head: bytes, names: Collection[str], zip_error: str = ""
) -> str | None:
    """Why a document cannot be read, seen from its first bytes alone, or None if it may be."""
    shown = suffix.lower() or f".{kind}"
    if kind == "pdf" and PDF_MAGIC not in head[:PDF_HEADER_WINDOW]:
        return "not a valid PDF (no %PDF header: damaged, or another format)"
    if kind in LEGACY:
        return f"old binary Office format ({shown}): not read; save it as {LEGACY[kind]}"
    if kind not in OOXML_PARTS:
        return None
    if head.startswith(OLE2_MAGIC):
        return f"encrypted (password-protected) {shown} file, or an old binary file named {shown}"
    if not head.startswith(ZIP_MAGIC):
        return f"not a valid {shown} (not a zip archive: damaged, or another format)"
    if zip_error:
        return f"not a valid {shown} (corrupt zip: {zip_error})"
    if OOXML_PARTS[kind] not in names:
        return f"not a valid {shown} (the archive has no {OOXML_PARTS[kind]})"
    return None


log = lazy_logger(__name__)

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


# The XML an Office reader parses, expanded: a small archive may expand a thousandfold (a
# 440 KB .docx held 158 MB of XML, and parsing it took 8 GB). Media parts are not parsed.
MAX_EXPANDED_XML_BYTES = 50_000_000


def _zip_names(handle: BinaryIO) -> tuple[list[str], str]:
    """The entries of a zip archive and "", or no entries and why it could not be opened."""
    try:
        with zipfile.ZipFile(handle) as archive:
            return archive.namelist(), ""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as error:
        return [], str(error) or type(error).__name__


def _expanded_xml(handle: BinaryIO) -> int:
    """How many bytes the archive's XML parts expand to, as its directory says (a reader of
    a member never gets more than the size the directory gives it)."""
    with zipfile.ZipFile(handle) as archive:
        return sum(info.file_size for info in archive.infolist()
                   if info.filename.lower().endswith((".xml", ".rels", ".vml")))  # fmt: skip


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
    if problem is None and kind in OOXML_PARTS:
        expanded = _expanded_xml(handle)
        if expanded > MAX_EXPANDED_XML_BYTES:
            problem = (f"its text would expand to {expanded / 1e6:,.0f} MB of XML from a "
                       f"{size / 1e6:,.1f} MB file (up to {MAX_EXPANDED_XML_BYTES / 1e6:,.0f} MB "
                       "are read): split it, or save the part you need as a smaller file")
    if problem is not None:
        return unreadable(kind, problem)
    handle.seek(0)
    try:
        return _READERS[kind](handle)
    except Exception as error:  # a damaged file may break a reader anywhere: it is a note
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        log.warning("document_unreadable", path=str(path), kind=kind, error=repr(error)[:300])
        return unreadable(kind, f"could not be read as {kind.upper()} ({reason})")


# How much of a plain text file is read: more than any digest or prompt uses, little enough
# that a log file dropped into assets/ does not stall a step.
MAX_TEXT_BYTES = 2_000_000


def source_text(home: Path, path: Path) -> tuple[str | None, str]:
    """A file of the home as text: `(text, note)`, or `(None, why it gives none)`.

    - A document (PDF, .docx, .xlsx, .pptx, HTML: see `sniff`) is its converted markdown, with
      location headings to cite by (`## Page 3`, `## Slide 2: Costs`, `## Sheet: Sales`, the
      document's own headings); the note says which part a cap left out (e.g. "first 300
      pages of 412"), or why nothing could be read ("encrypted PDF (…)").
    - Any other text file (markdown, plain text, CSV, JSON…) is decoded as it is (UTF-8,
      UTF-16 with a BOM, or CP949); the note says when only its first bytes were read.
    - A binary file gives `(None, "binary file, N bytes")`; a file that may not be read (a
      link leaving the home, a pipe: `multiverse.unread`) gives `(None, the reason)`.
    """
    unread = why_unread(look(path, home))
    if unread is not None:
        return None, unread.note
    if sniff(path) is not None:
        converted = convert(path)
        return converted.markdown, document_note(converted)
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_TEXT_BYTES)
    except OSError as error:
        return None, f"unreadable: {error.strerror or error}"
    text = decode(data) if size <= MAX_TEXT_BYTES else decode_cut(data)
    if text is None:
        return None, f"binary file, {size:,} bytes"
    cut = f"first {MAX_TEXT_BYTES:,} bytes of {size:,}" if size > MAX_TEXT_BYTES else ""
    return text, cut


def document_note(converted: Converted) -> str:
    """What a person is told of a converted document: "PDF, 3 pages" and what a cap left out,
    or why nothing could be read ("encrypted PDF (a password is needed to open it)")."""
    if converted.markdown is None:
        return f"{converted.note} ({converted.extent})" if converted.extent else converted.note
    return f"{converted.label}: {converted.note}" if converted.note else converted.label
