"""A report's markdown as a PDF, through fpdf2 (pure Python, no browser): its HTML written with
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
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import structlog

from multiverse.documents.docx_writer import Picture

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


def report_pdf(markdown: str, title: str, lang: str, fonts: Fonts,
               picture: Callable[[str], Picture | None]) -> bytes:  # fmt: skip
    """The report as PDF bytes, written with `fonts` (see `choose_fonts`)."""
    from fpdf import FPDF, FontFace, TextStyle

    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_lang(lang)
    for style in ("", "B", "I", "BI"):
        pdf.add_font("report", style, fonts.main.get(style, fonts.main[""]))
    for number, path in enumerate(fonts.fallbacks):
        pdf.add_font(f"fallback{number}", "", path)
    if fonts.mono:
        pdf.add_font("mono", "", fonts.mono)
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
