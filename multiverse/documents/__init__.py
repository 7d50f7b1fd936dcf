"""Documents people have (PDF, Word, Excel, PowerPoint, HTML) read as markdown text and tables.

Both engines read references through here: the builtin digests a document's markdown like a
markdown file, the model executor pastes it into its prompt. Locations are headings (`## Page
3`, `## Slide 2: Costs`, `## Sheet: Sales`, a Word document's own headings) so that a fact can
be cited with the place it came from. Each reader imports its library on first use.

- `convert(path)`: the document as `Converted` (markdown, or a note saying why not); never raises.
- `sniff(path)`: whether a file is such a document, by its bytes and its name.
- `source_text(home, path)`: any readable file of the home as text, documents converted.
- `export_report(markdown_path, markdown, title, lang, charts)`: a published report written
  again as `.docx` (and `.pdf` where the installed fonts draw all of it) beside its markdown;
  never raises for a report it cannot export.
- `look(path, home)`, `why_unread`, `open_regular`: whether a file of the home may be read at
  all (a link leaving the home, a pipe, a device, a file that vanished) and opening it so.
"""

from __future__ import annotations

from multiverse.documents.convert import (
    MAX_TEXT_BYTES,
    NOTE_MARKER,
    Kind,
    Sighting,
    Unread,
    convert,
    document_note,
    is_note,
    is_unread,
    look,
    open_regular,
    sniff,
    source_text,
    why_unread,
)
from multiverse.documents.converted import Converted, decode, text_encoding
from multiverse.documents.export import Exported, ReportChart, export_report
from multiverse.documents.formats import html_document, html_to_markdown, markdown_to_html

__all__ = [
    "MAX_TEXT_BYTES",
    "NOTE_MARKER",
    "Converted",
    "Exported",
    "Kind",
    "ReportChart",
    "Sighting",
    "Unread",
    "convert",
    "decode",
    "document_note",
    "export_report",
    "html_document",
    "html_to_markdown",
    "is_note",
    "is_unread",
    "look",
    "markdown_to_html",
    "open_regular",
    "sniff",
    "source_text",
    "text_encoding",
    "why_unread",
]
