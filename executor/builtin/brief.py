"""The offline deliverable: an evidence brief for the request within the length asked, made from
the passages of the task's references, and published into outputs/<run_id>/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from executor.builtin.brief_spec import BriefSpec, DrawnChart, brief_spec, draw, totals_table
from executor.builtin.charts import report_html
from executor.builtin.evidence import (
    BANNER,
    Passage,
    is_builtin_document,
    is_conclusion,
    read_document,
    split_passages,
)
from executor.builtin.relevance import rank, subject_words
from executor.builtin.sources import TaskError, entries, relative, resolve_reference
from executor.builtin.text import shorten
from multiverse.atomic import atomic_write_text
from multiverse.documents import export_report, source_text
from multiverse.models import AssetType
from multiverse.roles import TaskAssignment
from offline.asks import TOLERANCE, sources_in

LABELS = {
    "English": {
        "title": "Evidence brief",
        "for": "For",
        "asked": "Asked for",
        "offline": (
            "Made offline by the builtin engine, without a language model: it gathers, ranks "
            "and quotes what the sources say, and makes no judgement of its own; where the "
            "sources advise, they are quoted as theirs."
        ),
        "question": "The question",
        "conclude": "What the sources conclude (quoted)",
        "facts": "Facts that bear on the question",
        "ranked": "Ranked by how well they match the request's words ({terms}), BM25.",
        "other": "Other statements in the sources (no words in common with the request)",
        "charts": "Charts asked for",
        "not_drawn": "The chart of {said} was not drawn: {why}.",
        "chart_note": "Source: `{source}`, every one of its {rows:,} rows{period}; units as the "
        "column names them.",
        "sources": "Sources",
        "used": "{count} passage(s) used",
        "charted": "a table, charted above over all its rows",
        "table": "a table; no chart was asked of it",
        "left_out": "Left out at your request: {files}.",
        "model": "What a model would add",
        "model_text": (
            "A language model (configure one in runtime-mapping.yaml) would weigh these facts "
            "against the reader's goals, reconcile figures that disagree, say what is missing, "
            "and write the argued {kind} asked for, with advice of its own."
        ),
        "length": "Length: {words:,} words for the {label} asked.",
        "short": "The sources hold no more material that fits; this brief is shorter than the "
        "{label} asked.",
    },
    "Korean": {
        "title": "근거 자료 요약",
        "for": "대상",
        "asked": "요청된 형식",
        "offline": (
            "언어 모델 없이 내장 엔진이 오프라인으로 만들었습니다. "
            "자료의 내용을 모으고 순위를 매겨 인용할 뿐, 자체 판단이나 권고는 하지 않습니다. "
            "자료가 제시한 결론은 자료의 것으로 인용합니다."
        ),
        "question": "질문",
        "conclude": "자료의 결론 (인용)",
        "facts": "질문과 관련된 사실",
        "ranked": "요청의 단어({terms})와의 관련도(BM25) 순.",
        "other": "자료의 다른 내용 (요청과 겹치는 단어 없음)",
        "charts": "요청된 차트",
        "not_drawn": "{said} 차트는 그리지 못했습니다: {why}.",
        "chart_note": "출처: `{source}`, 전체 {rows:,}행{period}; 단위는 열 이름에 따름.",
        "sources": "출처",
        "used": "{count}개 문장 사용",
        "charted": "표: 위 차트에 전체 행을 사용",
        "table": "표: 요청된 차트 없음",
        "left_out": "요청에 따라 제외: {files}.",
        "model": "언어 모델이 더할 수 있는 것",
        "model_text": (
            "언어 모델(runtime-mapping.yaml에서 설정)은 이 사실들을 독자의 목적에 비추어 평가하고, "
            "서로 다른 수치를 맞추어 보며, 빠진 것을 짚고, "
            "요청된 {kind}을(를) 자체 의견과 함께 작성합니다."
        ),
        "length": "분량: 요청된 {label}에 대해 {words:,}단어.",
        "short": "자료에 더 쓸 내용이 없어 요청된 {label}보다 짧습니다.",
    },
}
_WORD = re.compile(r"\w+")
MAX_QUOTES = 8  # the sources' conclusions quoted; the rest of the length goes to the facts
MAX_ITEMS = 300  # more passages than any length asked can hold


def count_words(markdown: str) -> tuple[int, int]:
    """The words of a text counted two ways people count them: runs of letters or digits, and
    whitespace-separated tokens (the lower and higher of the two, in that order)."""
    runs = len(_WORD.findall(markdown))
    tokens = len([t for t in markdown.split() if _WORD.search(t)])
    return min(runs, tokens), max(runs, tokens)


@dataclass(frozen=True)
class BriefInput:
    """What the brief is made from: the spec, the sources' passages, the charts drawn."""

    spec: BriefSpec
    passages: list[Passage]
    charts: list[DrawnChart]
    sources: list[str]
    left_out: list[str]
    run_id: str


