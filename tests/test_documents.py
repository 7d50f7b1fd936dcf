"""Documents people have (PDF, Word, Excel, PowerPoint, HTML) converted to markdown with
location headings, and the ones that cannot be read named with why."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from app.team import build_collaborators
from multiverse.config import load_runtime_mapping
from multiverse.documents import convert, sniff
from multiverse.documents import formats as pdf_reader
from multiverse.documents import formats as xlsx_reader
from multiverse.home import Home
from orchestrator.perform import refresh_inputs

from makedocs import (
    DOCX_KOREAN,
    DOCX_SENTENCE,
    HTML_SENTENCE,
    PDF_PAGE_2,
    PPTX_SENTENCE,
    encrypt_pdf,
    write_blank_pdf,
    write_docx,
    write_html,
    write_pdf,
    write_pptx,
    write_xlsx,
)


def section(markdown: str, heading: str) -> str:
    """The text under `heading` up to the next heading of any level."""
    after = markdown.split(heading + "\n", 1)[1]
    return after.split("\n#", 1)[0]


def test_pdf_is_read_page_by_page(tmp_path: Path) -> None:
    """A PDF's text comes under `## Page N` headings; its metadata title leads."""
    converted = convert(write_pdf(tmp_path / "study.pdf"))
    assert converted.kind == "pdf" and converted.note == ""
    assert converted.title == "E-Bike Market Study" and converted.label == "PDF, 2 pages"
    markdown = converted.markdown or ""
    assert markdown.startswith("# E-Bike Market Study\n")
    assert "The market grew in every region" in section(markdown, "## Page 1")
    assert "2.1 million e-bikes in 2024" in section(markdown, "## Page 2")
    assert " ".join(section(markdown, "## Page 2").split()).startswith(PDF_PAGE_2)


def test_pdf_page_cap_is_stated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the page cap the note says exactly which pages were read."""
    monkeypatch.setattr(pdf_reader, "MAX_PAGES", 1)
    converted = convert(write_pdf(tmp_path / "study.pdf"))
    assert converted.note == "first 1 page of 2"
    markdown = converted.markdown or ""
    assert "## Page 1" in markdown and "## Page 2" not in markdown


def _styled_docx(path: Path) -> tuple[Path, list[str | None]]:
    """A document whose paragraphs use every kind of style reference: built-in and custom
    styles, the default, a character style's id and an unknown id; with the style python-docx's
    own `Paragraph.style` gives each paragraph."""
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    document.styles.add_style("Aside Note", WD_STYLE_TYPE.PARAGRAPH)
    document.styles.add_style("Shout", WD_STYLE_TYPE.CHARACTER)
    document.add_paragraph("The title", style="Title")
    document.add_heading("A part", 1)
    document.add_paragraph("Plain words.")
    document.add_paragraph("A point", style="List Bullet")
    document.add_paragraph("A number", style="List Number 2")
    document.add_table(rows=1, cols=1).cell(0, 0).text = "cell"
    document.add_paragraph("Beside the text.", style="Aside Note")
    for style_id in ("Shout", "NoSuchStyle", "Heading3"):
        paragraph = document.add_paragraph(f"Styled {style_id}")
        properties = paragraph._p.get_or_add_pPr()
        reference = OxmlElement("w:pStyle")
        reference.set(qn("w:val"), style_id)
        properties.insert(0, reference)
    document.save(str(path))
    return path, [p.style.name for p in docx.Document(str(path)).paragraphs if p.style]


def test_docx_styles_are_read_as_python_docx_names_them(tmp_path: Path) -> None:
    """Each paragraph's style is the one python-docx's `Paragraph.style` gives (read once per
    document, not looked up per paragraph): titles, headings, lists, custom, unknown ids."""
    path, names = _styled_docx(tmp_path / "styled.docx")
    assert names == ["Title", "Heading 1", "Normal", "List Bullet", "List Number 2", "Aside Note",
                     "Normal", "Normal", "Heading 3"]  # fmt: skip
    markdown = convert(path).markdown or ""
    assert markdown.startswith("# The title\n") and "\n# A part\n" in markdown
    assert "\n- A point\n" in markdown and "\n- A number\n" in markdown
    assert "\nBeside the text.\n" in markdown and "\nStyled Shout\n" in markdown
    assert "\nStyled NoSuchStyle\n" in markdown and "\n### Styled Heading3\n" in markdown


def test_docx_keeps_heading_levels_lists_and_tables(tmp_path: Path) -> None:
    """Word styles become markdown: Title and Heading 1 `#`, Heading 2 `##`, tables as pipes."""
    converted = convert(write_docx(tmp_path / "fleet.docx"))
    markdown = converted.markdown or ""
    assert converted.kind == "docx" and converted.title == "Fleet Review 2024"
    assert "# Fleet Review 2024\n" in markdown and "# Summary\n" in markdown
    assert DOCX_SENTENCE in section(markdown, "# Summary")
    assert "- Berlin and Hamburg led the growth." in markdown
    assert "| city | bikes |\n| --- | --- |\n| Berlin | 1,200 |\n| Hamburg | 800 |" in markdown
    assert DOCX_KOREAN in section(markdown, "## Korea")
    assert converted.label.startswith("Word document, ") and converted.label.endswith(" words")


def test_xlsx_sheets_are_tables_under_their_names(tmp_path: Path) -> None:
    """Each sheet comes under `## Sheet: name` as a pipe table of its values."""
    converted = convert(write_xlsx(tmp_path / "sales.xlsx"))
    markdown = converted.markdown or ""
    assert converted.kind == "xlsx" and converted.label == "Excel workbook, 2 sheets"
    sales = section(markdown, "## Sheet: Sales")
    assert "| region | units | revenue |" in sales and "| DE | 100 | 1000.5 |" in sales
    assert "| as of | 2024-12-31 |" in section(markdown, "## Sheet: Notes")
    assert converted.note == ""


def test_xlsx_row_cap_is_stated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sheet longer than the row cap is cut, and the note says which rows were kept."""
    monkeypatch.setattr(xlsx_reader, "MAX_ROWS", 10)
    converted = convert(write_xlsx(tmp_path / "sales.xlsx", rows=30))
    assert converted.note == "sheet Sales: first 10 rows of 31"
    sales = section(converted.markdown or "", "## Sheet: Sales")  # the header and 9 rows
    assert "| IT | 108 | 1008.5 |" in sales and "| DE | 109 |" not in sales


