"""The specialised agents of the offline engine: web_search (an honest note; the queries of a
spec; what a run's search gave, read back for its deliverable) and data_visualization (a
self-contained pygal chart page)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from executor.builtin.charts import (
    ChartSpec,
    chart_page,
    choose,
    comparison_chart,
    figure_block,
    figure_chart,
    page,
    requested_charts,
    text_charts,
)
from executor.builtin.evidence import BANNER, Digest, key_figures
from executor.builtin.extract import extract_text
from executor.builtin.relevance import spec_query
from executor.builtin.sources import MAX_BYTES, decode
from executor.builtin.tablefacts import SourceTexts, draw_charts
from executor.builtin.tables import RawTable, parse_csv, parse_markdown_table
from executor.builtin.text import terms, unique
from multiverse.home import Home
from multiverse.roles import ToolAssignment
from multiverse.spec import RequestSpec

_FILLER = frozenset(
    [
        "search",
        "fetch",
        "find",
        "look",
        "summarise",
        "summarize",
        "task",
        "related",
        "relevant",
        "sources",
        "source",
        "report",
        "figures",
        "citations",
        "recent",
        "two",
        "most",
        "their",
    ]
)
_COMPARE = re.compile(r"compar|largest|across sources|비교|최대", re.IGNORECASE)
# A file path in a purpose ("output runs/<run>/workspace/…") names no subject to search for.
_PATH = re.compile(r"\S*/\S*")
MAX_QUERY = 200  # characters of one query


def _query(text: str, limit: int = 8) -> str:
    words = terms(_PATH.sub(" ", text))
    return " ".join(unique(t for t in words if t not in _FILLER)[:limit])


def spec_queries(spec: RequestSpec) -> list[str]:
    """A spec's web queries: its research queries, then its questions in their own words (paths
    left out); else the request's subject words without the clauses that leave files out."""
    asked = list(spec.research.queries) if spec.research is not None else []
    asked += [_PATH.sub(" ", question.reading.phrase) for question in spec.questions]
    found = unique(" ".join(query.split())[:MAX_QUERY] for query in asked if query.strip())
    return found or unique(q for q in [_query(spec_query(spec))] if q)


def search_queries(assignment: ToolAssignment) -> list[str]:
    """The queries a web search would run for this tool task, most specific first (the spec's,
    when the run has one)."""
    if assignment.spec is not None:
        return spec_queries(assignment.spec)
    task = assignment.task
    candidates = [
        _query(assignment.tool_task.tool_task_purpose),
        _query(f"{task.task_name} {task.task_purpose}"),
        _query(assignment.request, 6),
    ]
    return unique(q for q in candidates if q)


def web_search_note(assignment: ToolAssignment, reason: str | None = None) -> str:
    """The note that stands in for a web search that is not made (`reason`: why, if known)."""
    tool = assignment.tool_task
    why = (
        f"{reason}: no search provider could be used, so nothing was searched or fetched."
        if reason
        else "The builtin offline engine has no network access: it cannot search the web or "
        "fetch pages, and it does not pretend to."
    )
    queries = search_queries(assignment) or ["(no query could be derived from the task)"]
    lines = [
        BANNER,
        "",
        f"{NOT_PERFORMED}: {tool.tool_task_name}",
        "",
        f"- **Run:** `{assignment.run_id}` · **Tool task:** `{tool.tool_task_id}` ({tool.timing})",
        f"- **For task:** `{assignment.task.task_id}` {assignment.task.task_name}",
        f"- **Purpose:** {' '.join(tool.tool_task_purpose.split()) or '(none given)'}",
        "",
        "**No web search was performed and there are no search results here.** "
        f"{why} The task goes on with the material already in the home.",
        "",
        "## Queries it would have run",
        "",
        *(f"{n}. `{query}`" for n, query in enumerate(queries, 1)),
        "",
        "## What you can do",
        "",
        "- Configure a language model in `runtime-mapping.yaml` (`tier_mapping`, e.g. "
        "`anthropic/…` or `openai/…`) with its API key in the environment, and map `web_search` "
        "in `tool_mapping` to a search provider; then ask for the run to be retried.",
        "- Or run the queries above yourself and save what you find into `assets/`; the next run "
        "will analyse it.",
    ]
    return "\n".join(lines) + "\n"


NOTHING_USABLE = "# Web search returned nothing usable"
NOT_PERFORMED = "# Web search not performed"


def nothing_usable_note(
    assignment: ToolAssignment, why: str, queries: list[str] | None = None
) -> str:
    """The note of a search that was made and gave nothing to quote (the brief says so);
    `queries`: those searched, when not the task's own (a model planned them)."""
    tool = assignment.tool_task
    searched = search_queries(assignment) if queries is None else queries
    lines = [
        BANNER,
        "",
        f"{NOTHING_USABLE}: {tool.tool_task_name}",
        "",
        f"- **Run:** `{assignment.run_id}` · **Tool task:** `{tool.tool_task_id}` ({tool.timing})",
        "",
        f"**The search was made and nothing usable came of it.** {why}",
        "",
        "## Queries",
        "",
        *(f"- `{query}`" for query in searched),
    ]
    return "\n".join(lines) + "\n"