def _cite(passage: Passage) -> str:
    return f"`{passage.source}`, {passage.location}"


def _fact(passage: Passage, marker: str) -> str:
    return f"{marker} {' '.join(passage.text.split())} — _{_cite(passage)}_"


def _quote(passage: Passage) -> str:
    return f"> “{' '.join(passage.text.split())}” — _{_cite(passage)}_"


def _title(spec: BriefSpec, labels: dict[str, str]) -> str:
    first = re.split(r"(?<=[.!?。])\s|\n", spec.question.strip(), maxsplit=1)[0]
    return f"# {labels['title']}: {shorten(first.rstrip('.'), 110)}"


def _head(data: BriefInput, labels: dict[str, str]) -> list[str]:
    spec = data.spec
    lines = [BANNER, "", _title(spec, labels), ""]
    about = []
    if spec.audience:
        about.append(f"**{labels['for']}:** {spec.audience}")
    asked = f"{spec.asked_kind}, " if spec.asked_kind else ""
    about.append(f"**{labels['asked']}:** {asked}{spec.length.label}")
    lines += [" · ".join(about), "", f"_{labels['offline']}_", ""]
    quoted = [f"> {line}" if line.strip() else ">" for line in spec.question.splitlines()]
    return [*lines, f"## {labels['question']}", "", *quoted, ""]


def _chart_lines(data: BriefInput, labels: dict[str, str]) -> list[str]:
    if not data.charts:
        return []
    lines = [f"## {labels['charts']}", ""]
    for chart in data.charts:
        if chart.image is None:
            lines += [labels["not_drawn"].format(said=chart.said, why=chart.why_not), ""]
            continue
        period = f", {chart.period}" if chart.period else ""
        lines += [f"![{chart.image.caption}]({chart.image.file_name})", ""]
        lines += [*totals_table(chart), ""]
        lines += [
            labels["chart_note"].format(source=chart.source, rows=chart.rows, period=period),
            "",
        ]
    return lines


def _tail(data: BriefInput, labels: dict[str, str], used: dict[str, int]) -> list[str]:
    lines = [f"## {labels['sources']}", ""]
    for source in data.sources:
        if Path(source).suffix.lower() in (".csv", ".tsv"):
            charted = any(chart.source == source for chart in data.charts)
            lines.append(f"- `{source}`: {labels['charted' if charted else 'table']}")
        else:
            lines.append(f"- `{source}`: {labels['used'].format(count=used.get(source, 0))}")
    if data.left_out:
        files = ", ".join(f"`{s}`" for s in data.left_out)
        lines += ["", labels["left_out"].format(files=files)]
    kind = data.spec.asked_kind or "document"
    return [*lines, "", f"## {labels['model']}", "", labels["model_text"].format(kind=kind), ""]


def _document(parts: list[list[str]]) -> str:
    return "\n".join(line for part in parts for line in part).rstrip() + "\n"


