"""A report's markdown as a Word document: headings, paragraphs, bold and italic, lists, tables as
Word tables, links as their text and address, code in a monospaced font, charts as pictures (or
their values) with their captions, and the report's language set on the document.

A report's markdown as a PDF, through fpdf2 (pure Python, no browser): its HTML written with
installed TrueType fonts, charts as pictures (or their values) with their captions.

Written only when it can be faithful: every character has a glyph in an installed font, and no
script needs shaping or right-to-left layout, which fpdf2 does only with an optional library.

Also here: the fonts installed on this machine and which of them can draw a text (a chart
picture is drawn only where they can, too). Fonts are read once per process (their family,
style and character map, through fontTools).
"""

from __future__ import annotations

import html
import io
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import structlog
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


log = structlog.get_logger(__name__)

MAX_FONT_FILES = 400  # a desktop with thousands of fonts is read no further
REGULAR = frozenset({"regular", "book", "normal", "roman"})
STYLES = {"bold": "B", "italic": "I", "oblique": "I", "bold italic": "BI", "bold oblique": "BI"}
# Families a report reads best in, first; any other family covering the text comes after.
PREFERRED = ("DejaVu Sans", "Noto Sans", "Liberation Sans", "Arial", "Nanum Gothic")
_ODD = ("mono", "condensed", "light", "math", "symbol", "emoji", "serif")


@dataclass(frozen=True)
class Face:
    """One font file: its family, its style ("" regular, "B", "I", "BI") and its characters."""

    path: Path
    family: str
    style: str
    chars: frozenset[int]


def font_folders() -> list[Path]:
    """Where fonts are installed, on Linux, macOS and Windows."""
    home = Path.home()
    folders = [Path("/usr/share/fonts"), Path("/usr/local/share/fonts"),
               home / ".local/share/fonts", home / ".fonts"]  # fmt: skip
    if sys.platform == "darwin":
        folders += [Path("/System/Library/Fonts"), Path("/Library/Fonts"), home / "Library/Fonts"]
    if sys.platform.startswith("win"):
        folders.append(Path(os.environ.get("WINDIR", "C:\\Windows")) / "Fonts")
    return [folder for folder in folders if folder.is_dir()]


def _face(path: Path) -> Face | None:
    from fontTools.ttLib import TTFont, TTLibError

    try:
        with TTFont(path, lazy=True) as font:
            names = font["name"]
            family = str(names.getDebugName(1) or "")
            subfamily = str(names.getDebugName(2) or "").casefold()
            cmap = font.getBestCmap() or {}
    except (TTLibError, OSError, KeyError, ValueError, AssertionError) as error:
        log.debug("font_unreadable", path=str(path), error=str(error))
        return None
    style = "" if subfamily in REGULAR else STYLES.get(subfamily)
    if not family or style is None:
        return None
    return Face(path=path, family=family, style=style, chars=frozenset(cmap))


@cache
def installed_faces() -> tuple[Face, ...]:
    """Every TrueType font installed here that can be embedded (read once per process)."""
    files: list[Path] = []
    for folder in font_folders():
        files += sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".ttf")
    faces = [_face(path) for path in files[:MAX_FONT_FILES]]
    return tuple(face for face in faces if face is not None)


def needed(text: str) -> frozenset[int]:
    """The characters of a text that need a glyph (not spaces, not control characters)."""
    return frozenset(
        ord(char) for char in set(text)
        if not char.isspace() and unicodedata.category(char)[0] not in "CZ"
    )  # fmt: skip


def needs_shaping(text: str) -> str | None:
    """A character of a script that must be shaped or written right to left, else None."""
    for char in text:
        marks = unicodedata.category(char) in ("Mn", "Mc") and ord(char) >= 0x590
        if marks or unicodedata.bidirectional(char) in ("R", "AL"):
            return char
    return None


def _rank(family: str) -> tuple[int, int, str]:
    preferred = PREFERRED.index(family) if family in PREFERRED else len(PREFERRED)
    return preferred, sum(word in family.casefold() for word in _ODD), family


@dataclass(frozen=True)
class Cover:
    """The families that draw a text: the main one's faces by style, the fallbacks' regular
    faces, and the characters none of them has."""

    main: dict[str, Path]
    fallbacks: list[Path]
    missing: frozenset[int]


def cover(chars: frozenset[int], faces: tuple[Face, ...]) -> Cover:
    """The family that draws most of `chars` (the preferred one on a tie), then the fewest other
    families for the rest."""
    families: dict[str, dict[str, Face]] = {}
    for face in faces:
        families.setdefault(face.family, {}).setdefault(face.style, face)
    regular = {name: styles[""] for name, styles in families.items() if "" in styles}
    if not regular:
        return Cover(main={}, fallbacks=[], missing=chars)
    best = min(regular, key=lambda name: (-len(chars & regular[name].chars), _rank(name)))
    main = {style: face.path for style, face in families[best].items()}
    left = chars - regular[best].chars
    fallbacks: list[Path] = []
    while left:
        name = min(regular, key=lambda name: (-len(left & regular[name].chars), _rank(name)))
        if not left & regular[name].chars:
            break
        fallbacks.append(regular[name].path)
        left -= regular[name].chars
    return Cover(main=main, fallbacks=fallbacks, missing=left)


def mono_face(faces: tuple[Face, ...]) -> Path | None:
    """A regular monospaced font for code, or None."""
    monos = [face for face in faces if face.style == "" and "mono" in face.family.casefold()]
    return min(monos, key=lambda face: _rank(face.family)).path if monos else None


