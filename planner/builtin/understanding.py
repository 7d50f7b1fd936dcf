"""How the offline Planner understands a request and every MODIFY since: visible constraints.

The request is read first, then each MODIFY text in order, each overriding what it restates
(length, audience, language, deliverable), adding what it adds (charts, files to leave out)
and removing what it refuses ("no chart"). Every item records where it came from; what no rule
covers is listed as not understood, never guessed. The I/O is limited to reading the first
lines of the sources' tables, to name the columns a chart asked for will come from.

Also here: where the offline planner finds its inputs.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from multiverse.models import AssetType, CatalogEntry
from multiverse.roles import PlanContext
from multiverse.unread import is_unread, look, open_regular, why_unread
from offline import asks
from planner.mcp import MCP_FILE
from planner.mode import strip_front_matter
from planner.validation import inside_home, path_shape_problem, request_path


def usable(home: Path, path: str) -> bool:
    """Whether `path` is a clean home-relative file path that stays inside the home."""
    return path_shape_problem(path) is None and inside_home(home, path)


def folder_files(home: Path, folder: str, unread: Iterable[str] = ()) -> list[str]:
    """Home-relative paths of the readable visible files under `home/folder`, sorted.

    [] if absent. Left out: hidden names, what T03 may not read (links leaving the home, broken
    links, pipes and the like: `multiverse.unread`) and the paths of `unread` notes.
    """
    root = home / folder
    if root.is_symlink() or not root.is_dir():
        return []
    noted = set(unread)
    found = []
    for path in root.rglob("*"):
        relative = path.relative_to(home).as_posix()
        if relative in noted or not usable(home, relative):
            continue
        if path.is_file() and why_unread(look(path, home)) is None:
            found.append(relative)
    return sorted(found)


def readable_inputs(context: PlanContext, kind: AssetType) -> tuple[list[str], list[str]]:
    """The catalog's input rows of `kind` usable as references, and those that are notes."""
    home = Path(context.home)
    rows, notes = [], []
    for entry in context.catalog:
        if entry.asset_type is not kind:
            continue
        if is_unread(entry):
            notes.append(entry.file_path)
        elif usable(home, entry.file_path):
            rows.append(entry.file_path)
    return rows, notes


def run_rows(context: PlanContext, *types: AssetType) -> list[CatalogEntry]:
    """This run's catalog rows of the given asset types, in catalog order."""
    return [
        entry
        for entry in context.catalog
        if entry.run_id == context.run_id and entry.asset_type in types
    ]


def original_sources(context: PlanContext) -> list[str]:
    """The source files: ORIGINAL_INPUT catalog rows still on disk, else the files in assets/.

    A row that notes a file not read is never a source.
    """
    home = Path(context.home)
    rows, notes = readable_inputs(context, AssetType.ORIGINAL_INPUT)
    on_disk = [path for path in rows if (home / path).is_file()]
    return on_disk or folder_files(home, "assets", notes)


def guideline_docs(context: PlanContext) -> list[str]:
    """Guideline documents (format and style rules), without the MCP list."""
    rows, notes = readable_inputs(context, AssetType.GUIDELINE_DOC)
    docs = rows or folder_files(Path(context.home), "guidelines", notes)
    return [path for path in docs if path != MCP_FILE]


def first_analysis(context: PlanContext) -> list[str]:
    """The run's first analysis (Phase 0, T04) when it is catalogued or on disk."""
    path = f"runs/{context.run_id}/workspace/ANALYZING/first_analysis.md"
    known = any(entry.file_path == path for entry in context.catalog)
    return [path] if known or (Path(context.home) / path).is_file() else []


def fallback_inputs(context: PlanContext) -> list[str]:
    """Inputs when the preferred catalog rows are missing: any of this run's work, the request."""
    produced = [
        entry.file_path
        for entry in context.catalog
        if entry.run_id == context.run_id and entry.asset_type is not AssetType.FINAL_OUTPUT
    ]
    return [request_path(context.run_id), *produced]


