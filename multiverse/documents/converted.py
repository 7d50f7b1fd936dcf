"""What a document converter returns (the document as markdown, or why it could not be read), and
bytes to text: UTF-8, UTF-16 with a byte-order mark, or Korean CP949; None for binary data.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

KIND_NAMES = {
    "pdf": "PDF",
    "docx": "Word document",
    "xlsx": "Excel workbook",
    "pptx": "PowerPoint deck",
    "html": "HTML page",
    "doc": "Word 97-2003 document",
    "xls": "Excel 97-2003 workbook",
    "ppt": "PowerPoint 97-2003 deck",
}


@dataclass(frozen=True)
class Converted:
    """A document read as markdown (`None` when nothing could be read).

    Locations are headings: `## Page N` (PDF), `## Slide N: title` (PPTX), `## Sheet: name`
    (XLSX); a Word document keeps its own heading levels. `note` says why nothing could be read,
    or which part the markdown covers when a cap cut it ("first 200 pages of 350").
    """

    kind: str
    markdown: str | None
    note: str = ""
    title: str = ""  # the document's own title (metadata, title style, first slide), if any
    extent: str = ""  # its size as a person counts it: "3 pages", "2 sheets", "12 slides"

    @property
    def label(self) -> str:
        """The kind and extent as a person reads them: "PDF, 3 pages"."""
        name = KIND_NAMES.get(self.kind, self.kind.upper())
        return f"{name}, {self.extent}" if self.extent else name


def unreadable(kind: str, note: str, extent: str = "") -> Converted:
    """A document of which nothing could be read, and why."""
    return Converted(kind=kind, markdown=None, note=note, extent=extent)


def plural(count: int, noun: str) -> str:
    """`1 page`, `3 pages`, `1,200 rows`."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192] and not head.startswith(_BOMS)


def decode(data: bytes) -> str | None:
    """Text from bytes (UTF-8, UTF-16 with a BOM, or Korean CP949), or None for binary data."""
    if _looks_binary(data):
        return None
    for encoding in ("utf-8-sig", "utf-16", "cp949"):
        if encoding == "utf-16" and not data.startswith(_BOMS):
            continue
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return None


def decode_cut(data: bytes) -> str | None:
    """`decode` of bytes cut at a cap: the cut may have split the last character."""
    for trim in range(4):
        text = decode(data[: len(data) - trim])
        if text is not None:
            return text
    return None


def text_encoding(head: bytes) -> str | None:
    """The encoding `decode` would choose for a file that starts with `head`, for streaming it.

    `head` may end inside a character (a chunk of a larger file): an incomplete last character
    does not count against an encoding. None when the bytes are binary.
    """
    if _looks_binary(head):
        return None
    if head.startswith(_BOMS):
        return "utf-16"
    for encoding in ("utf-8-sig", "cp949"):
        try:
            codecs.getincrementaldecoder(encoding)().decode(head, final=False)
        except UnicodeDecodeError:
            continue
        return encoding
    return None
