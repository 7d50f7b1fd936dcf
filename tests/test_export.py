"""The report exported as Word and PDF beside its markdown and HTML (documents/export)."""

from __future__ import annotations

import io
from pathlib import Path

import docx
import pytest
from docx.oxml.ns import qn
from fontTools.ttLib import TTFont
from pypdf import PdfReader
from pypdf.generic import DictionaryObject
from structlog.testing import capture_logs

from executor.builtin.charts import ChartImage, ChartSpec, SeriesLine, render_svg
from multiverse.documents import chart_data, export_report
from multiverse.documents.writers import (
    Face,
    choose_fonts,
    cover,
    installed_faces,
    needs_shaping,
)

ENGLISH = """# Annual report

> Made offline by the builtin engine.

## Summary

Revenue **grew** in *every* region; see [the data](https://example.com/sales) and `sales.csv`.

- Germany leads
- France follows
  1. Paris first

| Region | Revenue |
| --- | ---: |
| Germany | 6,900 |
| France | 2,400 |

![Revenue by region](report-chart-1.svg)

<script>alert(1)</script>
"""

KOREAN = """# 연간 보고서

## 요약

매출은 **모든** 지역에서 늘었다.

- 독일이 앞선다
- 프랑스가 뒤따른다

| 지역 | 매출 |
| --- | ---: |
| 독일 | 6,900 |

![지역별 매출](report-chart-1.svg)
"""


def _chart(title: str, labels: list[str], values: list[float]) -> ChartImage:
    line = SeriesLine(name=title, values=list(values))
    spec = ChartSpec(title=title, kind="bar", labels=labels, lines=[line], source="sales.csv")
    return ChartImage(file_name="report-chart-1.svg", caption=title, svg=render_svg(spec, "r-1"))


def _texts(document: docx.document.Document) -> list[str]:
    return [p.text for p in document.paragraphs]


def _cells(document: docx.document.Document) -> list[list[list[str]]]:
    return [[[c.text for c in row.cells] for row in t.rows] for t in document.tables]


def test_an_english_report_becomes_a_word_document_with_its_parts(tmp_path: Path) -> None:
    """The .docx has the heading, the list items, the table as a Word table, the link's address,
    the chart (a picture, or its values where cairo or a font is missing) and its language."""
    chart = _chart("Revenue by region", ["Germany", "France"], [6900, 2400])
    exported = export_report(tmp_path / "report.md", ENGLISH, "Annual report", "en", [chart])
    assert tmp_path / "report.docx" in exported.written
    document = docx.Document(str(tmp_path / "report.docx"))
    styles = {p.text: p.style.name for p in document.paragraphs}
    assert styles["Annual report"] == "Heading 1" and styles["Summary"] == "Heading 2"
    assert styles["Germany leads"] == styles["France follows"] == "List Bullet"
    assert styles["Paris first"].startswith("List Number")
    assert styles["Revenue by region"] == "Caption"
    assert ["Germany", "6,900"] in _cells(document)[0]
    assert _cells(document)[0][0] == ["Region", "Revenue"]
    body = "\n".join(_texts(document))
    assert "the data (https://example.com/sales)" in body and "<script>alert(1)</script>" in body
    bold = [run.text for p in document.paragraphs for run in p.runs if run.bold]
    assert "grew" in bold
    if exported.written and not document.inline_shapes:  # no cairo here: the values instead
        assert ["Germany", "6,900"] in _cells(document)[1]
    assert document.core_properties.language == "en"
    assert document.core_properties.title == "Annual report"


def test_a_korean_report_keeps_its_hangul_and_its_language(tmp_path: Path) -> None:
    """A Korean report's .docx has its Hangul text and declares Korean; its PDF is written only
    where an installed font draws Hangul, else left out with the reason."""
    chart = _chart("지역별 매출", ["독일", "프랑스"], [6900, 2400])
    exported = export_report(tmp_path / "보고서.md", KOREAN, "연간 보고서", "ko", [chart])
    document = docx.Document(str(tmp_path / "보고서.docx"))
    body = "\n".join(_texts(document))
    assert "연간 보고서" in body and "매출은 모든 지역에서 늘었다." in body
    assert "독일이 앞선다" in body and ["독일", "6,900"] in _cells(document)[0]
    assert document.core_properties.language == "ko"
    lang = document.styles.element.find(qn("w:docDefaults")).find(qn("w:rPrDefault"))
    lang = lang.find(qn("w:rPr")).find(qn("w:lang"))
    assert lang.get(qn("w:val")) == "ko" and lang.get(qn("w:eastAsia")) == "ko"
    hangul = any(0xAC00 in face.chars for face in installed_faces())
    if hangul:
        assert "연간 보고서" in PdfReader(tmp_path / "보고서.pdf").pages[0].extract_text()
    else:
        assert not (tmp_path / "보고서.pdf").exists()
        assert "no installed font has" in exported.skipped[".pdf"]
        assert ["독일", "6,900"] in _cells(document)[1]  # the chart's values, not empty boxes


def test_a_pdf_holds_the_report_text(tmp_path: Path) -> None:
    """Where a TrueType font is installed, report.pdf is written and holds the report's text."""
    if not installed_faces():
        pytest.skip("no TrueType font is installed on this machine")
    chart = _chart("Revenue by region", ["Germany", "France"], [6900, 2400])
    exported = export_report(tmp_path / "report.md", ENGLISH, "Annual report", "en", [chart])
    assert tmp_path / "report.pdf" in exported.written
    reader = PdfReader(tmp_path / "report.pdf")
    text = "\n".join(page.extract_text() for page in reader.pages)
    assert "Annual report" in text and "Germany leads" in text and "6,900" in text
    assert "Revenue by region" in text
    assert reader.metadata is not None and reader.metadata.title == "Annual report"