def unique(paths: list[str]) -> list[str]:
    """The paths without repeats, first occurrence kept."""
    return list(dict.fromkeys(paths))


HEADER_BYTES = 64 * 1024  # enough for a header and the rows that show which columns are numbers
SAMPLE_ROWS = 50
TABLE_SUFFIXES = (".csv", ".tsv")


@dataclass(frozen=True)
class Item:
    """One thing understood: what it is, its value in words, where it came from."""

    kind: str
    value: str
    origin: str


@dataclass(frozen=True)
class ChartPlan:
    """A chart asked for and the table columns that carry it (None: no table does)."""

    ask: asks.ChartAsk
    said: str
    origin: str
    source: str | None = None
    measure_column: str | None = None
    dimension_column: str | None = None

    def instruction(self) -> str:
        """The CHART instruction's text for this chart (the ask before the colon)."""
        head = f"{self.ask.measure} by {self.ask.dimension}"
        if self.source is None:
            return (
                f"{head}: no table among the sources has a number column named like "
                f"'{self.ask.measure}' and a label column named like '{self.ask.dimension}'"
            )
        return (
            f"{head}: sums of `{self.measure_column}` over every row of `{self.source}`, "
            f"grouped on `{self.dimension_column}`"
        )


@dataclass
class Understanding:
    """Everything the offline Planner took from the request and the MODIFY texts."""

    goal: str
    deliverable: Item
    length: Item
    length_words: int
    language: Item
    audience: Item | None = None
    charts: list[ChartPlan] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # path -> origin
    research: Item | None = None
    not_understood: list[Item] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)

    def items(self) -> list[Item]:
        """The understood items in the order the proposal shows them."""
        found = [self.deliverable]
        found += [self.audience] if self.audience else []
        found += [self.length, self.language]
        found += [Item("CHART", c.instruction(), c.origin) for c in self.charts]
        found += [Item("LEAVE OUT", f"`{p}`", o) for p, o in self.left_out.items()]
        found += [self.research] if self.research else []
        return found


