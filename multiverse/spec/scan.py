"""The home looked at before the proposal: a light scan of assets/ and guidelines/.

Each input file with its kind (a table, a document, something else), its title, the tables a
document describes (same stem, or it names the table's file), and each table's profile: its
columns with units, the period it covers and its row count (`multiverse.tabular`). Guidelines
are kept as text, for the format rules they state. Files that may not be read
(`multiverse.unread`) are not looked into.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import structlog
from pydantic import Field

from multiverse.documents import look, source_text, why_unread
from multiverse.home import Home
from multiverse.spec.model import Plain
from multiverse.tabular import TABLE_SUFFIXES, TableProfile, profile

log = structlog.get_logger(__name__)

TITLE_LIMIT = 120
ABOUT_LIMIT = 600  # characters of a file's first meaningful lines
GUIDELINE_LIMIT = 20_000  # characters of one guideline kept for its format rules
DESCRIPTION_LIMIT = 60_000  # characters of a description given to a table's profile
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".docx", ".pdf", ".pptx", ".html", ".htm")

Kind = Literal["table", "document", "other"]


class ScannedFile(Plain):
    """One input file as the scan found it."""

    path: str  # home-relative, posix
    kind: Kind
    title: str = ""
    about: str = ""  # the first meaningful lines of the file (of its description, for a table)
    describes: list[str] = Field(default_factory=list)  # the tables this document describes
    profile: TableProfile | None = None
    note: str = ""  # why a table or document could not be read


class Guideline(Plain):
    """A file of guidelines/ and its text (format rules are read from it)."""

    path: str
    text: str


class HomeScan(Plain):
    """What the home holds, looked at before a proposal."""

    files: list[ScannedFile] = Field(default_factory=list)
    guidelines: list[Guideline] = Field(default_factory=list)
    search_provider: str | None = None  # the configured web_search provider, if any

    def get(self, path: str) -> ScannedFile | None:
        """The scanned file at `path`, if any."""
        return next((item for item in self.files if item.path == path), None)

    def tables(self) -> list[ScannedFile]:
        """The files that are readable tables, in path order."""
        return [item for item in self.files if item.profile is not None]

    def companions(self, path: str) -> list[str]:
        """The files that go with `path`: the documents describing it, or the tables it
        describes."""
        found = [item.path for item in self.files if path in item.describes]
        item = self.get(path)
        return found + (list(item.describes) if item is not None else [])


def scan_home(home: Home, search_provider: str | None = None) -> HomeScan:
    """Look at every readable file of assets/ (and the text of guidelines/)."""
    paths = sorted(_files(home.assets))
    texts = {path: _text(home, path) for path in paths if path.suffix.lower() in DOCUMENT_SUFFIXES}
    documents = [
        ScannedFile(
            path=home.relative(path),
            kind="document",
            title=_title(text or "", path),
            about=first_lines(text or ""),
        )
        for path, text in texts.items()
    ]
    tables = [path for path in paths if path.suffix.lower() in TABLE_SUFFIXES]
    described: dict[str, list[str]] = {}
    files: list[ScannedFile] = []
    for table in tables:
        readers = [path for path in texts if _describes(path, texts[path] or "", table)]
        for reader in readers:
            described.setdefault(home.relative(reader), []).append(home.relative(table))
        found = _table(home, table, [texts[reader] or "" for reader in readers])
        about = " ".join(first_lines(texts[reader] or "") for reader in readers)
        files.append(found.model_copy(update={"about": about[:ABOUT_LIMIT]}))
    files += [
        document.model_copy(update={"describes": described.get(document.path, [])})
        for document in documents
    ]
    known = {item.path for item in files}
    files += [
        ScannedFile(path=home.relative(path), kind="other", title=path.name)
        for path in paths
        if home.relative(path) not in known
    ]
    guidelines = [
        Guideline(path=home.relative(path), text=(_text(home, path) or "")[:GUIDELINE_LIMIT])
        for path in sorted(_files(home.guidelines))
        if path.suffix.lower() in DOCUMENT_SUFFIXES and path.name != "mcp_list.md"
    ]
    return HomeScan(
        files=sorted(files, key=lambda item: item.path),
        guidelines=guidelines,
        search_provider=search_provider,
    )


def _files(folder: Path) -> Iterator[Path]:
    """The regular, readable, visible files under a folder (links leaving the home not followed)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for root, dirs, names in os.walk(folder):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in names:
            if not name.startswith("."):
                yield Path(root) / name


def _text(home: Home, path: Path) -> str | None:
    if why_unread(look(path, home.root)) is not None:
        return None
    text, _note = source_text(home.root, path)
    return text


def _table(home: Home, path: Path, descriptions: list[str]) -> ScannedFile:
    relative = home.relative(path)
    if why_unread(look(path, home.root)) is not None:
        return ScannedFile(path=relative, kind="other", title=path.name, note="not read")
    try:
        found = profile(
            path, root=home.root, descriptions=[d[:DESCRIPTION_LIMIT] for d in descriptions]
        )
    except Exception as error:  # a file that is no table: said in the scan, never a crash
        log.info("table_not_profiled", path=relative, error=str(error))
        return ScannedFile(path=relative, kind="other", title=path.name, note=str(error)[:200])
    return ScannedFile(path=relative, kind="table", title=path.name, profile=found)


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _title(text: str, path: Path) -> str:
    """A document's first heading, else its first non-empty line, else its name."""
    heading = _HEADING.search(text)
    line = heading.group(1) if heading else next((ln for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.strip().lstrip("#").split())
    return (line or path.name)[:TITLE_LIMIT]


def _describes(document: Path, text: str, table: Path) -> bool:
    """Whether a document describes a table: the same stem, one stem the other's start, or the
    document names the table's file."""
    doc_stem, table_stem = _stem(document), _stem(table)
    if doc_stem == table_stem or doc_stem.startswith(table_stem) or table_stem.startswith(doc_stem):
        return bool(doc_stem and table_stem)
    return table.name.lower() in text.lower()


def _stem(path: Path) -> str:
    return re.sub(r"[^0-9a-z가-힣]+", "", path.stem.lower())


_NOISE = re.compile(r"https?://\S+|<[^>]+>|`[^`]*`|^\s*\|.*$|^[\s|:-]+$|^\s*```.*$", re.MULTILINE)


def first_lines(text: str) -> str:
    """A text's first meaningful lines: headings and prose, without links, code or table rows
    (never altered otherwise), at most ABOUT_LIMIT characters."""
    kept: list[str] = []
    size = 0
    for line in _NOISE.sub(" ", text).splitlines():
        words = " ".join(line.strip().lstrip("#>*- ").split())
        if len(words) < 3:
            continue
        kept.append(words)
        size += len(words) + 1
        if size >= ABOUT_LIMIT:
            break
    return " ".join(kept)[:ABOUT_LIMIT]
