"""The one validator of a request spec (SPEC §6a): every item checked against the home's files.

Whether the rules read the request or a model filled the spec, it passes through here before
the proposal shows it: files that do not exist are dropped and said; a file left out is never a
source, a chart's table or a question's; each chart is computed (the same code that draws it
later) and carries its first values, or why it cannot be drawn and the nearest drawable
chart; each question is answered now with its figure and citation, or said unanswerable with
the nearest cells; a web search no provider can make is never promised.

The home looked at before the proposal: a light scan of assets/ and guidelines/.

Each input file with its kind (a table, a document, something else), its title, the tables a
document describes (same stem, or it names the table's file), and each table's profile: its
columns with units, the period it covers and its row count (`multiverse.tabular`). Guidelines
are kept as text, for the format rules they state. Files that may not be read
(`multiverse.unread`) are not looked into.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import structlog
from pydantic import Field

from multiverse.documents import look, source_text, why_unread
from multiverse.home import Home
from multiverse.spec import (
    Chart,
    ChartAsk,
    Computation,
    FileSet,
    Lookup,
    Plain,
    Question,
    Reading,
    RequestSpec,
    Research,
)
from multiverse.tabular import (
    TABLE_SUFFIXES,
    ChartData,
    ChartQuery,
    ComputeQuery,
    Fact,
    LookupQuery,
    TableProfile,
    chart_data,
    compute,
    format_number,
    lookup,
    profile,
)

log = structlog.get_logger(__name__)

TITLE_LIMIT = 120
ABOUT_LIMIT = 600  # characters of a file's first meaningful lines
GUIDELINE_LIMIT = 20_000  # characters of one guideline kept for its format rules
DESCRIPTION_LIMIT = 60_000  # characters of a description given to a table's profile
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", ".docx", ".pdf", ".pptx", ".html", ".htm")

Kind = Literal["table", "document", "other"]


class ScannedFile(Plain):
    """One input file as the scan found it."""

    path: str  # home-relative, posix
    kind: Kind
    title: str = ""
    about: str = ""  # the first meaningful lines of the file (of its description, for a table)
    describes: list[str] = Field(default_factory=list)  # the tables this document describes
    profile: TableProfile | None = None
    note: str = ""  # why a table or document could not be read


class Guideline(Plain):
    """A file of guidelines/ and its text (format rules are read from it)."""

    path: str
    text: str


class HomeScan(Plain):
    """What the home holds, looked at before a proposal."""

    files: list[ScannedFile] = Field(default_factory=list)
    guidelines: list[Guideline] = Field(default_factory=list)
    search_provider: str | None = None  # the configured web_search provider, if any

    def get(self, path: str) -> ScannedFile | None:
        """The scanned file at `path`, if any."""
        return next((item for item in self.files if item.path == path), None)

    def tables(self) -> list[ScannedFile]:
        """The files that are readable tables, in path order."""
        return [item for item in self.files if item.profile is not None]

    def companions(self, path: str) -> list[str]:
        """The files that go with `path`: the documents describing it, or the tables it
        describes."""
        found = [item.path for item in self.files if path in item.describes]
        item = self.get(path)
        return found + (list(item.describes) if item is not None else [])


def scan_home(home: Home, search_provider: str | None = None) -> HomeScan:
    """Look at every readable file of assets/ (and the text of guidelines/)."""
    paths = sorted(_files(home.assets))
    texts = {path: _text(home, path) for path in paths if path.suffix.lower() in DOCUMENT_SUFFIXES}
    documents = [
        ScannedFile(
            path=home.relative(path),
            kind="document",
            title=_title(text or "", path),
            about=first_lines(text or ""),
        )
        for path, text in texts.items()
    ]
    tables = [path for path in paths if path.suffix.lower() in TABLE_SUFFIXES]
    described: dict[str, list[str]] = {}
    files: list[ScannedFile] = []
    for table in tables:
        readers = [path for path in texts if _describes(path, texts[path] or "", table)]
        for reader in readers:
            described.setdefault(home.relative(reader), []).append(home.relative(table))
        found = _table(home, table, [texts[reader] or "" for reader in readers])
        about = " ".join(first_lines(texts[reader] or "") for reader in readers)
        files.append(found.model_copy(update={"about": about[:ABOUT_LIMIT]}))
    files += [
        document.model_copy(update={"describes": described.get(document.path, [])})
        for document in documents
    ]
    known = {item.path for item in files}
    files += [
        ScannedFile(path=home.relative(path), kind="other", title=path.name)
        for path in paths
        if home.relative(path) not in known
    ]
    guidelines = [
        Guideline(path=home.relative(path), text=(_text(home, path) or "")[:GUIDELINE_LIMIT])
        for path in sorted(_files(home.guidelines))
        if path.suffix.lower() in DOCUMENT_SUFFIXES and path.name != "mcp_list.md"
    ]
    return HomeScan(
        files=sorted(files, key=lambda item: item.path),
        guidelines=guidelines,
        search_provider=search_provider,
    )


def _files(folder: Path) -> Iterator[Path]:
    """The regular, readable, visible files under a folder (links leaving the home not followed)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for root, dirs, names in os.walk(folder):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in names:
            if not name.startswith("."):
                yield Path(root) / name


