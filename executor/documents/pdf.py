"""PDF: the text of each page under a `## Page N` heading, read with pypdf."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, BinaryIO

from executor.documents.converted import Converted, plural, unreadable
from executor.documents.markdown import heading, plain_line

if TYPE_CHECKING:
    from pypdf import PageObject, PdfReader

# pypdf extracts some 20-100 pages a second: 300 pages keep a catalog step within seconds and
# hold more text than a digest or a model prompt ever uses.
MAX_PAGES = 300
_WORD_PREFIX = "Microsoft Word - "  # the title Word's PDF printer gives every file
# pypdf reports a damaged file's repairs ("EOF marker not found") as warnings on its logger;
# the note of the conversion says what matters, the console should not repeat pypdf's asides.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def read_pdf(handle: BinaryIO) -> Converted:
    """A PDF's text, page by page; encrypted or image-only PDFs get a note saying so."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(handle)
        locked = _unlock(reader)
        if locked:
            return unreadable("pdf", locked)
        total = len(reader.pages)
        texts = [_page_text(reader.pages[index]) for index in range(min(total, MAX_PAGES))]
        title = _title(reader)
    except PdfReadError as error:
        return unreadable("pdf", f"not a valid PDF ({error})")
    return _converted(texts, total, title)


def _unlock(reader: PdfReader) -> str:
    """Why an encrypted PDF stays closed ("" once open): most open with the empty password."""
    from pypdf.errors import DependencyError, PdfReadError

    if not reader.is_encrypted:
        return ""
    try:
        opened = reader.decrypt("")
    # pypdf raises NotImplementedError for an encryption algorithm it does not implement.
    except (DependencyError, PdfReadError, NotImplementedError) as error:
        return f"encrypted PDF (its encryption cannot be undone here: {error})"
    return "" if opened else "encrypted PDF (a password is needed to open it)"


def _page_text(page: PageObject) -> str | None:
    """The page's text ("" when it has none), or None when extracting it failed."""
    try:
        text = page.extract_text()
    except Exception:  # a damaged content stream is the file's fault: that page is skipped
        return None
    lines = [plain_line(line) for line in text.splitlines()]
    return "\n".join(lines).strip()


def _title(reader: PdfReader) -> str:
    metadata = reader.metadata
    title = str(metadata.title or "").strip() if metadata is not None else ""
    return title.removeprefix(_WORD_PREFIX).strip()


def _converted(texts: list[str | None], total: int, title: str) -> Converted:
    extent = plural(total, "page")
    blocks = [heading(1, title)] if title else []
    blocks += [f"{heading(2, f'Page {n}')}\n\n{text}" for n, text in enumerate(texts, 1) if text]
    notes = []
    if total > len(texts):
        notes.append(f"first {plural(len(texts), 'page')} of {total:,}")
    failed = sum(1 for text in texts if text is None)
    if failed:
        notes.append(f"the text of {plural(failed, 'page')} could not be extracted")
    empty = sum(1 for text in texts if text == "")
    if not any(texts):
        why = "PDF with no extractable text (scanned images?)" if not failed else notes[-1]
        return unreadable("pdf", why, extent)
    if empty:
        notes.append(f"{empty:,} of {plural(len(texts), 'page')} have no text (images?)")
    markdown = "\n\n".join(blocks) + "\n"
    return Converted("pdf", markdown, note="; ".join(notes), title=title, extent=extent)
