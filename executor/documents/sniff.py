"""Which reader a file needs, told by its suffix and its first bytes (pure decisions).

The bytes win over the name: a PDF is a PDF whatever it is called, and a zip holding
`word/document.xml` is a Word document even when renamed. A file whose bytes contradict its
suffix gets a note saying so instead of a reader's stack trace.
"""

from __future__ import annotations

from collections.abc import Collection

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
