"""Reading references: files and folders inside the home turned into digests.

The I/O edge of extraction: decoding, size caps, and the choice of reader by file type.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from executor.builtin.digest import digest_note, digest_table, digest_text
from executor.builtin.evidence import Digest, is_builtin_document, merge, read_document
from executor.builtin.paths import relative, resolve_reference
from executor.builtin.tabular import describe_data, parse_csv
from multiverse.unread import look, open_regular, why_unread

MAX_BYTES = 2_000_000
MAX_FOLDER_FILES = 50


def decode(data: bytes) -> str | None:
    """Text from bytes (UTF-8, UTF-16 with a BOM, or Korean CP949), or None for binary data."""
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    for encoding in ("utf-8-sig", "utf-16", "cp949"):
        if encoding == "utf-16" and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            continue
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return None


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


def digest_content(source: str, suffix: str, text: str, stem: str) -> list[Digest]:
    """The digests of decoded content, chosen by the file's suffix."""
    if suffix in (".csv", ".tsv"):
        return [digest_table(source, parse_csv(text), stem)]
    if suffix in (".json", ".yaml", ".yml"):
        try:
            shape = describe_data(text, suffix != ".json")
        except (json.JSONDecodeError, yaml.YAMLError) as error:
            shape = f"not valid {suffix[1:].upper()}: {str(error).splitlines()[0]}"
        return [digest_note(source, "data", stem, f"{suffix[1:].upper()} {shape}")]
    if suffix in (".html", ".htm", ".svg"):
        note = "chart (HTML with an SVG image)" if "<svg" in text else "HTML document"
        return [digest_note(source, "markup", stem, note)]
    if is_builtin_document(text):
        return read_document(text)
    kind = "markdown" if suffix in (".md", ".markdown") else "text"
    return [digest_text(source, text, kind, stem)]
