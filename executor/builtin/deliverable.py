"""The deliverable made from the confirmed request spec (SPEC §6a): the answers to its questions
first, then the facts computed from the tables that bear on the question, the charts the
proposal previewed, the documents' passages ranked by the request's own words, what the web
search gave, the sources and what a model would add.

In the requester's language (every fixed word from `brief_words.yaml`), within the length
asked, shaped by the format rules (or saying which it could not follow), every number traced;
a file left out is never read, cited or listed but in the one line that says it was left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import structlog

from executor.builtin.brief import Written
from executor.builtin.charts import ChartImage, report_html, report_title
from executor.builtin.delivery import write_delivery
from executor.builtin.evidence import BANNER, Passage, is_conclusion, split_passages
from executor.builtin.relevance import rank, spec_query, subject_words, without_left_out
from executor.builtin.specialists import WebOutcome, web_outcome
from executor.builtin.tablefacts import (
    Answer,
    Drawn,
    SourceTexts,
    answer,
    axis_title,
    draw_charts,
    is_table,
    standard_facts,
)
from executor.builtin.text import shorten, words
from multiverse.atomic import atomic_write_text
from multiverse.documents import export_report
from multiverse.models import AssetType
from multiverse.spec import RequestSpec
from multiverse.tabular import Fact
from multiverse.trace import Known, with_untraced
from offline.asks import TOLERANCE

log = structlog.get_logger(__name__)

MAX_VALUES = 12  # a chart with more points shows its values in the drawing only
MAX_SERIES = 4
FACTS_SHARE = 0.6  # of the length: the facts first, then the documents' passages
CONCLUSIONS_SHARE = 0.3  # of the length at most: the sources' own conclusions, quoted first
MAX_CONCLUSIONS = 8
_WORD = re.compile(r"\w+")


def count_words(markdown: str) -> int:
    """The words of a text as people count them: whitespace-separated tokens holding a letter or
    a digit (`1,234.5` is one word, `—` none)."""
    return len([token for token in markdown.split() if _WORD.search(token)])


@dataclass(frozen=True)
class Shape:
    """How the format rules shape the brief."""

    no_tables: bool
    bullets: bool
    no_charts: bool
    no_headings: bool
    max_words: int | None

    @classmethod
    def of(cls, spec: RequestSpec) -> Shape:
        """The spec's format rules, read once."""
        limit = next((r.value for r in spec.format_rules if r.rule == "max_words"), "")
        digits = re.sub(r"[^\d]", "", limit)
        return cls(spec.has_rule("no_tables"), spec.has_rule("bullets"),
                   spec.has_rule("no_charts"), spec.has_rule("no_headings"),
                   int(digits) if digits else None)  # fmt: skip


@dataclass
class Brief:
    """Everything a brief may say, gathered at the edge; `facts` and `passages` are chosen to
    fill the length."""

    spec: RequestSpec
    w: dict[str, str]
    shape: Shape
    title: str
    answers: list[Answer]
    charts: list[Drawn]
    web: WebOutcome
    terms: list[str]
    facts: list[tuple[int, int, Fact]] = field(default_factory=list)  # (measure, rank, fact)
    conclusions: list[Passage] = field(default_factory=list)  # the sources' own, quoted
    passages: list[Passage] = field(default_factory=list)
    not_followed: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)  # what was asked and not done (delivery.json)

    def skip(self, said: str, todo: str) -> None:
        """Record a request or rule not followed: said in the brief, listed as not done."""
        self.not_followed.append(said)
        self.todo.append(todo)

    @property
    def lang(self) -> str:
        """The language the brief is written in."""
        return self.spec.language

    def heading(self, text: str, level: int = 2) -> list[str]:
        """A heading, or a bold line where headings are not to be used."""
        line = f"**{text}**" if self.shape.no_headings else f"{'#' * level} {text}"
        return [line, ""]

    def item(self, number: int, text: str) -> str:
        """One item of a list: a bullet where bullets are asked, else numbered."""
        return f"- {text}" if self.shape.bullets else f"{number}. {text}"


