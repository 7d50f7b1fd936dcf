"""A report's markdown as a Word document: headings, paragraphs, bold and italic, lists, tables as
Word tables, links as their text and address, code in a monospaced font, charts as pictures (or
their values) with their captions, and the report's language set on the document.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from docx import Document as new_document
from docx.document import Document as WordDocument
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Inches
from docx.text.paragraph import Paragraph
from mistletoe import block_token, span_token
from mistletoe.block_token import Document
from mistletoe.html_renderer import HtmlRenderer

from multiverse.store import MISTLETOE_LOCK

MONO = "Courier New"
PICTURE_WIDTH = Inches(6)
EAST_ASIAN = ("ko", "ja", "zh")
MAX_LIST_LEVEL = 3  # Word's default template has "List Bullet" to "List Bullet 3"

# A chart as a document shows it: (file name) -> (PNG or None, caption, rows of values).
Picture = tuple[bytes | None, str, list[list[str]]]


def parse(markdown: str) -> Any:
    """The markdown's token tree, parsed as the HTML page parses it (raw HTML kept as text)."""
    with MISTLETOE_LOCK:  # mistletoe's token lists are module state shared with the table reader
        block_token.reset_tokens()  # type: ignore[no-untyped-call]
        span_token.reset_tokens()  # type: ignore[no-untyped-call]
        with HtmlRenderer(process_html_tokens=False):  # type: ignore[no-untyped-call]
            return Document(markdown)


def _set_language(document: WordDocument, lang: str, title: str) -> None:
    document.core_properties.language = lang
    document.core_properties.title = title
    defaults = document.styles.element.find(qn("w:docDefaults"))
    run_properties = defaults.find(qn("w:rPrDefault")).find(qn("w:rPr"))
    language = run_properties.find(qn("w:lang"))
    if language is None:
        language = OxmlElement("w:lang")
        run_properties.append(language)
    language.set(qn("w:val"), lang)
    if lang.split("-")[0] in EAST_ASIAN:
        language.set(qn("w:eastAsia"), lang)


def _spans(paragraph: Paragraph, tokens: Iterable[Any], bold: bool = False,
           italic: bool = False, strike: bool = False) -> None:  # fmt: skip
    for token in tokens:
        kind = type(token).__name__
        if kind in ("Strong", "Emphasis", "Strikethrough"):
            _spans(paragraph, token.children, bold or kind == "Strong",
                   italic or kind == "Emphasis", strike or kind == "Strikethrough")  # fmt: skip
            continue
        if kind == "LineBreak":
            run = paragraph.add_run(" " if token.soft else "")
            if not token.soft:
                run.add_break()
            continue
        text, mono = _text_of(token)
        run = paragraph.add_run(text)
        run.bold, run.italic, run.font.strike = bold or None, italic or None, strike or None
        if mono:
            run.font.name = MONO


def _text_of(token: Any) -> tuple[str, bool]:
    kind = type(token).__name__
    if kind == "InlineCode":
        return token.children[0].content, True
    if kind in ("Link", "AutoLink"):
        text = plain(token.children)
        return (text if text == token.target else f"{text} ({token.target})"), False
    if kind == "Image":
        return f"[{plain(token.children)}] ({token.src})", False
    if hasattr(token, "children") and token.children is not None:
        return plain(token.children), False
    return str(getattr(token, "content", "")), False


def plain(tokens: Iterable[Any]) -> str:
    """The text of span tokens, without their markup."""
    return "".join(_text_of(token)[0] if type(token).__name__ != "LineBreak" else " "
                   for token in tokens)  # fmt: skip


class _Writer:
    """One document being written from one token tree."""

    def __init__(self, document: WordDocument, picture: Callable[[str], Picture | None]) -> None:
        self.document = document
        self.picture = picture

    def blocks(self, tokens: Iterable[Any], quote: bool = False) -> None:
        for token in tokens:
            self.block(token, quote)

    def block(self, token: Any, quote: bool) -> None:
        kind = type(token).__name__
        if kind in ("Heading", "SetextHeading"):
            self.paragraph(token.children, f"Heading {min(token.level, 9)}")
        elif kind == "Paragraph":
            if not self.chart(token):
                self.paragraph(token.children, "Quote" if quote else None)
        elif kind == "Quote":
            self.blocks(token.children, quote=True)
        elif kind == "List":
            self.items(token, 1)
        elif kind == "Table":
            self.table(token)
        elif kind in ("CodeFence", "BlockCode"):
            paragraph = self.document.add_paragraph()
            lines = token.children[0].content.rstrip("\n").split("\n") if token.children else []
            for number, line in enumerate(lines):
                run = paragraph.add_run(line)
                run.font.name = MONO
                if number < len(lines) - 1:
                    run.add_break()
        elif kind == "ThematicBreak":
            self.document.add_paragraph()

    def paragraph(self, spans: Iterable[Any], style: str | None) -> Paragraph:
        paragraph = self.document.add_paragraph(style=style)
        _spans(paragraph, spans)
        return paragraph

    def items(self, token: Any, level: int) -> None:
        base = "List Bullet" if token.start is None else "List Number"
        style = base if level == 1 else f"{base} {min(level, MAX_LIST_LEVEL)}"
        for item in token.children:
            first = True
            for child in item.children:
                if type(child).__name__ == "List":
                    self.items(child, level + 1)
                elif type(child).__name__ == "Paragraph" and first:
                    self.paragraph(child.children, style)
                else:
                    self.block(child, False)
                first = False

    def table(self, token: Any) -> None:
        rows = (
            [token.header, *token.children] if getattr(token, "header", None) else [*token.children]
        )
        width = max((len(row.children) for row in rows), default=0)
        if not width:
            return
        table = self.document.add_table(rows=len(rows), cols=width)
        table.style = "Table Grid"
        for row, source in zip(table.rows, rows, strict=True):
            for cell, content in zip(row.cells, source.children, strict=False):
                _spans(cell.paragraphs[0], content.children, bold=source is token.header)
        self.document.add_paragraph()

    def chart(self, token: Any) -> bool:
        spans = [t for t in token.children if type(t).__name__ != "LineBreak"]
        if len(spans) != 1 or type(spans[0]).__name__ != "Image":
            return False
        shown = self.picture(spans[0].src)
        if shown is None:
            return False
        png, caption, rows = shown
        if png is not None:
            self.document.add_picture(io.BytesIO(png), width=PICTURE_WIDTH)
        self.document.add_paragraph(caption, style="Caption")
        if png is None and rows:
            self.values(rows)
        return True

    def values(self, rows: list[list[str]]) -> None:
        table = self.document.add_table(rows=len(rows), cols=len(rows[0]))
        table.style = "Table Grid"
        for number, (row, values) in enumerate(zip(table.rows, rows, strict=True)):
            for cell, value in zip(row.cells, values, strict=False):
                cell.paragraphs[0].add_run(value).bold = number == 0 or None
        self.document.add_paragraph()


def report_docx(markdown: str, title: str, lang: str,
                picture: Callable[[str], Picture | None]) -> bytes:  # fmt: skip
    """The report as .docx bytes; `picture(target)` says how to show an image line's chart
    (None: the image is not one of the report's charts, and stays as its text)."""
    tree = parse(markdown)
    document = new_document()
    _set_language(document, lang, title)
    _Writer(document, picture).blocks(tree.children)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