def test_pptx_slides_are_headings_with_their_titles(tmp_path: Path) -> None:
    """Each slide is `## Slide N: title`, with its bullets, tables and speaker notes."""
    converted = convert(write_pptx(tmp_path / "deck.pptx"))
    markdown = converted.markdown or ""
    assert converted.kind == "pptx" and converted.label == "PowerPoint deck, 2 slides"
    first = section(markdown, "## Slide 1: Rider growth")
    assert f"- {PPTX_SENTENCE}" in first and "Notes: Mention the Berlin pilot." in first
    second = section(markdown, "## Slide 2: Riders by city")
    assert "| city | riders |" in second and "| Berlin | 5,400 |" in second


def test_html_article_is_its_main_content(tmp_path: Path) -> None:
    """A saved page is its article as markdown, without navigation or footer."""
    converted = convert(write_html(tmp_path / "article.html"))
    markdown = converted.markdown or ""
    assert converted.kind == "html" and converted.title == "Cargo bikes take over city logistics"
    assert HTML_SENTENCE in markdown and "## Costs" in markdown
    assert "Weather" not in markdown and "All rights reserved" not in markdown


def test_a_document_is_known_by_its_bytes_not_only_its_name(tmp_path: Path) -> None:
    """A PDF or a Word file under another name is still read as what it is."""
    renamed = write_pdf(tmp_path / "study.pdf").rename(tmp_path / "study.bin")
    assert sniff(renamed) == "pdf"
    assert PDF_PAGE_2[:30] in (convert(renamed).markdown or "")
    word = write_docx(tmp_path / "fleet.docx").rename(tmp_path / "fleet.data")
    assert sniff(word) == "docx"
    (tmp_path / "notes.txt").write_text("plain text", "utf-8")
    assert sniff(tmp_path / "notes.txt") is None


def test_unreadable_documents_say_why(tmp_path: Path) -> None:
    """Damaged, encrypted, image-only and old binary files are notes, never exceptions."""
    corrupt = tmp_path / "broken.docx"
    corrupt.write_bytes(bytes(range(256)) * 40)
    assert convert(corrupt).markdown is None
    assert convert(corrupt).note.startswith("not a valid .docx (not a zip archive")

    truncated = tmp_path / "cut.xlsx"
    truncated.write_bytes(write_xlsx(tmp_path / "whole.xlsx").read_bytes()[:300])
    assert convert(truncated).note.startswith("not a valid .xlsx (corrupt zip")

    wrong_zip = tmp_path / "slides.pptx"
    with zipfile.ZipFile(wrong_zip, "w") as archive:
        archive.writestr("readme.txt", "not a deck")
    assert convert(wrong_zip).note == "not a valid .pptx (the archive has no ppt/presentation.xml)"

    blank = convert(write_blank_pdf(tmp_path / "scan.pdf"))
    assert blank.markdown is None
    assert blank.note == "PDF with no extractable text (scanned images?)"

    locked = encrypt_pdf(write_pdf(tmp_path / "plain.pdf"), tmp_path / "locked.pdf", "secret")
    assert convert(locked).note == "encrypted PDF (a password is needed to open it)"

    fake = tmp_path / "fake.pdf"
    fake.write_text("this is not a pdf", "utf-8")
    assert convert(fake).note.startswith("not a valid PDF (no %PDF header")

    legacy = tmp_path / "old.doc"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    assert convert(legacy).note == "old binary Office format (.doc): not read; save it as .docx"