def _cite_passage(passage: Passage, w: dict[str, str]) -> str:
    section = passage.section.replace("(", "[").replace(")", "]")
    where = f"§ {section}, " if section else ""
    return f"(`{passage.source}`, {where}{w['line'].format(line=passage.line)})"


def _head(brief: Brief) -> list[str]:
    w, spec = brief.w, brief.spec
    notice = BANNER if brief.lang == "en" else f"> {w['notice']}"
    lines = [notice, "", *brief.heading(brief.title, 1)]
    about = [f"**{w['for']}:** {spec.audience}"] if spec.audience else []
    kind = w.get(f"kind_{spec.deliverable}", spec.deliverable if brief.lang == "en" else "")
    about.append(f"**{w['asked']}:** {kind or w['kind_other']}")
    return [*lines, " · ".join(about), "", f"_{w['offline']}_", ""]


def _answers(brief: Brief) -> list[str]:
    if not brief.answers:
        return []
    lines = brief.heading(brief.w["answers"])
    for number, found in enumerate(brief.answers, 1):
        text = found.sentence if found.found else brief.w["not_answered"].format(
            said=found.said, why=found.sentence)  # fmt: skip
        lines += [brief.item(number, text) if brief.shape.bullets else text, ""]
    return lines


def _facts(brief: Brief) -> list[str]:
    if not brief.facts:
        return []
    ordered = sorted(brief.facts, key=lambda item: item[:2])
    lines = [brief.item(n, fact.sentence(brief.lang)) for n, (_, _, fact) in enumerate(ordered, 1)]
    return [*brief.heading(brief.w["facts"]), *lines, ""]


def _values(brief: Brief, drawn: Drawn) -> list[str]:
    data = drawn.data
    if data is None or len(data.labels) > MAX_VALUES or len(data.series) > MAX_SERIES:
        return []
    values = iter(drawn.printed)
    by_series = [[next(values) for _ in data.labels] for _ in data.series]
    rows = [[label, *(column[i] for column in by_series)] for i, label in enumerate(data.labels)]
    if brief.shape.no_tables:
        names = [s.name for s in data.series]
        shown = [f"- {row[0]}: " + "; ".join(
            value if len(names) == 1 else f"{name} {value}" for name, value in zip(
                names, row[1:], strict=True)) for row in rows]  # fmt: skip
        return [brief.w["chart_values"], "", *shown, ""]
    header = [axis_title(data, brief.lang), *(s.name for s in data.series)]
    table = ["| " + " | ".join(header) + " |", "|" + " --- |" + " ---: |" * len(data.series)]
    return [*table, *("| " + " | ".join(row) + " |" for row in rows), ""]


def _charts(brief: Brief) -> list[str]:
    if not brief.charts:
        return []
    lines = brief.heading(brief.w["charts"])
    for drawn in brief.charts:
        if drawn.data is None:
            lines += [brief.w["chart_not_drawn"].format(said=drawn.said, why=drawn.why), ""]
            continue
        cite = drawn.data.citation.text(brief.lang)
        lines += [f"![{drawn.title}]({drawn.file_name})", "", *_values(brief, drawn)]
        lines += [f"_{brief.w['chart_from'].format(citation=cite)}_", ""]
        if brief.lang == "en" and drawn.data.notes:
            lines += [f"_{'; '.join(drawn.data.notes).capitalize()}._", ""]
    return lines


def _web(brief: Brief) -> list[str]:
    web = brief.web
    if web.outcome == "none":
        return []
    lines = brief.heading(brief.w["web"])
    if web.outcome == "nothing":
        return [*lines, brief.w["web_none"], ""]
    if web.outcome == "not_made":
        return [*lines, brief.w["web_not_made"].format(why=web.why), ""]
    for number, quoted in enumerate(web.quoted, 1):
        text = " ".join(quoted.passage.split())
        lines.append(brief.item(number, f"“{text}” ([{quoted.title or quoted.url}]({quoted.url}))"))
    return [*lines, ""]


