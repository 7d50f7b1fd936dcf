"""PowerPoint (.pptx): each slide under `## Slide N: title`, its text, tables and notes."""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO

from executor.documents.converted import Converted, plural, unreadable
from executor.documents.markdown import heading, pipe_table, plain_line

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
    read = [(_title(slide), _body(slide)) for slide in slides[:MAX_SLIDES]]
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


def _title(slide: Slide) -> str:
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
