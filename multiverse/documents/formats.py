"""The readers of each format people have, as markdown: Word, HTML, PDF, PowerPoint and Excel, and
the markdown building blocks they share.
"""

from __future__ import annotations

import datetime
import html
import itertools
import logging
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from multiverse.documents.converted import Converted, decode_cut, plural, unreadable


def cell_text(value: str) -> str:
    """A value safe inside a pipe-table cell: one line, pipes escaped."""
    return " ".join(value.split()).replace("|", "\\|")


def pipe_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows as a markdown pipe table, the first row as header ("" for no rows).

    Rows are padded to the widest; cells are not aligned with spaces, since a sheet of
    thousands of rows would pay for padding nobody reads.
    """
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    if width == 0:
        return ""
    lines = []
    for index, row in enumerate(rows):
        cells = [cell_text(cell) for cell in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)


def trim_grid(rows: list[list[str]]) -> list[list[str]]:
    """A grid without its empty rows and without columns empty in every row."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    width = max((len(row) for row in rows), default=0)
    used = [i for i in range(width) if any(i < len(r) and r[i].strip() for r in rows)]
    return [[row[i] if i < len(row) else "" for i in used] for row in rows]


_MARKUP_START = ("#", "|", "```", "~~~")


def plain_line(text: str) -> str:
    """A line of a document's text that markdown reads as text: a leading `#`, `|` or fence, or a
    line of only `-`/`=` (which would make the line above a heading), is escaped."""
    line = text.rstrip()
    stripped = line.lstrip()
    if stripped.startswith(_MARKUP_START) or (stripped and set(stripped) <= {"-", "=", " "}):
        return "\\" + stripped
    return line


def heading(level: int, text: str) -> str:
    """A markdown heading of one line (levels past 6 stay at 6)."""
    return "#" * min(max(level, 1), 6) + " " + " ".join(text.split())


if TYPE_CHECKING:
    from docx.document import Document as WordDocument
    from docx.text.paragraph import Paragraph

# A table longer than this is rarely prose: its first rows show what it holds.
MAX_TABLE_ROWS = 2_000
_HEADING_STYLE = re.compile(r"^heading (\d)$", re.IGNORECASE)
_WORD = re.compile(r"\w+")


def read_docx(handle: BinaryIO) -> Converted:
    """A Word document as markdown: `Heading N` styles become `#`×N, tables pipe tables."""
    import docx
    from docx.table import Table

    document = docx.Document(handle)
    styles = _style_names(document)
    blocks: list[str] = []
    title = ""
    cut_tables = 0
    for block, style in zip(document.iter_inner_content(), styles, strict=True):
        if isinstance(block, Table):
            kept = itertools.islice(block.rows, MAX_TABLE_ROWS + 1)  # the header and the rows
            blocks.append(pipe_table([[cell.text for cell in row.cells] for row in kept]))
            cut_tables += len(block.rows) > MAX_TABLE_ROWS + 1
            continue
        line = _paragraph_line(block, style)
        if line:
            blocks.append(line)
        if not title and style == "title":
            title = block.text.strip()
    title = title or (document.core_properties.title or "").strip()
    words = sum(len(_WORD.findall(block)) for block in blocks)
    if not blocks:
        return unreadable("docx", "Word document with no text", plural(0, "word"))
    note = f"{plural(cut_tables, 'table')} cut to {MAX_TABLE_ROWS:,} rows" if cut_tables else ""
    markdown = "\n\n".join(block for block in blocks if block) + "\n"
    return Converted("docx", markdown, note=note, title=title, extent=plural(words, "word"))


def _style_names(document: WordDocument) -> list[str]:
    """The paragraph style's name (lower case) of each paragraph and table of the body, in the
    order `iter_inner_content` gives them ("" for a table).

    `Paragraph.style` looks its style up among all the document's styles, and the default one
    by a scan of them all: seconds for a long document. Here each is looked up once, as
    python-docx does it: an unknown id, or one of another kind of style, is the default.
    """
    from docx.enum.style import WD_STYLE_TYPE

    default = document.styles.default(WD_STYLE_TYPE.PARAGRAPH)
    fallback = (default.name or "").lower() if default is not None else ""
    names: dict[str, str] = {}
    for style in document.styles:  # the first style of an id is the one (python-docx's lookup)
        if style.style_id not in names:
            paragraph = style.type == WD_STYLE_TYPE.PARAGRAPH
            names[style.style_id] = (style.name or "").lower() if paragraph else fallback
    return [
        names.get(str(element.xpath("string(w:pPr/w:pStyle/@w:val)")), fallback)
        if element.tag.endswith("}p") else ""
        for element in document.element.xpath("./w:body/w:p | ./w:body/w:tbl")
    ]  # fmt: skip