def _conclusions(brief: Brief) -> list[str]:
    if not brief.conclusions:
        return []
    lines = brief.heading(brief.w["conclude"])
    for number, passage in enumerate(brief.conclusions, 1):
        text = " ".join(passage.text.split())  # the source's words and advice, never ours
        lines.append(brief.item(number, f"“{text}” {_cite_passage(passage, brief.w)}"))
    return [*lines, ""]


def _passages(brief: Brief) -> list[str]:
    if not brief.passages:
        return []
    terms = ", ".join(brief.terms) or "—"
    lines = [*brief.heading(brief.w["passages"]), f"_{brief.w['ranked'].format(terms=terms)}_", ""]
    for number, passage in enumerate(brief.passages, 1):
        text = " ".join(passage.text.split())  # quoted: the source's words, never the engine's
        lines.append(brief.item(number, f"“{text}” {_cite_passage(passage, brief.w)}"))
    return [*lines, ""]


def _tail(brief: Brief, sources: list[str]) -> list[str]:
    w = brief.w
    lines: list[str] = []
    if brief.not_followed:
        lines += [*brief.heading(w["not_followed"]), *(f"- {i}" for i in brief.not_followed), ""]
    lines += [*brief.heading(w["sources"]), *(f"- `{source}`" for source in sources)]
    lines += [f"- <{quoted.url}>" for quoted in brief.web.quoted]
    left_out = sorted(brief.spec.excluded())
    if left_out:
        lines += ["", w["left_out"].format(files=", ".join(f"`{path}`" for path in left_out))]
    kind = w.get(f"kind_{brief.spec.deliverable}", w["kind_other"])
    return [*lines, "", *brief.heading(w["model"]), w["model_text"].format(kind=kind), ""]


def render(brief: Brief, sources: list[str]) -> str:
    """The brief as markdown, with the facts and passages chosen so far."""
    parts = [_head(brief), _answers(brief), _conclusions(brief), _facts(brief), _charts(brief),
             _web(brief), _passages(brief), _tail(brief, sources)]  # fmt: skip
    return "\n".join(line for part in parts for line in part).rstrip() + "\n"


def _round_robin(lists: list[list[Fact]]) -> list[tuple[int, int, Fact]]:
    """The facts of every measure taken in turn, the most telling of each first."""
    depth = max((len(found) for found in lists), default=0)
    return [(index, rank, found[rank]) for rank in range(depth)
            for index, found in enumerate(lists) if rank < len(found)]  # fmt: skip


def _charts_refused(spec: RequestSpec, w: dict[str, str]) -> list[Drawn]:
    """Every chart asked, not drawn because a format rule says no charts."""
    rule = next(r for r in spec.format_rules if r.rule == "no_charts")
    why = w["chart_rule"].format(rule=rule.reading.phrase or rule.rule, origin=rule.reading.origin)
    return [Drawn(chart.reading.phrase, why=why) for chart in spec.charts]


@dataclass
class Gathered:
    """A brief before its length is filled, with the pools it is filled from."""

    brief: Brief
    texts: SourceTexts
    facts: list[list[Fact]]
    ranked: list[tuple[Passage, float]]


