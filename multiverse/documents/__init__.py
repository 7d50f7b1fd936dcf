"""Documents people have (PDF, Word, Excel, PowerPoint, HTML) read as markdown text and tables.

Both engines read references through here: the builtin digests a document's markdown like a
markdown file, the model executor pastes it into its prompt. Locations are headings (`## Page
3`, `## Slide 2: Costs`, `## Sheet: Sales`, a Word document's own headings) so that a fact can
be cited with the place it came from. Each reader imports its library on first use.

- `convert(path)`: the document as `Converted` (markdown, or a note saying why not); never raises.
- `sniff(path)`: whether a file is such a document, by its bytes and its name.
- `source_text(home, path)`: any readable file of the home as text, documents converted.
- `export_report(markdown_path, markdown, title, lang, charts)`: a published report written
  again as `.docx` (and `.pdf` where the installed fonts draw all of it) beside its markdown;
  never raises for a report it cannot export.
- `look(path, home)`, `why_unread`, `open_regular`: whether a file of the home may be read at
  all (a link leaving the home, a pipe, a device, a file that vanished) and opening it so.

A published report exported beside its markdown and HTML: `<stem>.docx` always, `<stem>.pdf`
where the installed fonts draw every character of it.

A chart (SVG) goes into a document that cannot hold SVG as a PNG picture where cairosvg (pygal's
own way to PNG, which needs the system's cairo library) and a font for every character of it are
installed, and always as its values; where no picture can be drawn, the values stand in for it.

The markdown and the HTML are the deliverable: an export that fails is logged and left out,
never a failed run.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from multiverse.atomic import atomic_write_bytes
from multiverse.documents.convert import (
    MAX_TEXT_BYTES,
    NOTE_MARKER,
    Kind,
    Sighting,
    Unread,
    convert,
    document_note,
    is_note,
    is_unread,
    look,
    open_regular,
    sniff,
    source_text,
    why_unread,
)
from multiverse.documents.converted import Converted, decode, text_encoding
from multiverse.documents.formats import html_document, html_to_markdown, markdown_to_html
from multiverse.logs import lazy_logger

if TYPE_CHECKING:
    from multiverse.documents.writers import Picture


log = lazy_logger(__name__)

_SVG = "{http://www.w3.org/2000/svg}"
PNG_SCALE = 2.0  # sharp when printed at the page's width


class ChartUnreadable(ValueError):
    """The chart's SVG is not well-formed XML."""


@dataclass(frozen=True)
class ChartData:
    """What a chart shows, as text: its title, its texts, and its values by series."""

    title: str
    texts: str
    rows: list[list[str]]


def _classes(element: ET.Element) -> list[str]:
    return (element.get("class") or "").split()


def chart_data(svg: str) -> ChartData:
    """The title, texts and values (label, then one column per series) of a pygal SVG chart."""
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as error:
        raise ChartUnreadable(str(error)) from error
    texts = [text for element in root.iter(f"{_SVG}text") if (text := "".join(element.itertext()))]
    title = next((" ".join(e.itertext()) for e in root.iter(f"{_SVG}text")
                  if "title" in _classes(e)), "")  # fmt: skip
    by_serie: dict[str, dict[str, str]] = {}  # pygal draws a series in several groups
    for group in root.iter(f"{_SVG}g"):
        serie = next((c for c in _classes(group) if c.startswith("serie-")), None)
        if serie is None or "series" not in _classes(group):
            continue
        values = by_serie.setdefault(serie, {})
        for point in group.iter(f"{_SVG}g"):
            descs = {d.get("class"): d.text or "" for d in point.findall(f"{_SVG}desc")}
            if "value" in descs:
                values.setdefault(descs.get("x_label", str(len(values) + 1)), descs["value"])
    series = [values for values in by_serie.values() if values]
    names = [t for e in root.iter(f"{_SVG}g") if "legend" in _classes(e)
             for t in ["".join(e.itertext()).strip()] if t]  # fmt: skip
    labels = list(dict.fromkeys(label for values in series for label in values))
    header = ["", *(names[n] if n < len(names) else title for n in range(len(series)))]
    rows = [[label, *(values.get(label, "") for values in series)] for label in labels]
    return ChartData(title=title, texts="\n".join(texts), rows=[header, *rows] if rows else [])


