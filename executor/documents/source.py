"""`source_text`: any readable file of the home as text, for splitting into cited passages."""

from __future__ import annotations

import os
from pathlib import Path

from executor.documents.converted import Converted
from executor.documents.decoding import decode, decode_cut
from executor.documents.dispatch import convert, sniff
from multiverse.unread import look, open_regular, why_unread

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