def gather(home: Path, spec: RequestSpec, run_id: str, stem: str, purpose: str = "") -> Gathered:
    """Read the spec's sources (never a file left out) and compute what the brief may say."""
    w = words(spec.language)
    texts = SourceTexts(home, spec.kept())
    shape = Shape.of(spec)
    charts = (_charts_refused(spec, w) if shape.no_charts and spec.charts
              else draw_charts(spec, texts, stem, w["chart_refused"]))  # fmt: skip
    passages = [passage for path in texts.sources if not is_table(path)
                if (text := texts.text(path)) for passage in split_passages(path, text)]
    query = spec_query(spec, purpose)
    brief = Brief(
        spec=spec, w=w, shape=shape,
        title=deliverable_title(spec.request, spec),
        answers=[answer(q, texts, spec.language, w["no_answer"]) for q in spec.questions],
        charts=charts, web=web_outcome(home, run_id, spec, w["web_no_provider"]),
        terms=subject_words(query),
    )  # fmt: skip
    return Gathered(brief, texts, standard_facts(spec, texts), rank(passages, query))


def deliverable_title(request: str, spec: RequestSpec | None) -> str:
    """The deliverable's title: the request's first heading, else its first sentence, with
    no file the spec leaves out named."""
    return report_title(without_left_out(spec, request) if spec is not None else request)


_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+(?P<text>.+)$")


def _items_within(brief: Brief, text: str) -> None:
    """A limit on each item's words ("every bullet under 25 words"): said where items pass it
    (a computed fact is never cut: its figure and citation are what it is for)."""
    rule = next((r for r in brief.spec.format_rules if r.rule == "item_words"), None)
    limit = int(re.sub(r"[^\d]", "", rule.value) or 0) if rule is not None else 0
    if rule is None or not limit:
        return
    items = [m["text"] for line in text.splitlines() if (m := _ITEM.match(line))]
    longer = sum(count_words(item) > limit for item in items)
    if longer:
        said = {"rule": rule.reading.phrase or rule.value, "origin": rule.reading.origin}
        why = brief.w["item_words"].format(**said, longer=longer, items=len(items))
        brief.skip(why, brief.w["todo_rule"].format(rule=said["rule"], why=why))


def fill(gathered: Gathered) -> str:
    """The brief within its length: the facts that bear on the question first, then the
    passages best matching the request (never one that matches none of its words)."""
    brief, spec, w = gathered.brief, gathered.brief.spec, gathered.brief.w
    sources = gathered.texts.sources
    target, stated = spec.length()
    upper = target * (1 + TOLERANCE) if stated else float(target)
    limit = brief.shape.max_words
    rule = next((r for r in spec.format_rules if r.rule == "max_words"), None)
    if limit is not None and rule is not None:
        said = {"rule": rule.reading.phrase or rule.value, "origin": rule.reading.origin}
        if count_words(render(brief, sources)) > limit:
            why = w["rule_words"].format(**said)
            brief.skip(why, w["todo_rule"].format(rule=said["rule"], why=why))
        if stated and target * (1 - TOLERANCE) > limit:
            why = w["length_capped"].format(**said)
            brief.skip(why, w["todo_rule"].format(rule=said["rule"], why=why))
        target, upper = min(target, limit), min(upper, limit)

    def fit(chosen: list[object], pool: list[object], until: float) -> None:
        for item in pool:
            if count_words(render(brief, sources)) >= until:
                return
            chosen.append(item)
            if count_words(render(brief, sources)) > upper:
                chosen.pop()

    relevant = [p for p, score in gathered.ranked if score > 0]
    # The conclusions of every source that bears on the request, the best-matching first.
    bearing = {p.source for p in relevant}
    quoted = [p for p, _ in gathered.ranked if is_conclusion(p) and p.source in bearing]
    fit(cast(list[object], brief.conclusions), cast(list[object], quoted[:MAX_CONCLUSIONS]),
        target * CONCLUSIONS_SHARE)
    relevant = [p for p in relevant if p not in brief.conclusions]
    facts = _round_robin(gathered.facts)
    # The facts lead, leaving room for what the documents say; more facts if room is left.
    fit(cast(list[object], brief.facts), list(facts), target * FACTS_SHARE)
    fit(cast(list[object], brief.passages), list(relevant), target)
    fit(cast(list[object], brief.facts), [f for f in facts if f not in brief.facts], target)
    _items_within(brief, render(brief, sources))
    if stated:
        # passages that match none of the request's words are never filler: a brief short of
        # the length asked says so rather than quote what does not bear on the request
        capped = limit is not None and limit < target * (1 - TOLERANCE)
        if count_words(render(brief, sources)) < target * (1 - TOLERANCE) and not capped:
            brief.skip(w["length_short"], w["todo_length"])
    return render(brief, sources)