def render_brief(data: BriefInput) -> str:
    """The brief as markdown, filled with the best-ranked material up to the asked length."""
    labels = LABELS.get(data.spec.language, LABELS["English"])
    ranked = rank(data.passages, data.spec.query)
    relevant = [(p, s) for p, s in ranked if s > 0]
    weight: dict[str, float] = {}
    for passage, score in relevant:
        weight[passage.source] = weight.get(passage.source, 0.0) + score
    # The conclusions of every source that bears on the request, the best-matching first.
    said = [p for p, _ in ranked if is_conclusion(p) and weight.get(p.source)][:MAX_QUOTES]
    facts = [p for p, _ in relevant if not is_conclusion(p)][:MAX_ITEMS]
    order = {source: n for n, source in enumerate(data.sources)}
    order.update(
        {p.source: len(order) + n for n, p in enumerate(data.passages) if p.source not in order}
    )
    # What shares no word with the request comes last, the sources that bear on it most first.
    others = sorted(
        (p for p, s in ranked if s <= 0 and not is_conclusion(p)),
        key=lambda p: (-weight.get(p.source, 0.0), order[p.source], p.line),
    )
    target = data.spec.length.words
    upper = target * (1 + TOLERANCE) - 15  # room for the closing length line
    head, charts = _head(data, labels), _chart_lines(data, labels)
    chosen: dict[str, list[Passage]] = {"said": [], "facts": [], "other": []}

    def assemble() -> str:
        used: dict[str, int] = {}
        for group in chosen.values():
            for passage in group:
                used[passage.source] = used.get(passage.source, 0) + 1
        body: list[list[str]] = [head]
        if chosen["said"]:
            # In the order the sources say them: a recommendation reads as its author wrote it.
            quotes = sorted(chosen["said"], key=lambda p: (order[p.source], p.line))
            body.append([f"## {labels['conclude']}", ""] + [f"{_quote(p)}\n" for p in quotes])
        if chosen["facts"]:
            terms = ", ".join(subject_words(data.spec.query)) or "—"
            body.append(
                [f"## {labels['facts']}", "", f"_{labels['ranked'].format(terms=terms)}_", ""]
                + [_fact(p, f"{n}.") for n, p in enumerate(chosen["facts"], 1)]
                + [""]
            )
        body.append(charts)
        if chosen["other"]:
            body.append(
                [f"## {labels['other']}", "", *(_fact(p, "-") for p in chosen["other"]), ""]
            )
        body.append(_tail(data, labels, used))
        return _document(body)

    # Quoted conclusions first (they are the sources' own words on the question), then the
    # facts best first; statements sharing no word with the request only to reach the length.
    def fill(key: str, pool: list[Passage], until: float) -> None:
        """Add passages of `pool` in order while the brief is under `until` words and an
        addition keeps it within the upper bound (a long one is skipped, a shorter may fit)."""
        for passage in pool[:MAX_ITEMS]:
            if count_words(assemble())[1] >= until:
                return
            chosen[key].append(passage)
            if count_words(assemble())[1] > upper:
                chosen[key].pop()

    # Quoted conclusions first (they are the sources' own words on the question), then the
    # facts best first; statements sharing no word with the request only to keep a length
    # the user asked for (never to fill a default length).
    fill("said", said, target)
    fill("facts", facts, target)
    if data.spec.length_stated:
        fill("other", others, target)
    text = assemble()
    low, _ = count_words(text)
    words = round(sum(count_words(text)) / 2)
    closing = labels["length"].format(words=words, label=data.spec.length.label)
    if low < target * (1 - TOLERANCE) and data.spec.length_stated:
        closing += " " + labels["short"].format(label=data.spec.length.label)
    return text.rstrip() + f"\n\n_{closing}_\n"


def is_table(path: str) -> bool:
    """Whether a reference is a table file (charted, not split into passages)."""
    return Path(path).suffix.lower() in (".csv", ".tsv")


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


_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


# The brief's language (as `brief_spec` names it) as the code a document declares.
LANGUAGE_CODES = {"English": "en", "Korean": "ko", "Japanese": "ja", "Chinese": "zh",
                  "German": "de", "French": "fr", "Spanish": "es"}  # fmt: skip


@dataclass(frozen=True)
class Written:
    """A file the engine wrote, and what kind of asset it is."""

    path: Path
    asset_type: AssetType


def publish_brief(home: Path, assignment: TaskAssignment, markdown_path: Path) -> list[Written]:
    """Write the evidence brief (markdown, self-contained HTML, Word and PDF exports) and its
    chart files."""
    task = assignment.task
    spec = brief_spec(assignment.request, assignment.instructions, assignment.run_id,
                      purpose=task.task_purpose)  # fmt: skip
    material = gather(home, task.related_references)
    stem = markdown_path.stem
    drawn = [
        draw(home, wanted, material.tables, stem, number)
        for number, wanted in enumerate(spec.charts, start=1)
    ]
    own = {i.instruction_type: i.content for i in assignment.instructions
           if i.run_id == assignment.run_id}  # fmt: skip
    left_out = sources_in(own.get("SOURCES", ""))[1]
    markdown = render_brief(
        BriefInput(
            spec=spec,
            passages=material.passages,
            charts=drawn,
            sources=material.sources,
            left_out=left_out,
            run_id=assignment.run_id,
        )
    )
    folder = markdown_path.parent
    images = [chart.image for chart in drawn if chart.image is not None]
    written: list[Written] = []
    for image in images:
        atomic_write_text(folder / image.file_name, image.svg + "\n")
        written.append(Written(folder / image.file_name, AssetType.TOOL_OUTPUT))
    atomic_write_text(markdown_path, markdown)
    html_path = folder / f"{stem}.html"
    title = markdown.split("\n# ", 1)[1].split("\n", 1)[0] if "\n# " in markdown else stem
    atomic_write_text(html_path, report_html(markdown, title, images))
    lang = LANGUAGE_CODES.get(spec.language, "en")
    exported = export_report(markdown_path, markdown, title, lang, images)
    return [
        Written(markdown_path, AssetType.FINAL_OUTPUT),
        Written(html_path, AssetType.FINAL_OUTPUT),
        *(Written(path, AssetType.FINAL_OUTPUT) for path in exported.written),  # .docx, .pdf
        *written,
    ]