def describe(chars: frozenset[int], limit: int = 5) -> str:
    """Some characters as people read them: `한 (U+D55C)`."""
    shown = sorted(chars)[:limit]
    more = f" and {len(chars) - limit} more" if len(chars) > limit else ""
    return ", ".join(f"{chr(code)} (U+{code:04X})" for code in shown) + more


IMAGE_LINE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\((?P<target>[^)]+)\)$", re.MULTILINE)
PICTURE_WIDTH_MM = 170
PRE_MARGIN_MM = 4.2  # above a code block, as fpdf2 sets it
_EMPTY_CELL = re.compile(r"<(t[dh])([^>]*)></t[dh]>")


class NotFaithful(Exception):
    """The PDF would not show the report as written (a missing glyph, an unshaped script)."""


@dataclass(frozen=True)
class Fonts:
    """The font files a PDF is written with: the main family by style, fallbacks, code."""

    main: dict[str, str]
    fallbacks: list[str]
    mono: str | None


def choose_fonts(text: str) -> Fonts:
    """The installed fonts that draw every character of `text`; raises NotFaithful if none do."""
    char = needs_shaping(text)
    if char is not None:
        raise NotFaithful(f"{describe(frozenset({ord(char)}))} needs text shaping or "
                          "right-to-left layout, which fpdf2 does only with uharfbuzz")  # fmt: skip
    faces = installed_faces()
    found = cover(needed(text), faces)
    if not found.main:
        raise NotFaithful("no TrueType font is installed")
    if found.missing:
        raise NotFaithful(f"no installed font has {describe(found.missing)}")
    mono = mono_face(faces)
    return Fonts(main={style: str(path) for style, path in found.main.items()},
                 fallbacks=[str(path) for path in found.fallbacks],
                 mono=str(mono) if mono else None)  # fmt: skip


def html_of(markdown: str) -> str:
    """Markdown as HTML for fpdf2; raw HTML in it is shown as text, never interpreted."""
    from multiverse.documents.formats import markdown_to_html

    # fpdf2 draws a table only with text in every cell.
    return _EMPTY_CELL.sub(r"<\1\2>&#160;</\1>", markdown_to_html(markdown))


def _values_html(rows: list[list[str]]) -> str:
    def row(cells: list[str], tag: str) -> str:
        inner = "".join(f"<{tag}>{html.escape(c) or '&#160;'}</{tag}>" for c in cells)
        return f"<tr>{inner}</tr>"

    return f"<table>{row(rows[0], 'th')}{''.join(row(r, 'td') for r in rows[1:])}</table>"


def _pdf_with_faces(faces: dict[tuple[str, str], str]) -> Any:
    """An FPDF document that reads each face of `faces` (family and style, "", "B", "I" or
    "BI", to its font file) only when the text first selects it.

    Reading a face costs ~40 ms and an unused one is embedded all the same: a report without
    italics or code needs neither. fpdf2 selects every face through `set_font`, its own
    fragments' too, before it draws with it.
    """
    from fpdf import FPDF
    from fpdf.enums import TextEmphasis

    class FacesOnUse(FPDF):
        def set_font(self, family: str | None = None, style: str | TextEmphasis = "",
                     size: float = 0) -> None:  # fmt: skip
            letters = style.style if isinstance(style, TextEmphasis) else style
            face = ((family or self.font_family).lower(),
                    "".join(sorted(set(letters.upper()) & {"B", "I"})))  # fmt: skip
            path = faces.pop(face, None)
            if path is not None:
                self.add_font(*face, path)
            super().set_font(family, style, size)

    return FacesOnUse()


def report_pdf(markdown: str, title: str, lang: str, fonts: Fonts,
               picture: Callable[[str], Picture | None]) -> bytes:  # fmt: skip
    """The report as PDF bytes, written with `fonts` (see `choose_fonts`)."""
    from fpdf import FontFace, TextStyle

    faces = {("report", style): fonts.main.get(style, fonts.main[""])
             for style in ("", "B", "I", "BI")}  # fmt: skip
    if fonts.mono:
        faces["mono", ""] = fonts.mono
    pdf = _pdf_with_faces(faces)
    pdf.set_title(title)
    pdf.set_lang(lang)
    for number, path in enumerate(fonts.fallbacks):
        pdf.add_font(f"fallback{number}", "", path)
    pdf.set_fallback_fonts([f"fallback{n}" for n in range(len(fonts.fallbacks))],
                           exact_match=False)  # fmt: skip
    pdf.add_page()
    pdf.set_font("report", size=11)

    code = "mono" if fonts.mono else "report"
    pre = TextStyle(font_family=code, t_margin=PRE_MARGIN_MM)
    styles: dict[str, FontFace] = {"code": FontFace(family=code), "pre": pre}

    def write(part: str) -> None:
        if part.strip():
            pdf.write_html(html_of(part), font_family="report", tag_styles=styles)

    start = 0
    for match in IMAGE_LINE.finditer(markdown):
        shown = picture(match["target"])
        if shown is None:
            continue
        write(markdown[start : match.start()])
        png, caption, rows = shown
        if png is not None:
            pdf.image(io.BytesIO(png), w=PICTURE_WIDTH_MM)
        pdf.write_html(f"<p><i>{html.escape(caption)}</i></p>", font_family="report")
        if png is None and rows:
            pdf.write_html(_values_html(rows), font_family="report")
        start = match.end()
    write(markdown[start:])
    return bytes(pdf.output())
