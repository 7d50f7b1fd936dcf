"""Bounded text reading: a window of lines under a byte cap, binary files recognised."""

from __future__ import annotations

import codecs
import io
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BINARY_SAMPLE_BYTES = 8192
_SKIP_CHUNK = 1 << 16


@dataclass(frozen=True)
class TextWindow:
    """Lines `first_line`.. of a text file, and whether more follow."""

    text: str
    first_line: int
    line_count: int
    more: bool
    lossy: bool


def looks_binary(sample: bytes) -> bool:
    """Whether a file's first bytes mark it as binary (a NUL byte, as git and grep judge)."""
    return b"\x00" in sample


def is_binary_file(path: Path) -> bool:
    """Whether the file at `path` is binary."""
    with path.open("rb") as handle:
        return looks_binary(handle.read(BINARY_SAMPLE_BYTES))


def decode(data: bytes, *, cut: bool) -> tuple[str, bool]:
    """UTF-8 text of `data` and whether bytes had to be replaced.

    When `cut`, a character split by the cut at the end is dropped instead of replaced.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        return decoder.decode(data, final=not cut), False
    except UnicodeDecodeError:
        lossy = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return lossy.decode(data, final=not cut), True


def _skip_lines(handle: BinaryIO, count: int) -> None:
    skipped = 0
    while skipped < count:
        # Bounded reads: one enormous line must not be loaded whole just to be skipped.
        chunk = handle.readline(_SKIP_CHUNK)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            skipped += 1


def read_window(path: Path, offset: int, limit: int | None, max_bytes: int) -> TextWindow:
    """Read up to `limit` lines from line `offset` (0-based), at most `max_bytes` bytes."""
    with path.open("rb") as handle:
        return _window(handle, offset, limit, max_bytes)


def text_window(text: str, offset: int, limit: int | None, max_bytes: int) -> TextWindow:
    """`read_window` over a text already in memory (a document converted to markdown)."""
    return _window(io.BytesIO(text.encode("utf-8")), offset, limit, max_bytes)


def _window(handle: BinaryIO, offset: int, limit: int | None, max_bytes: int) -> TextWindow:
    lines: list[bytes] = []
    used = 0
    more = False
    cut = False
    _skip_lines(handle, offset)
    while limit is None or len(lines) < limit:
        line = handle.readline(max_bytes - used + 1)
        if not line:
            break
        if used + len(line) > max_bytes:
            more = True
            if not lines:
                # A single line longer than the cap: show its beginning.
                lines.append(line[:max_bytes])
                cut = True
            break
        lines.append(line)
        used += len(line)
    else:
        more = handle.read(1) != b""
    text, lossy = decode(b"".join(lines), cut=cut)
    return TextWindow(text, offset + 1, len(lines), more, lossy)