def _text(home: Home, path: Path) -> str | None:
    if why_unread(look(path, home.root)) is not None:
        return None
    text, _note = source_text(home.root, path)
    return text


def _table(home: Home, path: Path, descriptions: list[str]) -> ScannedFile:
    relative = home.relative(path)
    if why_unread(look(path, home.root)) is not None:
        return ScannedFile(path=relative, kind="other", title=path.name, note="not read")
    try:
        found = profile(
            path, root=home.root, descriptions=[d[:DESCRIPTION_LIMIT] for d in descriptions]
        )
    except Exception as error:  # a file that is no table: said in the scan, never a crash
        log.info("table_not_profiled", path=relative, error=str(error))
        return ScannedFile(path=relative, kind="other", title=path.name, note=str(error)[:200])
    return ScannedFile(path=relative, kind="table", title=path.name, profile=found)


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _title(text: str, path: Path) -> str:
    """A document's first heading, else its first non-empty line, else its name."""
    heading = _HEADING.search(text)
    line = heading.group(1) if heading else next((ln for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(line.strip().lstrip("#").split())
    return (line or path.name)[:TITLE_LIMIT]


def _describes(document: Path, text: str, table: Path) -> bool:
    """Whether a document describes a table: the same stem, one stem the other's start, or the
    document names the table's file."""
    doc_stem, table_stem = _stem(document), _stem(table)
    if doc_stem == table_stem or doc_stem.startswith(table_stem) or table_stem.startswith(doc_stem):
        return bool(doc_stem and table_stem)
    return table.name.lower() in text.lower()


def _stem(path: Path) -> str:
    return re.sub(r"[^0-9a-z가-힣]+", "", path.stem.lower())


_NOISE = re.compile(r"https?://\S+|<[^>]+>|`[^`]*`|^\s*\|.*$|^[\s|:-]+$|^\s*```.*$", re.MULTILINE)


def first_lines(text: str) -> str:
    """A text's first meaningful lines: headings and prose, without links, code or table rows
    (never altered otherwise), at most ABOUT_LIMIT characters."""
    kept: list[str] = []
    size = 0
    for line in _NOISE.sub(" ", text).splitlines():
        words = " ".join(line.strip().lstrip("#>*- ").split())
        if len(words) < 3:
            continue
        kept.append(words)
        size += len(words) + 1
        if size >= ABOUT_LIMIT:
            break
    return " ".join(kept)[:ABOUT_LIMIT]


PREVIEW_POINTS = 4


def check_spec(spec: RequestSpec, scan: HomeScan, root: Path) -> RequestSpec:
    """The spec with every item checked against the files (idempotent)."""
    known = {item.path for item in scan.files}
    not_understood = list(spec.not_understood)
    left_out: list[FileSet] = []
    for group in spec.left_out:
        files = [path for path in group.files if path in known]
        if files:
            left_out.append(group.model_copy(update={"files": files}))
        else:
            not_understood.append(
                Reading(phrase=f"{group.reading.phrase}: no such file", origin=group.reading.origin)
            )
    excluded = {path for group in left_out for path in group.files}
    sources = [path for path in (spec.sources or sorted(known)) if path in known - excluded]
    descriptions = _Descriptions(scan, root)
    charts = [_chart(chart, excluded, descriptions, root, spec.language) for chart in spec.charts]
    said = frozenset(_YEAR.findall(" ".join([spec.request, *(c.text for c in spec.changes)])))
    questions = []
    for asked in spec.questions:
        question = _question(asked, excluded, descriptions, root, spec.language, said)
        if question.compute is not None and question.compute != asked.compute:
            not_understood.append(_period_dropped(asked, question.compute))
        questions.append(question)
    return spec.model_copy(
        update={
            "left_out": left_out,
            "sources": sources,
            "charts": charts,
            "questions": questions,
            "research": _research(spec.research, scan),
            "not_understood": not_understood,
        }
    )


class _Descriptions:
    """The description texts of each table (read once per check)."""

    def __init__(self, scan: HomeScan, root: Path) -> None:
        self.scan, self.root = scan, root
        self._texts: dict[str, list[str]] = {}

    def of(self, table: str) -> list[str]:
        if table not in self._texts:
            item = self.scan.get(table)
            readers = [path for path in self.scan.companions(table) if path != table]
            texts = [source_text(self.root, self.root / path)[0] or "" for path in readers]
            self._texts[table] = [text for text in texts if text] if item else []
        return self._texts[table]


def _chart(
    chart: Chart, excluded: set[str], descriptions: _Descriptions, root: Path, language: str
) -> Chart:
    ask = chart.data
    if ask is None:
        return chart.model_copy(update={"drawable": False})
    if ask.file in excluded:
        return chart.model_copy(
            update={"drawable": False, "reason": f"{ask.file} is left out, as you asked"}
        )
    drawn = chart_data(query_of(ask), root=root, descriptions=descriptions.of(ask.file))
    if isinstance(drawn, ChartData):
        return chart.model_copy(
            update={
                "drawable": True,
                "title": drawn.title,
                "preview": preview(drawn),
                "reason": "",
                "alternative": None,
            }
        )
    alternative = drawn.alternatives[0] if drawn.alternatives else None
    return chart.model_copy(
        update={
            "drawable": False,
            "reason": drawn.reason,
            "alternative": ask_of(alternative) if alternative is not None else None,
        }
    )


def query_of(ask: ChartAsk) -> ChartQuery:
    """The table computation a chart asks for."""
    return ChartQuery(
        file=ask.file,
        measures=ask.measures,
        dimension=ask.dimension,
        frequency=ask.frequency if ask.frequency != "week" else None,
        aggregation=ask.aggregation,
        filters=ask.filters,
        series_by=ask.series_by,
        top_n=ask.top_n,
    )


def ask_of(query: ChartQuery) -> ChartAsk:
    """A table computation as a chart asked for (an alternative offered)."""
    return ChartAsk(
        file=query.file,
        measures=query.measures,
        dimension=query.dimension,
        frequency=query.frequency,
        aggregation=query.aggregation,
        filters=query.filters,
        series_by=query.series_by,
        top_n=query.top_n,
    )


def preview(drawn: ChartData) -> list[str]:
    """The chart's first values, as the proposal shows them: `1959: 5.13`."""
    shown: list[str] = []
    for index, label in enumerate(drawn.labels[:PREVIEW_POINTS]):
        values = [
            f"{series.name} {_number(series.values[index])}"
            if len(drawn.series) > 1
            else _number(series.values[index])
            for series in drawn.series
        ]
        shown.append(f"{label}: {', '.join(values)}")
    return shown


def _number(value: float | None) -> str:
    """A chart value as the chart prints it: whole numbers without decimals."""
    if value is not None and float(value).is_integer():
        return format_number(value, 0)
    return format_number(value)


def _question(
    question: Question,
    excluded: set[str],
    descriptions: _Descriptions,
    root: Path,
    language: str,
    said: frozenset[str] = frozenset(),
) -> Question:
    asked = question.lookup or question.compute
    file = asked.file if asked is not None else None
    if file is None:
        return question.model_copy(
            update={"answerable": False, "reason": "no table of the sources holds what it asks"}
        )
    if file in excluded:
        return question.model_copy(
            update={"answerable": False, "reason": f"{file} is left out, as you asked"}
        )
    if question.lookup is not None:
        return _looked_up(question, question.lookup, descriptions.of(file), root, language)
    assert question.compute is not None
    return _computed(question, question.compute, descriptions.of(file), root, language, said)


def _looked_up(
    question: Question, ask: Lookup, descriptions: list[str], root: Path, language: str
) -> Question:
    answer = lookup(
        LookupQuery(file=ask.file, selectors=ask.selectors, column=ask.column),
        root=root,
        descriptions=descriptions,
    )
    return question.model_copy(
        update={
            "answerable": answer.found,
            "answer": answer.sentence(language),
            "reason": "" if answer.found else answer.sentence(language),
        }
    )


def _computed(
    question: Question,
    ask: Computation,
    descriptions: list[str],
    root: Path,
    language: str,
    said: frozenset[str] = frozenset(),
) -> Question:
    fact = compute(_query(ask), root=root, descriptions=descriptions)
    unsaid = {bound: None for bound in ("start", "end") if not _stated(getattr(ask, bound), said)}
    if not isinstance(fact, Fact) and unsaid:
        # A period nobody asked for (a model's guess) that the table does not hold: the
        # question is answered over the periods the table has, and the proposal says so.
        repaired = ask.model_copy(update=unsaid)
        whole = compute(_query(repaired), root=root, descriptions=descriptions)
        if isinstance(whole, Fact):
            ask, fact = repaired, whole
    if isinstance(fact, Fact):
        return question.model_copy(
            update={
                "compute": ask,
                "answerable": True,
                "answer": fact.sentence(language),
                "reason": "",
            }
        )
    return question.model_copy(update={"answerable": False, "reason": fact.reason})


# A year in a period label or in a person's words ("2013Q1", "Q1 2013", "2013년 1분기").
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|2\d\d\d)(?!\d)")


def _stated(label: str | None, said: frozenset[str]) -> bool:
    """Whether a period label is in the person's words (`said`: the years they wrote): no
    label, or one of its years is."""
    if not label:
        return True
    years = set(_YEAR.findall(label))
    return not years or bool(years & said)


def _period_dropped(question: Question, kept: Computation) -> Reading:
    """The note that a period the request never stated, and the table does not hold, was not
    used (said in the proposal, never silently)."""
    ask = question.compute
    assert ask is not None
    dropped = [
        label
        for label, now in ((ask.start, kept.start), (ask.end, kept.end))
        if label and now is None
    ]
    return Reading(
        phrase=(
            f"{question.reading.phrase or ask.measure}: {' and '.join(dropped)} "
            f"{'is' if len(dropped) == 1 else 'are'} neither in the request nor in {ask.file}; "
            f"answered over the periods {ask.file} holds"
        ),
        origin=question.reading.origin,
    )


def _query(ask: Computation) -> ComputeQuery:
    return ComputeQuery(
        kind=ask.kind,
        file=ask.file,
        measure=ask.measure,
        compared=ask.compared,
        category=ask.category,
        start=ask.start,
        end=ask.end,
        frequency=ask.frequency if ask.frequency != "week" else None,
        aggregation=ask.aggregation if ask.aggregation != "count" else None,
        filters=ask.filters,
        whole_periods=ask.whole_periods,
    )


def _research(research: Research | None, scan: HomeScan) -> Research | None:
    if research is None:
        return None
    if scan.search_provider:
        return research.model_copy(update={"provider": scan.search_provider, "note": ""})
    return research.model_copy(
        update={
            "provider": None,
            "note": "no web search provider is configured in runtime-mapping.yaml: nothing "
            "will be searched, and the deliverable says so",
        }
    )