def test_pdf_protected_without_password_is_read(tmp_path: Path) -> None:
    """An encrypted PDF whose user password is empty (copy or print protection) opens."""
    protected = encrypt_pdf(write_pdf(tmp_path / "plain.pdf"), tmp_path / "protected.pdf", "")
    converted = convert(protected)
    assert "2.1 million e-bikes" in (converted.markdown or "") and converted.note == ""


def _converted_in_a_child(path: Path) -> tuple[str, str, str]:
    """`convert` of a file in a child process: whether nothing was read ("True"), its note,
    and the child's peak memory in kB (VmHWM: since its exec; ru_maxrss would count the
    forked parent's pages too)."""
    import subprocess
    import sys

    script = (
        "import sys; from pathlib import Path\n"
        "from multiverse.documents import convert\n"
        "converted = convert(Path(sys.argv[1]))\n"
        "print(converted.markdown is None)\n"
        "print(converted.note)\n"
        "print(next(line.split()[1] for line in open('/proc/self/status')"
        " if line.startswith('VmHWM')))\n"
    )
    child = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    lines = child.stdout.strip().splitlines()
    assert len(lines) == 3, child.stdout + child.stderr
    return lines[0], lines[1], lines[2]


def _docx_bomb(path: Path, expanded: int) -> Path:
    """A valid .docx (python-docx made it) whose document.xml is replaced by `expanded` bytes
    of repeated paragraphs: a small file that expands a thousandfold."""
    source = write_docx(path.with_name("plain.docx"))
    paragraph = "<w:p><w:r><w:t>" + "lorem ipsum " * 40 + "</w:t></w:r></w:p>"
    head = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            "<w:body>")  # fmt: skip
    body = head + paragraph * (expanded // len(paragraph)) + "</w:body></w:document>"
    with zipfile.ZipFile(source) as plain, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in plain.infolist():
            data = body.encode() if info.filename == "word/document.xml" else plain.read(info)
            out.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_a_docx_that_expands_past_the_limit_is_not_read_and_memory_stays_bounded(
    tmp_path: Path,
) -> None:
    """A small .docx holding 120 MB of XML: "not read" with the reason, before any parsing
    (a child process converting it stays under 200 MB of memory); one under the limit is read."""
    bomb = _docx_bomb(tmp_path / "bomb.docx", 120_000_000)
    assert bomb.stat().st_size < 2_000_000
    unread, note, peak_kb = _converted_in_a_child(bomb)
    assert unread == "True", note
    assert re.search(r"expand to 12\d MB of XML", note) and "split it" in note, note
    assert int(peak_kb) < 200_000, peak_kb
    small = convert(_docx_bomb(tmp_path / "small.docx", 2_000_000))
    assert small.markdown is not None and "lorem ipsum" in small.markdown


def _pdf_bomb(path: Path, expanded: int) -> Path:
    """A one-page PDF, written by hand, whose content stream inflates to `expanded` bytes."""
    import zlib

    line = b"BT /F1 12 Tf 72 720 Td (" + b"A" * 200 + b") Tj ET\n"
    content = zlib.compress(line * (expanded // len(line)), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]  # fmt: skip
    data = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(data)
    data += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    data += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    data += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)  # fmt: skip
    path.write_bytes(bytes(data))
    return path


def test_a_pdf_whose_stream_inflates_past_the_limit_is_not_read_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """A PDF of about 1 MB whose page inflates to 330 MB: pypdf's own limit on a decompressed
    stream (75 MB) stops it; nothing is read, with a note, and a child converting it stays
    under 400 MB (reading that page's text whole would take gigabytes)."""
    bomb = _pdf_bomb(tmp_path / "bomb.pdf", 330_000_000)
    assert bomb.stat().st_size < 2_000_000
    unread, note, peak_kb = _converted_in_a_child(bomb)
    assert unread == "True" and note, note
    assert int(peak_kb) < 400_000, peak_kb


def test_a_docx_bomb_among_the_inputs_is_catalogued_not_read_once(home: Home) -> None:
    """The catalog notes the bomb as not read, with the reason; the next start does not read
    it again (its content hash is known), while an edit of it is looked at anew."""
    _docx_bomb(home.assets / "bomb.docx", 120_000_000)
    (home.assets / "plain.docx").unlink()  # the helper's source document
    crew = build_collaborators(home, load_runtime_mapping(home.root), {}, console=lambda t: None)
    assert refresh_inputs(crew) == 2  # the bomb and guidelines/mcp_list.md
    row = {row.file_path: row for row in crew.catalog.rows()}["assets/bomb.docx"]
    assert re.search(r"expand to 12\d MB of XML", row.summary), row.summary

    again = build_collaborators(home, load_runtime_mapping(home.root), {}, console=lambda t: None)
    assert refresh_inputs(again) == 0  # a new daemon's first look: nothing read again

    _docx_bomb(home.assets / "bomb.docx", 130_000_000)
    (home.assets / "plain.docx").unlink()
    assert refresh_inputs(again) == 1
    row = {row.file_path: row for row in again.catalog.rows()}["assets/bomb.docx"]
    assert re.search(r"expand to 13\d MB of XML", row.summary), row.summary