def _quote(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return f'"{flat if len(flat) <= limit else flat[: limit - 1] + "…"}"'


def _table_columns(home: Path, path: str) -> tuple[list[str], set[int]] | None:
    """A table source's header and which of its columns hold numbers (first rows only)."""
    try:
        with open_regular(home / path) as handle:
            data = handle.read(HEADER_BYTES)
    except OSError:
        return None
    text = data.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()[: SAMPLE_ROWS + 1]
    if len(lines) < 2:
        return None
    delimiter = "\t" if path.endswith(".tsv") else max((",", ";", "\t"), key=lines[0].count)
    rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
    header, body = rows[0], [r for r in rows[1:] if any(r)]
    numeric = set()
    for index in range(len(header)):
        cells = [r[index].strip() for r in body if index < len(r) and r[index].strip()]
        if cells and all(_is_number(c) for c in cells) and not _is_time(header[index], cells):
            numeric.add(index)
    return header, numeric


def _is_number(cell: str) -> bool:
    try:
        float(cell.replace(",", "").rstrip("%").lstrip("$€£₩"))
    except ValueError:
        return False
    return True


def _is_time(name: str, cells: list[str]) -> bool:
    lowered = name.casefold()
    named = any(word in lowered for word in ("year", "date", "month", "quarter", "연도", "분기"))
    return named and all(len(c) == 4 and c.isdigit() for c in cells)


def _chart_plan(
    home: Path, sources: list[str], ask: asks.ChartAsk, said: str, origin: str
) -> ChartPlan:
    for source in sources:
        if not source.lower().endswith(TABLE_SUFFIXES):
            continue
        found = _table_columns(home, source)
        if found is None:
            continue
        header, numeric = found
        measure = next(
            (header[i] for i in sorted(numeric) if asks.column_matches(ask.measure, header[i])),
            None,
        )
        labels = [i for i in range(len(header)) if i not in numeric]
        dimension = next(
            (header[i] for i in labels if asks.column_matches(ask.dimension, header[i])), None
        )
        if measure and dimension:
            return ChartPlan(ask, said, origin, source, measure, dimension)
    return ChartPlan(ask, said, origin)


def _descriptions(context: PlanContext, sources: list[str]) -> dict[str, str]:
    """Each source's name and catalog summary: what a "leave out X" is matched against."""
    summaries = {
        e.file_path: e.summary for e in context.catalog if e.asset_type is AssetType.ORIGINAL_INPUT
    }
    return {s: f"{Path(s).stem.replace('_', ' ')} {summaries.get(s, '')}" for s in sources}


def _resolve(phrase: str, descriptions: dict[str, str]) -> list[str]:
    """The sources a phrase names best (by path, else by words of name and summary)."""
    named = [s for s in descriptions if s in phrase or Path(s).name in phrase]
    if named:
        return named
    scores = {s: asks.name_overlap(phrase, d) for s, d in descriptions.items()}
    best = max(scores.values(), default=0)
    return [s for s, score in scores.items() if score == best] if best > 0 else []


class _Reader:
    """Applies one text (the request, then each MODIFY) to the understanding."""

    def __init__(self, context: PlanContext, understanding: Understanding, all_sources: list[str]):
        self.home = Path(context.home)
        self.u = understanding
        self.all_sources = all_sources
        self.descriptions = _descriptions(context, all_sources)

    def apply(self, text: str, origin: str, first: bool) -> list[str]:
        """Read `text`; returns what it changed, in words."""
        u, changes = self.u, []
        where = f"{origin}: "
        length = asks.length_asked(text)
        if length is not None:
            changes.append(f"length {u.length.value} → {length.label}")
            u.length = Item("LENGTH", length.label, where + _quote(length.said))
            u.length_words = length.words
        # "leave out the Korean battery report" names a source, not a new kind of deliverable.
        plain = text
        for phrase in asks.leave_outs(text):
            plain = plain.replace(phrase, " ")
        kind = asks.deliverable_asked(plain)
        if kind is not None and (first or kind[0] != "summary"):
            value = f"an evidence brief (the offline form of the {kind[0]} asked for)"
            if value != u.deliverable.value:
                changes.append(f"deliverable → {kind[0]}")
            u.deliverable = Item("DELIVERABLE", value, where + _quote(kind[1]))
        audience = asks.audience_asked(text)
        if audience is not None:
            changes.append(f"audience → {audience}")
            u.audience = Item("AUDIENCE", audience, where + _quote(audience))
        language = asks.language_asked(text)
        if language is not None:
            changes.append(f"language → {language}")
            u.language = Item("LANGUAGE", language, where + _quote(language))
        changes += self._sources(text, origin)
        changes += self._charts(text, origin)
        changes += self._research(text, origin)
        for clause in asks.judgements_asked(text):
            u.not_understood.append(
                Item(
                    "JUDGEMENT",
                    clause,
                    f"{where}needs a judgement the offline engine does not make",
                )
            )
        return changes

    def _sources(self, text: str, origin: str) -> list[str]:
        u, changes = self.u, []
        named = [p for p in asks.paths_named(text) if not p.startswith(("http", "www"))]
        if named:
            found = [
                s
                for s in self.all_sources
                if any(s.endswith(n) or Path(s).name == n for n in named)
            ]
            missing = [
                n
                for n in named
                if not any(s.endswith(n) or Path(s).name == n for s in self.all_sources)
            ]
            if found:
                u.sources = found
                changes.append(f"sources → {', '.join(found)}")
            for name in missing:
                u.not_understood.append(
                    Item(
                        "SOURCE", name, f"{origin}: names `{name}`, which is not among the sources"
                    )
                )
        for phrase in asks.leave_outs(text):
            if asks.chart_words(phrase) or asks.name_overlap(phrase, "web search internet") >= 1:
                continue  # "without a chart", "no web search": handled as charts and research
            matched = _resolve(phrase, self.descriptions)
            if len(matched) == 1:
                u.left_out[matched[0]] = f"{origin}: {_quote(phrase)}"
                changes.append(f"left out {matched[0]}")
            else:
                why = (
                    f"matches several sources ({', '.join(matched)}); name the file"
                    if matched
                    else "matches no source by name or summary; name the file"
                )
                u.not_understood.append(Item("LEAVE OUT", phrase, f"{origin}: {why}"))
        return changes

    def _charts(self, text: str, origin: str) -> list[str]:
        u = self.u
        if asks.charts_refused(text):
            had = bool(u.charts)
            u.charts = []
            return ["charts removed"] if had else []
        changes = []
        sources = [s for s in u.sources if s not in u.left_out]
        known = {c.ask for c in u.charts}
        for ask in asks.chart_asks(text):
            if ask in known:
                continue
            said = f"{ask.measure} by {ask.dimension}"
            u.charts.append(_chart_plan(self.home, sources, ask, said, f"{origin}: {_quote(said)}"))
            changes.append(f"chart added: {said}")
        if not asks.chart_asks(text) and asks.chart_words(text):
            u.not_understood.append(
                Item(
                    "CHART",
                    ", ".join(asks.chart_words(text)),
                    f'{origin}: names no data to chart; say e.g. "a chart of revenue by country"',
                )
            )
        return changes

    def _research(self, text: str, origin: str) -> list[str]:
        u = self.u
        if asks.search_refused(text):
            had = u.research is not None
            u.research = None
            return ["web search removed"] if had else []
        said = asks.outside_asked(text)
        if said is None:
            return []
        u.research = Item(
            "RESEARCH", "a web search for outside information", f"{origin}: {_quote(said)}"
        )
        return ["web search added"]


def modifications(context: PlanContext) -> list[str]:
    """Every MODIFY text since the first proposal, in order."""
    texts = [t for t in context.modifications if t.strip()]
    if not texts and context.modification and context.modification.strip():
        texts = [context.modification]
    return texts


def understand(context: PlanContext) -> Understanding:
    """The request, then every MODIFY in order, read into visible constraints."""
    goal = strip_front_matter(context.request).strip()
    sources = original_sources(context)
    default = asks.default_length(asks.deliverable_asked(goal))
    understanding = Understanding(
        goal=goal,
        deliverable=Item(
            "DELIVERABLE",
            "an evidence brief (the offline form of a report)",
            "default: nothing named",
        ),
        length=Item("LENGTH", default.label, "default: no length asked"),
        length_words=default.words,
        language=Item(
            "LANGUAGE",
            asks.script_language(goal),
            f"the request is written in {asks.script_language(goal)}",
        ),
        sources=list(sources),
    )
    reader = _Reader(context, understanding, sources)
    reader.apply(goal, "request", first=True)
    for number, text in enumerate(modifications(context), start=1):
        changed = reader.apply(text, f"MODIFY {number}", first=False)
        understanding.changes.append(
            f"MODIFY {number} {_quote(text, 120)}: "
            + ("; ".join(changed) or "nothing a rule reads; kept verbatim")
        )
    return understanding


def sources_instruction(understanding: Understanding) -> str:
    """The SOURCES instruction: the files worked from, then those left out."""
    used = [s for s in understanding.sources if s not in understanding.left_out]
    text = (
        "Work from " + ", ".join(f"`{s}`" for s in used) + "."
        if used
        else "No source files: work from the request text alone."
    )
    if understanding.left_out:
        text += " Left out: " + ", ".join(f"`{s}`" for s in understanding.left_out) + "."
    return text