def _paragraph_line(paragraph: Paragraph, style: str) -> str:
    """A paragraph (`style`: its style's name in lower case) as one markdown block: a heading,
    a list item or plain text ("" if empty)."""
    text = paragraph.text.strip()
    if not text:
        return ""
    if style == "title":
        return heading(1, text)
    level = _HEADING_STYLE.match(style)
    if level:
        return heading(int(level.group(1)), text)
    lines = [plain_line(line) for line in text.splitlines()]
    if style.startswith("list"):
        return "- " + " ".join(line.strip() for line in lines)
    return "\n".join(lines)


# A page past 5 MB is a data dump or an export with inline images, not an article; its start
# holds the article if there is one.
MAX_HTML_BYTES = 5_000_000
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_H1 = re.compile(r"^# (.+)$", re.MULTILINE)


def read_html(handle: BinaryIO) -> Converted:
    """An HTML file's main content (no navigation, footer or scripts) as markdown."""
    data = handle.read(MAX_HTML_BYTES + 1)
    text = _decoded(data[:MAX_HTML_BYTES])
    if text is None:
        return unreadable("html", "HTML file that is not text (binary data)")
    converted = html_document(text)
    if len(data) > MAX_HTML_BYTES and converted.markdown is not None:
        note = f"first {MAX_HTML_BYTES:,} bytes of the file"
        return Converted("html", converted.markdown, note, converted.title, converted.extent)
    return converted


def html_document(text: str) -> Converted:
    """An HTML text's main content as markdown, with the page's title."""
    markdown = html_to_markdown(text)
    heading = _H1.search(markdown)
    tag = _TITLE.search(text)
    title = heading.group(1) if heading else html.unescape(tag.group(1)) if tag else ""
    title = " ".join(title.split())
    if not markdown:
        return unreadable("html", "HTML page with no readable text")
    extent = plural(len(markdown.split()), "word")
    return Converted("html", markdown + "\n", title=title, extent=extent)


def _decoded(data: bytes) -> str | None:
    """The page's text in the charset it declares, else as any text file is decoded."""
    declared = _CHARSET.search(data[:4096])
    if declared:
        # errors="replace": the cap may have split the last character.
        try:
            return data.decode(declared.group(1).decode("ascii"), errors="replace")
        except LookupError:
            pass
    return decode_cut(data)


if TYPE_CHECKING:
    from pypdf import PageObject, PdfReader

# pypdf extracts some 20-100 pages a second: 300 pages keep a catalog step within seconds and
# hold more text than a digest or a model prompt ever uses.
MAX_PAGES = 300
_WORD_PREFIX = "Microsoft Word - "  # the title Word's PDF printer gives every file
# pypdf reports a damaged file's repairs ("EOF marker not found") as warnings on its logger;
# the note of the conversion says what matters, the console should not repeat pypdf's asides.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def read_pdf(handle: BinaryIO) -> Converted:
    """A PDF's text, page by page; encrypted or image-only PDFs get a note saying so."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(handle)
        locked = _unlock(reader)
        if locked:
            return unreadable("pdf", locked)
        total = len(reader.pages)
        texts = [_page_text(reader.pages[index]) for index in range(min(total, MAX_PAGES))]
        title = _title(reader)
    except PdfReadError as error:
        return unreadable("pdf", f"not a valid PDF ({error})")
    return _converted(texts, total, title)


def _unlock(reader: PdfReader) -> str:
    """Why an encrypted PDF stays closed ("" once open): most open with the empty password."""
    from pypdf.errors import DependencyError, PdfReadError

    if not reader.is_encrypted:
        return ""
    try:
        opened = reader.decrypt("")
    # pypdf raises NotImplementedError for an encryption algorithm it does not implement.
    except (DependencyError, PdfReadError, NotImplementedError) as error:
        return f"encrypted PDF (its encryption cannot be undone here: {error})"
    return "" if opened else "encrypted PDF (a password is needed to open it)"


def _page_text(page: PageObject) -> str | None:
    """The page's text ("" when it has none), or None when extracting it failed."""
    try:
        text = page.extract_text()
    except Exception:  # a damaged content stream is the file's fault: that page is skipped
        return None
    lines = [plain_line(line) for line in text.splitlines()]
    return "\n".join(lines).strip()


