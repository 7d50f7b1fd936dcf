"""What a document converter returns: the document as markdown, or why it could not be read."""

from __future__ import annotations

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
