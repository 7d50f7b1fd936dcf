#!/usr/bin/env python3
"""Build .docx and .pdf copies of some table descriptions (tables/<name>.md) into a folder."""
from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
# (description, format): the documents the tests can put into assets/ beside the tables
DOCUMENTS: list[tuple[str, str]] = [
    ("grunfeld", "docx"),
    ("grunfeld", "pdf"),
    ("statecrime", "docx"),
    ("us_marriages_divorces", "pdf"),
]
FONT_DIRS = (
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/dejavu"),
    Path("/usr/local/share/fonts"),
)


def blocks(text: str) -> list[tuple[int, str]]:
    """Split markdown into (heading level or 0, text) blocks separated by blank lines."""
    result: list[tuple[int, str]] = []
    for chunk in text.replace("\r\n", "\n").split("\n\n"):
        chunk = chunk.strip("\n")
        if not chunk.strip():
            continue
        first = chunk.split("\n", 1)[0]
        level = len(first) - len(first.lstrip("#"))
        if 0 < level <= 6 and first[level:level + 1] == " ":
            result.append((level, first[level + 1:].strip()))
            rest = chunk.split("\n", 1)[1:] if "\n" in chunk else []
            result += [(0, r) for r in rest if r.strip()]
        else:
            result.append((0, chunk))
    return result


def build_docx(source: Path, target: Path) -> Path:
    """Write source's markdown text as a Word document."""
    from docx import Document

    document = Document()
    for level, text in blocks(source.read_text(encoding="utf-8")):
        if level:
            document.add_heading(text, level=min(level, 4))
        else:
            paragraph = document.add_paragraph()
            for i, line in enumerate(text.split("\n")):
                if i:
                    paragraph.add_run().add_break()
                paragraph.add_run(line)
    path = target / f"{source.stem}.docx"
    document.save(str(path))
    return path


def unicode_font() -> Path | None:
    """Return the DejaVuSans TTF of the system, if there is one."""
    for folder in FONT_DIRS:
        if (folder / "DejaVuSans.ttf").is_file():
            return folder / "DejaVuSans.ttf"
    return None


def ascii_text(text: str) -> str:
    """Fold text to ASCII for the built-in PDF fonts (dashes and quotes become ASCII ones)."""
    table = {"\u2013": "-", "\u2014": "-", "\u2018": "'", "\u2019": "'",
             "\u201c": '"', "\u201d": '"'}
    folded = "".join(table.get(ch, ch) for ch in text)
    return unicodedata.normalize("NFKD", folded).encode("ascii", "ignore").decode("ascii")


def build_pdf(source: Path, target: Path) -> Path:
    """Write source's markdown text as a PDF."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    font = unicode_font()
    family = "Helvetica"
    if font:
        pdf.add_font("DejaVu", "", str(font))
        family = "DejaVu"
    for level, text in blocks(source.read_text(encoding="utf-8")):
        text = text if font else ascii_text(text)
        pdf.set_font(family, size={1: 16, 2: 13, 3: 12}.get(level, 10))
        pdf.multi_cell(0, 6 if level == 0 else 8, text, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
    path = target / f"{source.stem}.pdf"
    pdf.output(str(path))
    return path


def build(target_dir: Path) -> list[Path]:
    """Build every document of DOCUMENTS into target_dir and return their paths."""
    target_dir = Path(target_dir)
    target_dir.mkdir(parents=True, exist_ok=True)
    builders = {"docx": build_docx, "pdf": build_pdf}
    return [builders[fmt](HERE / "tables" / f"{name}.md", target_dir) for name, fmt in DOCUMENTS]


def main(argv: list[str]) -> int:
    """Build the documents into the folder given on the command line."""
    if len(argv) != 1:
        print("usage: make_documents.py TARGET_DIR", file=sys.stderr)
        return 2
    for path in build(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