def _title(reader: PdfReader) -> str:
    metadata = reader.metadata
    title = str(metadata.title or "").strip() if metadata is not None else ""
    return title.removeprefix(_WORD_PREFIX).strip()


def _converted(texts: list[str | None], total: int, title: str) -> Converted:
    extent = plural(total, "page")
    blocks = [heading(1, title)] if title else []
    blocks += [f"{heading(2, f'Page {n}')}\n\n{text}" for n, text in enumerate(texts, 1) if text]
    notes = []
    if total > len(texts):
        notes.append(f"first {plural(len(texts), 'page')} of {total:,}")
    failed = sum(1 for text in texts if text is None)
    if failed:
        notes.append(f"the text of {plural(failed, 'page')} could not be extracted")
    empty = sum(1 for text in texts if text == "")
    if not any(texts):
        why = "PDF with no extractable text (scanned images?)" if not failed else notes[-1]
        return unreadable("pdf", why, extent)
    if empty:
        notes.append(f"{empty:,} of {plural(len(texts), 'page')} have no text (images?)")
    markdown = "\n\n".join(blocks) + "\n"
    return Converted("pdf", markdown, note="; ".join(notes), title=title, extent=extent)


if TYPE_CHECKING:
    from pptx.shapes.base import BaseShape
    from pptx.slide import Slide
    from pptx.text.text import TextFrame

# A deck longer than this is an archive of decks; its first slides show what it holds.
MAX_SLIDES = 500


def read_pptx(handle: BinaryIO) -> Converted:
    """A deck as markdown: one heading per slide, its text as bullets, its tables as tables."""
    from pptx import Presentation

    deck = Presentation(handle)
    slides = list(deck.slides)
    read = [(_slide_title(slide), _body(slide)) for slide in slides[:MAX_SLIDES]]
    extent = plural(len(slides), "slide")
    if not any(title or body for title, body in read):
        return unreadable("pptx", "PowerPoint deck with no text", extent)
    blocks = [
        "\n\n".join([heading(2, f"Slide {number}: {title}" if title else f"Slide {number}"), *body])
        for number, (title, body) in enumerate(read, 1)
    ]
    title = (deck.core_properties.title or "").strip() or read[0][0]
    note = f"first {MAX_SLIDES} slides of {len(slides):,}" if len(slides) > MAX_SLIDES else ""
    markdown = "\n\n".join(blocks) + "\n"
    return Converted("pptx", markdown, note=note, title=title, extent=extent)


def _slide_title(slide: Slide) -> str:
    shape = slide.shapes.title
    return " ".join(shape.text_frame.text.split()) if shape is not None else ""


def _body(slide: Slide) -> list[str]:
    """The slide's blocks other than its title, in the deck's order, then its speaker notes."""
    title = slide.shapes.title
    title_id = title.shape_id if title is not None else None
    body = [b for shape in slide.shapes if shape.shape_id != title_id for b in _blocks(shape)]
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = " ".join(frame.text.split()) if frame is not None else ""
        body += [f"Notes: {notes}"] if notes else []
    return body


def _blocks(shape: BaseShape) -> list[str]:
    """The markdown blocks of one shape: a group's members, a table, a chart's title, or text."""
    from pptx.shapes.autoshape import Shape
    from pptx.shapes.graphfrm import GraphicFrame
    from pptx.shapes.group import GroupShape

    if isinstance(shape, GroupShape):
        return [block for member in shape.shapes for block in _blocks(member)]
    if isinstance(shape, GraphicFrame) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        return [pipe_table(rows)] if rows else []
    if isinstance(shape, GraphicFrame) and shape.has_chart and shape.chart.has_title:
        chart = " ".join(shape.chart.chart_title.text_frame.text.split())
        return [f"Chart: {chart}"] if chart else []
    if isinstance(shape, Shape) and shape.has_text_frame:
        lines = _bullets(shape.text_frame)
        return ["\n".join(lines)] if lines else []
    return []


def _bullets(frame: TextFrame) -> list[str]:
    """A text frame's paragraphs as list items, indented by their outline level."""
    lines = []
    for paragraph in frame.paragraphs:
        text = " ".join(paragraph.text.split())
        if text:
            lines.append(f"{'  ' * paragraph.level}- {plain_line(text).lstrip()}")
    return lines


