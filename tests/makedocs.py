"""Real documents written at test time with the libraries that make them (no checked-in binaries).

Each writer puts one recognisable sentence or figure where a test can look for it.
"""

from __future__ import annotations

import datetime
from pathlib import Path

PDF_PAGE_2 = "Germany remains the largest market with sales of 2.1 million e-bikes in 2024."
DOCX_SENTENCE = "The fleet grew by 12% in 2024 while maintenance costs fell sharply."
DOCX_KOREAN = "국내 전기자전거 시장은 2024년에 1,200억 원 규모로 성장했다."
PPTX_SENTENCE = "Subscriptions drove 40% of new riders in the second half."
HTML_SENTENCE = "Delivery firms in Berlin replaced 300 vans with cargo bikes in 2024."


def write_pdf(path: Path, title: str = "E-Bike Market Study") -> Path:
    """A two-page PDF with a title in its metadata and a known sentence on page 2."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "European E-Bike Market\n\nThe market grew in every region in 2024.")
    pdf.add_page()
    pdf.multi_cell(0, 8, PDF_PAGE_2 + " France follows with 0.9 million.")
    pdf.output(str(path))
    return path


def write_blank_pdf(path: Path) -> Path:
    """A PDF of one page with no text on it (as a scan without OCR is)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60)  # a drawing, no text
    pdf.output(str(path))
    return path


def encrypt_pdf(source: Path, path: Path, user_password: str) -> Path:
    """`source` encrypted with AES-256; an empty user password opens it without asking."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=source)
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-256")
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def write_docx(path: Path) -> Path:
    """A Word document with a title, two heading levels, paragraphs, a list and a table."""
    import docx

    document = docx.Document()
    document.add_heading("Fleet Review 2024", 0)
    document.add_heading("Summary", 1)
    document.add_paragraph(DOCX_SENTENCE)
    document.add_paragraph("Berlin and Hamburg led the growth.", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    for r, cells in enumerate([("city", "bikes"), ("Berlin", "1,200"), ("Hamburg", "800")]):
        for c, text in enumerate(cells):
            table.cell(r, c).text = text
    document.add_heading("Korea", 2)
    document.add_paragraph(DOCX_KOREAN)
    document.save(str(path))
    return path


def write_xlsx(path: Path, rows: int = 3) -> Path:
    """A workbook of two sheets: Sales (region, units, revenue; `rows` rows) and Notes."""
    from openpyxl import Workbook

    book = Workbook()
    sales = book.active
    assert sales is not None
    sales.title = "Sales"
    sales.append(["region", "units", "revenue"])
    regions = ["DE", "FR", "IT"]
    for index in range(rows):
        sales.append([regions[index % 3], 100 + index, 1000.5 + index])
    notes = book.create_sheet("Notes")
    notes.append(["Prepared by", "finance"])
    notes.append(["as of", datetime.date(2024, 12, 31)])
    book.save(str(path))
    return path


def write_pptx(path: Path) -> Path:
    """A deck of two slides: bullets with speaker notes, then a table."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    assert first.shapes.title is not None
    first.shapes.title.text = "Rider growth"
    first.placeholders[1].text_frame.text = PPTX_SENTENCE
    notes = first.notes_slide.notes_text_frame
    assert notes is not None
    notes.text = "Mention the Berlin pilot."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    assert second.shapes.title is not None
    second.shapes.title.text = "Riders by city"
    frame = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(4), Inches(1.5))
    for r, cells in enumerate([("city", "riders"), ("Berlin", "5,400"), ("Paris", "4,100")]):
        for c, text in enumerate(cells):
            frame.table.cell(r, c).text = text
    deck.save(str(path))
    return path


def write_html(path: Path) -> Path:
    """A saved news article: navigation and footer around the article's text."""
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<title>Cargo bikes | City News</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/sport'>Sport</a> <a href='/weather'>Weather</a></nav>"
        "<article><h1>Cargo bikes take over city logistics</h1>"
        f"<p>{HTML_SENTENCE} Emissions from deliveries fell by 40% in the city centre.</p>"
        "<h2>Costs</h2><p>Each cargo bike costs about 9,000 euros, a fraction of a van's price "
        "over five years of service, and repairs are cheaper too.</p></article>"
        "<footer>Copyright 2024 City News. All rights reserved.</footer></body></html>",
        encoding="utf-8",
    )
    return path