def not_done(brief: Brief) -> list[str]:
    """Every item of the spec the brief did not do, in the brief's language."""
    w = brief.w
    items = [w["todo_chart"].format(said=d.said, why=d.why) for d in brief.charts if d.data is None]
    items += [w["todo_question"].format(said=a.said, why=a.sentence)
              for a in brief.answers if not a.found]  # fmt: skip
    items += brief.todo
    if brief.web.outcome == "nothing":
        items.append(w["todo_web"])
    elif brief.web.outcome == "not_made":
        items.append(w["todo_web_not_made"].format(why=brief.web.why))
    return items


def known_texts(gathered: Gathered) -> list[str]:
    """Every text whose numbers the brief may state: its sources, the request, the rules it
    follows, and every answer, fact and chart value it computed."""
    brief, texts = gathered.brief, gathered.texts
    spec = brief.spec
    for table in [path for path in texts.sources if is_table(path)]:
        texts.text(table)
    found = [spec.request, *(change.text for change in spec.changes), spec.audience or ""]
    found += [f"{rule.reading.phrase} {rule.value}" for rule in spec.format_rules]
    found += list(texts.read().values())
    found += [item.sentence for item in brief.answers]
    found += [fact.sentence(brief.lang) for facts in gathered.facts for fact in facts]
    for drawn in brief.charts:
        found += [drawn.title, *drawn.printed]
        if drawn.data is not None:
            found += [*drawn.data.notes, drawn.data.citation.text(brief.lang), drawn.data.x_label]
    return found + [quoted.passage for quoted in brief.web.quoted]


def publish_spec_brief(
    home: Path, run_id: str, spec: RequestSpec, markdown_path: Path, purpose: str = ""
) -> list[Written]:
    """Write the brief of a confirmed spec (markdown, self-contained HTML, its Word and PDF
    exports, chart SVGs) and the run's delivery record (`purpose`: the publishing task's, whose
    subject words rank too)."""
    stem = markdown_path.stem
    gathered = gather(home, spec, run_id, stem, purpose)
    brief = gathered.brief
    markdown, untraced = with_untraced(fill(gathered), Known.of(known_texts(gathered)),
                                       brief.w["untraced"], brief.w["untraced_intro"],
                                       brief.shape.no_headings)  # fmt: skip
    folder = markdown_path.parent
    images = [ChartImage(file_name=d.file_name, caption=d.title, svg=d.svg)
              for d in brief.charts if d.data is not None]  # fmt: skip
    for image in images:
        atomic_write_text(folder / image.file_name, image.svg + "\n")
    atomic_write_text(markdown_path, markdown)
    html_path = folder / f"{stem}.html"
    notice = "" if brief.lang == "en" else brief.w["notice"]
    page = report_html(markdown, shorten(brief.title, 100), images, notice, brief.lang)
    atomic_write_text(html_path, page)
    exported = export_report(markdown_path, markdown, shorten(brief.title, 100), brief.lang, images)
    record = write_delivery(home, run_id, not_done(brief), len(untraced))
    return [
        Written(markdown_path, AssetType.FINAL_OUTPUT),
        Written(html_path, AssetType.FINAL_OUTPUT),
        *(Written(path, AssetType.FINAL_OUTPUT) for path in exported.written),  # .docx, .pdf
        *(Written(folder / image.file_name, AssetType.TOOL_OUTPUT) for image in images),
        Written(record, AssetType.TOOL_OUTPUT),  # what was asked and not done, catalogued
    ]