def chart_png(svg: str, data: ChartData) -> tuple[bytes | None, str]:
    """The chart as PNG bytes, or None and why not (cairo missing, a character no font has)."""
    from multiverse.documents.writers import describe, installed_faces, needed

    missing = needed(data.texts) - frozenset().union(*(f.chars for f in installed_faces()))
    if missing:
        return None, f"no installed font has {describe(missing)}"
    try:
        import cairosvg
    except (ImportError, OSError) as error:  # OSError: the system's libcairo is not installed
        return None, f"cairosvg cannot run here ({error})"
    png = cairosvg.svg2png(bytestring=svg.encode("utf-8"), scale=PNG_SCALE,
                           background_color="white")  # fmt: skip
    return (bytes(png), "") if png else (None, "cairosvg drew nothing")


class ReportChart(Protocol):
    """A chart of the report: the SVG file its markdown names, its caption, its SVG markup."""

    @property
    def file_name(self) -> str: ...

    @property
    def caption(self) -> str: ...

    @property
    def svg(self) -> str: ...


@dataclass(frozen=True)
class Exported:
    """The files written, and for each format left out, why."""

    written: list[Path] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def pictures(charts: Sequence[ReportChart]) -> dict[str, Picture]:
    """Each chart as a document shows it, by its file name: PNG (or None), caption, values."""
    shown: dict[str, Picture] = {}
    for chart in charts:
        data = chart_data(chart.svg)
        png, why = chart_png(chart.svg, data)
        if png is None:
            log.info("chart_picture_skipped", chart=chart.file_name, reason=why)
        shown[chart.file_name] = (png, chart.caption, data.rows)
    return shown


def _text(markdown: str, shown: dict[str, Picture]) -> str:
    parts = [markdown]
    for png, caption, rows in shown.values():
        parts.append(caption)
        if png is None:
            parts += [cell for row in rows for cell in row]
    return "\n".join(parts)


def export_report(markdown_path: Path, markdown: str, title: str, lang: str,
                  charts: Sequence[ReportChart]) -> Exported:  # fmt: skip
    """Write `<stem>.docx` and, where it can be faithful, `<stem>.pdf` beside the markdown
    (`lang`: the report's language code); never raises for a report it cannot export."""
    # Imported here: python-docx, fpdf2 and fontTools cost ~0.3 s, paid by publishing only.
    from multiverse.documents.writers import NotFaithful, choose_fonts, report_docx, report_pdf

    folder, stem = markdown_path.parent, markdown_path.stem
    written: list[Path] = []
    skipped: dict[str, str] = {}
    try:
        shown = pictures(charts)
    except Exception as error:  # the markdown and HTML are the deliverable: log and go on
        log.warning("report_export_failed", path=str(markdown_path), format="charts",
                    error=f"{type(error).__name__}: {error}")  # fmt: skip
        return Exported(skipped={".docx": str(error), ".pdf": str(error)})
    for suffix in (".docx", ".pdf"):
        path = folder / f"{stem}{suffix}"
        started = time.perf_counter()
        try:
            if suffix == ".docx":
                data = report_docx(markdown, title, lang, shown.get)
            else:
                data = report_pdf(markdown, title, lang, choose_fonts(_text(markdown, shown)),
                                  shown.get)  # fmt: skip
            atomic_write_bytes(path, data)
        except NotFaithful as why:
            skipped[suffix] = str(why)
            log.info("report_pdf_skipped", path=str(path), reason=str(why))
            continue
        except Exception as error:  # the markdown and HTML are the deliverable: log and go on
            skipped[suffix] = f"{type(error).__name__}: {error}"
            log.warning("report_export_failed", path=str(path), format=suffix,
                        error=skipped[suffix])  # fmt: skip
            continue
        written.append(path)
        log.info("report_exported", path=str(path), bytes=len(data),
                 seconds=round(time.perf_counter() - started, 3))  # fmt: skip
    return Exported(written=written, skipped=skipped)


__all__ = [
    "MAX_TEXT_BYTES",
    "NOTE_MARKER",
    "Converted",
    "Exported",
    "Kind",
    "ReportChart",
    "Sighting",
    "Unread",
    "convert",
    "decode",
    "document_note",
    "export_report",
    "html_document",
    "html_to_markdown",
    "is_note",
    "is_unread",
    "look",
    "markdown_to_html",
    "open_regular",
    "sniff",
    "source_text",
    "text_encoding",
    "why_unread",
]
