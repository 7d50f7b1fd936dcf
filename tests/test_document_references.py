"""Documents as both engines use them: catalog summaries, builtin digests, model prompts, the
evidence brief's text, and the knowledge catalog of a home."""

from __future__ import annotations

import os
from pathlib import Path

from app.team import build_collaborators
from executor.builtin import BuiltinExecutor
from executor.builtin.sources import read_references, source_text
from executor.model.references import read_source, render_sources
from executor.tools import ToolContext, ToolLimits, ToolRegistry, builtin_tools
from multiverse.config import load_runtime_mapping
from multiverse.home import Home, init_home
from multiverse.store import KNOWLEDGE_CATALOG
from orchestrator.perform import refresh_inputs

from makedocs import (
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


def summary(path: Path) -> str:
    text = BuiltinExecutor().summarize(path)
    assert "\n" not in text and len(text) <= 300
    return text


def documents(folder: Path) -> dict[str, Path]:
    """One document of each kind, written into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "pdf": write_pdf(folder / "study.pdf"),
        "docx": write_docx(folder / "fleet.docx"),
        "xlsx": write_xlsx(folder / "sales.xlsx"),
        "pptx": write_pptx(folder / "deck.pptx"),
        "html": write_html(folder / "article.html"),
    }


def test_catalog_summaries_tell_kind_title_and_key_sentences(tmp_path: Path) -> None:
    """Each document's summary names its kind and size, then its first lines as it writes them
    (the page and slide headings the conversion adds left out); a workbook's sheet is a table,
    summarised by its profile."""
    made = documents(tmp_path)
    pdf = summary(made["pdf"])
    assert pdf.startswith("PDF, 2 pages: E-Bike Market Study European E-Bike Market The market ")
    assert "2.1 million e-bikes" in pdf and "Page 1" not in pdf
    docx = summary(made["docx"])
    assert docx.startswith("Word document, ") and "Fleet Review 2024 Summary " in docx
    assert DOCX_SENTENCE in docx
    xlsx = summary(made["xlsx"])
    assert xlsx == "Excel sheet Sales, 3 rows: region (3: DE, FR, IT), units, revenue."
    pptx = summary(made["pptx"])
    assert pptx.startswith("PowerPoint deck, 2 slides: Rider growth ") and PPTX_SENTENCE in pptx
    assert "Slide 1" not in pptx
    html = summary(made["html"])
    assert html.startswith("HTML page, ")
    assert "Cargo bikes take over city logistics Delivery firms" in html
    assert HTML_SENTENCE in html


def test_unreadable_documents_are_summarised_with_why(tmp_path: Path) -> None:
    """A damaged, image-only or encrypted document's summary says so and why."""
    corrupt = tmp_path / "broken.docx"
    corrupt.write_bytes(os.urandom(4096))
    assert summary(corrupt).startswith("not a valid .docx (not a zip archive")
    blank = summary(write_blank_pdf(tmp_path / "scan.pdf"))
    assert blank == "PDF with no extractable text (scanned images?) (1 page)"
    locked = encrypt_pdf(write_pdf(tmp_path / "plain.pdf"), tmp_path / "locked.pdf", "secret")
    assert summary(locked) == "encrypted PDF (a password is needed to open it)"


def test_builtin_references_digest_documents_like_markdown(tmp_path: Path) -> None:
    """The builtin engine's digests of documents hold their sentences, figures and tables."""
    documents(tmp_path / "assets")
    (tmp_path / "assets" / "broken.pptx").write_bytes(b"garbage" * 100)
    files, digests = read_references(tmp_path, ["assets"])
    assert len(files) == 6
    by_source = {digest.source: digest for digest in digests}
    pdf = by_source["assets/study.pdf"]
    assert pdf.kind == "pdf" and pdf.title == "E-Bike Market Study"
    assert pdf.facts[0] == "PDF, 2 pages" and "sections: Page 1; Page 2" in pdf.facts
    assert any(PDF_PAGE_2 in point.text for point in pdf.points)
    assert any(f.value == "2.1 million" and "e-bikes" in f.context for f in pdf.figures)
    assert any(DOCX_SENTENCE in p.text for p in by_source["assets/fleet.docx"].points)
    sales = by_source["assets/sales.xlsx"]
    revenue = "Column revenue ranges from 1,000.5 to 1,002.5"
    assert any(p.text.startswith(revenue) for p in sales.points)
    assert any(PPTX_SENTENCE in p.text for p in by_source["assets/deck.pptx"].points)
    assert any(HTML_SENTENCE in p.text for p in by_source["assets/article.html"].points)
    broken = by_source["assets/broken.pptx"]
    assert broken.kind == "unreadable" and broken.note.startswith("not a valid .pptx")


def test_model_references_paste_documents_as_markdown(tmp_path: Path) -> None:
    """The model executor's prompt holds a document's markdown, named with its kind."""
    made = documents(tmp_path / "assets")
    sources = [read_source(tmp_path, path, ()) for path in made.values()]
    assert all(source.text for source in sources)
    prompt = render_sources(sources)
    assert "### `assets/study.pdf`\n\nPDF, 2 pages, as markdown\n\n```text\n" in prompt
    assert "## Page 2" in prompt and "2.1 million e-bikes" in prompt
    assert "| city | bikes |" in prompt and "## Sheet: Sales" in prompt
    assert "## Slide 1: Rider growth" in prompt and HTML_SENTENCE in prompt
    scan = read_source(tmp_path, write_blank_pdf(tmp_path / "assets" / "scan.pdf"), ())
    assert scan.text is None
    assert scan.note == "cannot be read: PDF with no extractable text (scanned images?) (1 page)"


def test_source_text_gives_markdown_of_documents_and_text_files(tmp_path: Path) -> None:
    """The evidence brief's reader: documents converted, text decoded, binaries refused."""
    text, note = source_text(tmp_path, write_pdf(tmp_path / "study.pdf"))
    assert text is not None and "## Page 2" in text and note == "PDF, 2 pages"
    (tmp_path / "notes.md").write_text("# Notes\n\nShort.\n", "utf-8")
    assert source_text(tmp_path, tmp_path / "notes.md") == ("# Notes\n\nShort.\n", "")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(100))
    assert source_text(tmp_path, tmp_path / "logo.png") == (None, "binary file, 110 bytes")
    locked = encrypt_pdf(tmp_path / "study.pdf", tmp_path / "locked.pdf", "secret")
    assert source_text(tmp_path, locked) == (
        None,
        "encrypted PDF (a password is needed to open it)",
    )