def _pdf_font_name(path: str) -> str:
    """The name fpdf2 gives an embedded font: its full name without spaces."""
    with TTFont(path, lazy=True) as font:
        return str(font["name"].getBestFullName()).replace(" ", "")


def _embedded_fonts(path: Path) -> set[str]:
    """The fonts a PDF holds, used on a page or not, by name without the subset's prefix."""
    reader = PdfReader(path)
    names: set[str] = set()
    for number in range(1, reader.trailer["/Size"]):
        found = reader.get_object(number)
        if isinstance(found, DictionaryObject) and found.get("/Type") == "/FontDescriptor":
            names.add(str(found["/FontName"]).split("+")[-1])
    return names


@pytest.mark.parametrize(
    ("markdown", "styles"),
    [
        ("No emphasis here.\n", {""}),
        ("One **bold** word.\n", {"", "B"}),
        ("Only *italic* words.\n", {"", "I"}),
        ("***Both*** and `code`.\n", {"", "BI", "mono"}),
        (ENGLISH, {"", "B", "I", "mono"}),  # its chart's caption is in italics
    ],
)
def test_a_pdf_embeds_the_faces_its_text_uses_and_no_other(
    tmp_path: Path, markdown: str, styles: set[str]
) -> None:
    """Each face is read and embedded only when the report's text uses it: a report without
    italics or code carries neither font."""
    faces = installed_faces()
    if not faces:
        pytest.skip("no TrueType font is installed on this machine")
    chart = _chart("Revenue by region", ["Germany", "France"], [6900, 2400])
    exported = export_report(tmp_path / "r.md", markdown, "R", "en", [chart])
    assert tmp_path / "r.pdf" in exported.written, exported.skipped
    fonts = choose_fonts(markdown)
    files = {style: fonts.main.get(style, fonts.main[""]) for style in ("", "B", "I", "BI")}
    files["mono"] = fonts.mono or fonts.main[""]
    expected = {_pdf_font_name(files[style]) for style in styles}
    assert _embedded_fonts(tmp_path / "r.pdf") == expected


def test_a_right_to_left_report_gets_no_pdf(tmp_path: Path) -> None:
    """Arabic needs shaping that fpdf2 does not do here: no PDF, a .docx all the same."""
    exported = export_report(tmp_path / "r.md", "# تقرير\n\nالنص هنا.\n", "تقرير", "ar", [])
    assert not (tmp_path / "r.pdf").exists() and "shaping" in exported.skipped[".pdf"]
    assert "تقرير" in _texts(docx.Document(str(tmp_path / "r.docx")))


def test_a_broken_chart_fails_the_export_not_the_report(tmp_path: Path) -> None:
    """A chart whose SVG is broken leaves the markdown and HTML as they were, writes no .docx
    and logs the failure."""
    (tmp_path / "report.md").write_text(ENGLISH, encoding="utf-8")
    (tmp_path / "report.html").write_text("<html>report</html>", encoding="utf-8")
    broken = ChartImage(file_name="report-chart-1.svg", caption="Revenue", svg="<svg><g></svg>")
    with capture_logs() as logs:
        exported = export_report(tmp_path / "report.md", ENGLISH, "Annual report", "en", [broken])
    assert exported.written == [] and not (tmp_path / "report.docx").exists()
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == ENGLISH
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == "<html>report</html>"
    assert any(e["event"] == "report_export_failed" for e in logs)


def test_chart_values_are_read_back_from_the_svg() -> None:
    """Each series' values come back by label from the drawn chart, a missing one empty."""
    spec = ChartSpec(title="By year", kind="bar", labels=["2021", "2022", "2023"], source="s",
                     lines=[SeriesLine(name="Revenue", values=[10.5, 12.25, None]),
                            SeriesLine(name="Cost", values=[3, 4, 5])])  # fmt: skip
    data = chart_data(render_svg(spec, "c"))
    expected = [["", *(line.name for line in spec.lines)]]
    for n, label in enumerate(spec.labels):
        values = [line.values[n] for line in spec.lines]
        expected.append([label, *("" if v is None else f"{v:g}" for v in values)])
    assert data.title == "By year" and data.rows == expected


def test_the_fonts_chosen_cover_the_text_with_the_fewest_fallbacks() -> None:
    """The family drawing most of the text is the main one; another covers the rest, and what no
    font has is reported missing."""
    latin = Face(Path("latin.ttf"), "DejaVu Sans", "", frozenset(range(32, 600)))
    bold = Face(Path("latin-bold.ttf"), "DejaVu Sans", "B", frozenset(range(32, 600)))
    hangul = Face(Path("hangul.ttf"), "Nanum Gothic", "", frozenset(range(0xAC00, 0xD7A4)))
    found = cover(frozenset(map(ord, "Revenue 매출")), (hangul, latin, bold))
    assert found.main == {"": Path("latin.ttf"), "B": Path("latin-bold.ttf")}
    assert found.fallbacks == [Path("hangul.ttf")] and not found.missing
    assert cover(frozenset({0x4E00}), (latin,)).missing == {0x4E00}
    assert needs_shaping("مرحبا") == "م" and needs_shaping("한국어 English") is None


def test_a_docx_round_trips_through_python_docx_in_memory(tmp_path: Path) -> None:
    """The bytes written are a valid package python-docx reads back (atomic write, no temp left)."""
    export_report(tmp_path / "report.md", "# Title\n\nText.\n", "Title", "en", [])
    data = (tmp_path / "report.docx").read_bytes()
    assert _texts(docx.Document(io.BytesIO(data)))[:2] == ["Title", "Text."]
    assert {p.name for p in tmp_path.iterdir()} <= {"report.docx", "report.pdf"}