def spec_chart_page(assignment: ToolAssignment, home: Path) -> str | None:
    """The page of the charts the confirmed spec asks for, drawn from their tables by the code
    that draws the offline brief's (never from numbers a model wrote); None when the spec asks
    for none it can draw."""
    spec = assignment.spec
    if spec is None or not any(chart.drawable and chart.data for chart in spec.charts):
        return None
    tool = assignment.tool_task
    slug = re.sub(r"[^A-Za-z0-9-]", "-", tool.tool_task_id)
    texts = SourceTexts(home, spec.kept())
    drawn = draw_charts(spec, texts, slug, "no table of the sources carries it")
    blocks = [figure_block(d.svg, f"{d.title}. Source: {chart.data.file}")
              for chart, d in zip(spec.charts, drawn, strict=True)
              if d.data is not None and chart.data is not None]  # fmt: skip
    if not blocks:
        return None
    missed = [f"<p>Not drawn: {html.escape(d.said or d.title)}: {html.escape(d.why)}</p>"
              for d in drawn if d.data is None]  # fmt: skip
    title = html.unescape(tool.tool_task_name)
    body = f"<h1>{html.escape(title)}</h1>\n" + "\n".join(blocks + missed)
    return page(title, body, lang=spec.language)


def visualization_page(
    assignment: ToolAssignment,
    texts: dict[str, tuple[str, str]],
    digests: list[Digest],
    sources: dict[str, tuple[str, str]] | None = None,
) -> tuple[str, list[ChartSpec]]:
    """The chart page for the material (`texts`: source → (suffix, text)) and the charts in it.

    A chart asked for by name is drawn from the original `sources` (the assets) first, then
    from the material: a chart "from the data" is from the data, not from a note about it.
    """
    tool = assignment.tool_task
    specs: list[ChartSpec] = []
    if _COMPARE.search(tool.tool_task_purpose):
        comparison = comparison_chart(digests)
        specs = [comparison] if comparison is not None else []
    if not specs:
        found = [
            c for source, (suffix, text) in texts.items() for c in text_charts(text, source, suffix)
        ]
        specs = choose(found, 3)
    if not specs:
        fallback = figure_chart(key_figures(digests, 12), "Figures in the material", False)
        specs = [fallback] if fallback is not None else []
    # A chart asked for by name comes first, drawn from the whole table that holds it.
    asked = f"{tool.tool_task_purpose}\n{assignment.task.task_purpose}\n{assignment.request}"
    tables = tables_in({**(sources or {}), **texts})
    requested = requested_charts(asked, tables)
    # Charts asked for by name are the page; others only when none was asked for.
    specs = requested or specs[:3]
    intro = f"{tool.tool_task_purpose} Material: {', '.join(texts) or 'none'}."
    slug = re.sub(r"[^A-Za-z0-9-]", "-", tool.tool_task_id)
    return chart_page(html.unescape(tool.tool_task_name), intro.strip(), specs, slug), specs


def tables_in(texts: dict[str, tuple[str, str]]) -> list[tuple[RawTable, str]]:
    """Every table of the material (CSV files whole, markdown tables), with its source."""
    found: list[tuple[RawTable, str]] = []
    for source, (suffix, text) in texts.items():
        if suffix in (".csv", ".tsv"):
            found.append((parse_csv(text), source))
            continue
        for lines in extract_text(text, source.rsplit("/", 1)[-1]).table_lines:
            table = parse_markdown_table(lines)
            if table is not None:
                found.append((table, source))
    return found


def read_texts(home: Path, paths: list[Path]) -> dict[str, tuple[str, str]]:
    """Decoded text of each readable file, by its home-relative path (binary files left out)."""
    texts: dict[str, tuple[str, str]] = {}
    for path in paths:
        with path.open("rb") as handle:
            text = decode(handle.read(MAX_BYTES))
        if text is not None:
            texts[path.relative_to(home).as_posix()] = (path.suffix.lower(), text)
    return texts


@dataclass(frozen=True)
class Quote:
    """A passage a fetched page gave, with the page."""

    title: str
    url: str
    passage: str


@dataclass(frozen=True)
class WebOutcome:
    """What the web search planned for the run gave: passages, nothing usable, or no search."""

    outcome: Literal["none", "found", "nothing", "not_made"]
    quoted: list[Quote] = field(default_factory=list)
    why: str = ""


HEAD_CHARS = 600  # where a summary's or a note's mark stands


def _run_files(home: Path, run_id: str) -> list[Path]:
    """The markdown files of the run's workspace and outputs (where tool tasks write)."""
    layout = Home(home)
    folders = [layout.run(run_id).workspace, layout.root / "outputs" / run_id]
    return [path for folder in folders if folder.is_dir()
            for path in sorted(folder.rglob("*.md")) if path.is_file()]  # fmt: skip


def web_outcome(home: Path, run_id: str, spec: RequestSpec | None, no_provider: str) -> WebOutcome:
    """The run's web search, read back from the summaries and notes its tool tasks wrote: the
    quoted passages only, never the search's own lines (purpose, provider, fetched, refused)."""
    from executor.search import is_summary, read_findings

    quoted: list[Quote] = []
    nothing = not_made = False
    for path in _run_files(home, run_id):
        text = path.read_text(encoding="utf-8", errors="replace")
        if is_summary(text):
            quoted += [Quote(q.title, q.url, q.passage) for q in read_findings(text)]
        nothing = nothing or NOTHING_USABLE in text[:HEAD_CHARS]
        not_made = not_made or NOT_PERFORMED in text[:HEAD_CHARS]
    if quoted:
        return WebOutcome("found", quoted)
    if nothing:
        return WebOutcome("nothing")
    research = spec.research if spec is not None else None
    if not_made or research is not None:
        english = spec is None or spec.language == "en"
        note = research.note if research is not None and english and research.note else ""
        return WebOutcome("not_made", why=note or no_provider)
    return WebOutcome("none")