def test_chart_pages_a_run_drew_stay_charts(tmp_path: Path) -> None:
    """An HTML chart in a run's folder is a chart to link; a page in assets/ is read as text."""
    chart = tmp_path / "runs" / "run-1" / "workspace" / "chart.html"
    chart.parent.mkdir(parents=True)
    chart.write_text("<html><body><h1>Revenue</h1><svg><title>Revenue by year</title></svg>"
                     "</body></html>", "utf-8")  # fmt: skip
    _, digests = read_references(tmp_path, ["runs/run-1/workspace/chart.html"])
    assert digests[0].kind == "markup" and digests[0].note == "chart (HTML with an SVG image)"
    assert summary(chart) == "Revenue: 1 chart(s): Revenue by year"
    page = tmp_path / "assets" / "chart.html"
    page.parent.mkdir()
    page.write_text(chart.read_text("utf-8"), "utf-8")
    _, digests = read_references(tmp_path, ["assets/chart.html"])
    assert digests[0].kind == "html" and digests[0].title == "Revenue"


def test_a_catalogued_pdf_has_its_summary_in_the_catalog(home: Home) -> None:
    """T03 catalogues a PDF in assets/ with its real summary in db/knowledge_base_catalog.md."""
    write_pdf(home.assets / "study.pdf")
    crew = build_collaborators(
        home, load_runtime_mapping(home.root), os.environ, console=lambda t: None
    )
    refresh_inputs(crew)
    catalog = (home.db / KNOWLEDGE_CATALOG.filename).read_text(encoding="utf-8")
    row = next(line for line in catalog.splitlines() if "assets/study.pdf" in line)
    assert "PDF, 2 pages: E-Bike Market Study European" in row and "2.1 million e-bikes" in row


def test_the_read_tools_give_documents_as_markdown(tmp_path: Path) -> None:
    """In tools mode the model's read_file and read_many_files read documents as markdown."""
    home = Home(tmp_path / "home")
    init_home(home)
    write_pdf(home.assets / "study.pdf")
    write_blank_pdf(home.assets / "scan.pdf")
    context = ToolContext(home=home.root, run_id="run-20260101-000000-001", limits=ToolLimits())
    registry = ToolRegistry(context, builtin_tools())
    result = registry.call("read_file", {"path": "assets/study.pdf", "offset": 2, "limit": 3})
    assert result.ok and result.output.startswith("## Page 1\n")
    assert "[note: PDF, 2 pages, converted to markdown]" in result.output
    assert result.output.endswith("continue with offset=5]")
    many = registry.call("read_many_files", {"paths": ["assets/*.pdf"]})
    assert "--- assets/study.pdf ---\n# E-Bike Market Study" in many.output
    assert "'assets/scan.pdf' cannot be read: PDF with no extractable text" in many.output
