"""The material of an evidence brief: the passages of the task's references and their tables.

I/O: reads each reference the task names (a folder gives its files). Text documents (and
documents converted to markdown: PDF, Word, Excel, PowerPoint, HTML) are split into passages;
tables (CSV, TSV) are kept for the charts; the engine's own working documents are not quoted
again (their facts come from the same sources), except when nothing else is referenced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from executor.builtin.evidence import is_builtin_document, read_document
from executor.builtin.passages import Passage, split_passages
from executor.builtin.paths import TaskError, relative, resolve_reference
from executor.builtin.sources import entries, source_text

TABLE_SUFFIXES = (".csv", ".tsv")
CHART_SUFFIXES = (".html", ".htm", ".svg")


@dataclass
class Material:
    """Passages to rank and quote, tables to chart, and the files read."""

    passages: list[Passage] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    cited: list[Passage] = field(default_factory=list)  # from the engine's own documents
    notes: dict[str, str] = field(default_factory=dict)  # file -> why it gave no passages


def _is_request(source: str) -> bool:
    parts = source.split("/")
    return len(parts) == 3 and parts[0] == "runs" and parts[2] == "request.md"


def gather(home: Path, references: list[str]) -> Material:
    """The passages and tables of the references, in reference order."""
    material = Material()
    for reference in references:
        try:
            files = entries(resolve_reference(home, reference))
        except TaskError as error:
            material.notes[reference] = str(error)
            continue
        for path in files:
            source = relative(home, path)
            if _is_request(source) or source in material.sources:
                continue
            suffix = path.suffix.lower()
            if suffix in TABLE_SUFFIXES:
                material.tables.append(source)
                material.sources.append(source)
                continue
            if suffix in CHART_SUFFIXES and ("runs/" in source or "outputs/" in source):
                continue  # a chart the engine drew: not a source of statements
            text, note = source_text(home, path)
            if text is None:
                material.notes[source] = note
                continue
            if is_builtin_document(text):
                material.cited += [
                    Passage(text=point.text, source=point.source, section="", line=0)
                    for digest in read_document(text)
                    for point in digest.points
                ]
                continue
            material.sources.append(source)
            material.passages += split_passages(source, text)
    if not material.passages and material.cited:
        material.passages = material.cited
        material.sources += list(dict.fromkeys(p.source for p in material.cited))
    return material
