"""Documents people have (PDF, Word, Excel, PowerPoint, HTML) read as markdown text and tables.

Both engines read references through here: the builtin digests a document's markdown like a
markdown file, the model executor pastes it into its prompt. Locations are headings (`## Page
3`, `## Slide 2: Costs`, `## Sheet: Sales`, a Word document's own headings) so that a fact can
be cited with the place it came from. Each reader imports its library on first use.

- `convert(path)`: the document as `Converted` (markdown, or a note saying why not); never raises.
- `sniff(path)`: whether a file is such a document, by its bytes and its name.
- `source_text(home, path)`: any readable file of the home as text, documents converted.
"""

from __future__ import annotations

from multiverse.documents.convert import MAX_TEXT_BYTES, convert, document_note, sniff, source_text
from multiverse.documents.converted import Converted, decode, text_encoding
from multiverse.documents.formats import html_document, html_to_markdown

__all__ = [
    "MAX_TEXT_BYTES",
    "Converted",
    "convert",
    "decode",
    "document_note",
    "html_document",
    "html_to_markdown",
    "sniff",
    "source_text",
    "text_encoding",
]