if TYPE_CHECKING:
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

# A sheet's first 2,000 rows show what it holds and stay readable in a prompt; past them the
# note says which rows were left out. Columns and sheets are capped for the same reason.
MAX_ROWS = 2_000
MAX_COLUMNS = 50
MAX_SHEETS = 30


def read_xlsx(handle: BinaryIO) -> Converted:
    """A workbook's sheets as tables: values as last calculated (formulas are not evaluated)."""
    from openpyxl import load_workbook

    # read_only streams the sheets' XML; data_only gives a formula's cached value, not its text.
    book = load_workbook(handle, read_only=True, data_only=True)
    try:
        sheets = book.worksheets
        read = [_sheet(sheet) for sheet in sheets[:MAX_SHEETS]]
    finally:
        book.close()
    blocks = [block for block, _, _ in read]
    notes = [note for _, note, _ in read if note]
    if len(sheets) > MAX_SHEETS:
        notes.append(f"first {MAX_SHEETS} sheets of {len(sheets)}")
    extent = plural(len(sheets), "sheet")
    if not any(filled for _, _, filled in read):
        return unreadable("xlsx", "Excel workbook with no values in any sheet", extent)
    title = str(book.properties.title or "").strip()
    markdown = "\n\n".join(blocks) + "\n"
    return Converted("xlsx", markdown, note="; ".join(notes), title=title, extent=extent)


def _sheet(sheet: ReadOnlyWorksheet) -> tuple[str, str, bool]:
    """The sheet's heading and table, what of it was left out ("" when nothing), and whether it
    holds any value."""
    total = sheet.max_row  # the sheet's recorded size; None when the file does not say
    # Some writers record a wrong size, and the reader would stop there: read to the real end.
    sheet.reset_dimensions()
    # The stubs type iter_rows for a full Worksheet only; ReadOnlyWorksheet shares it.
    grid, more = _rows(sheet.iter_rows(values_only=True))  # type: ignore[misc]
    rows = trim_grid(grid)
    width = max((len(row) for row in rows), default=0)
    cuts = []
    if more:
        known = total is not None and total > MAX_ROWS
        cuts.append(f"first {MAX_ROWS:,} rows" + (f" of {total:,}" if known else ""))
    if width > MAX_COLUMNS:
        cuts.append(f"first {MAX_COLUMNS} columns of {width}")
        rows = [row[:MAX_COLUMNS] for row in rows]
    block = heading(2, f"Sheet: {sheet.title}")
    if rows:
        block += "\n\n" + pipe_table(rows)
    note = f"sheet {sheet.title}: {', '.join(cuts)}" if cuts else ""
    return block, note, bool(rows)


def _rows(values: Iterable[tuple[Any, ...]]) -> tuple[list[list[str]], bool]:
    """The first MAX_ROWS non-empty rows as text, and whether more rows with values follow."""
    grid: list[list[str]] = []
    for row in values:
        cells = [value_text(value) for value in row]
        if not any(cells):
            continue
        if len(grid) == MAX_ROWS:
            return grid, True
        grid.append(cells)
    return grid, False


def value_text(value: object) -> str:
    """A cell's value as a person reads it: `1520` not `1520.0`, dates without midnight."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value).strip()


def html_to_markdown(html: str, url: str | None = None) -> str:
    """The main content of an HTML page as markdown ("" when the page has none)."""
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_links=True,
        include_formatting=True,
        include_tables=True,
        include_comments=False,
    )
    return (text or "").strip()


def markdown_to_html(markdown: str) -> str:
    """Markdown rendered to HTML; raw HTML in it (a hostile asset) is shown as text, never run."""
    from mistletoe import block_token, span_token
    from mistletoe.block_token import Document
    from mistletoe.html_renderer import HtmlRenderer

    from multiverse.store import MISTLETOE_LOCK

    # mistletoe's token lists are module state shared with the table reader: hold its lock,
    # and start from (and leave) the default token set.
    with MISTLETOE_LOCK:
        block_token.reset_tokens()  # type: ignore[no-untyped-call]
        span_token.reset_tokens()  # type: ignore[no-untyped-call]
        renderer = HtmlRenderer(process_html_tokens=False)  # type: ignore[no-untyped-call]
        with renderer:
            return str(renderer.render(Document(markdown)))  # type: ignore[no-untyped-call]
