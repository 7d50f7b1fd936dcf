"""The proposal document (SPEC §6.4): the markdown of runs/<run_id>/feedback_for_user.md, every
fixed word in the requester's language (the spec's; English and Korean, else English).

Also here: the instructions table read back as a person may have edited it before CONFIRM.

Also here: the request spec in words: the proposal's "How I understood the request" (SPEC §6a).

Only what the validator checked is shown: each chart with its title and first values, or why
it cannot be drawn and what could be drawn instead (offered, never promised); each question
with its answer, or why it has none now. Each reading says which words chose it. Short lines,
in the requester's language (`planner.wording`); values (file and column names, the request's
own words, figures) are shown as they are.
"""

from __future__ import annotations

import re

from multiverse.roles import LearningContext, Proposal, ProposedInstruction
from multiverse.spec import (
    WORDS_PER_PAGE,
    Chart,
    ChartAsk,
    FormatRule,
    Question,
    Reading,
    RequestSpec,
)
from multiverse.store import clip, decode_cell, encode_cell, render_table, split_row
from planner.wording import ENGLISH, KOREAN, language_name, words

PHRASE_LIMIT = 90
REASON_LIMIT = 220
SHOWN_FILES = 8


def short(text: str, limit: int = PHRASE_LIMIT) -> str:
    """The text on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def origin_words(origin: str, language: str) -> str:
    """Whose words they are: the request, a MODIFY, a guideline file."""
    if origin == "request":
        return words(language)["origin_request"]
    if "/" in origin:
        return f"`{origin}`"
    return origin


def reading_words(reading: Reading, language: str) -> str:
    """The words that chose an item, and whose they are ("default" when none were said)."""
    said = words(language)
    if reading.origin == "default" or not reading.phrase.strip():
        return said["default"]
    return said["from"].format(
        origin=origin_words(reading.origin, language), phrase=short(reading.phrase)
    )


def length_label(spec: RequestSpec, language: str) -> str:
    """"2 pages (about 1,000 words)", "300 words", or the default said as one."""
    count, asked = spec.length()
    pages = count / WORDS_PER_PAGE
    whole = count % (WORDS_PER_PAGE // 2) == 0
    if language == "ko":
        key = "pages" if asked else "pages_default"
        if whole or not asked:
            return words("ko")[key].format(pages=f"{pages:g}", words=f"{count:,}")
        return f"{count:,}단어"
    if whole or not asked:
        plural = "" if pages == 1 else "s"
        label = f"{pages:g} page{plural} (about {count:,} words"
        return label + (")" if asked else f"; default for a {spec.deliverable})")
    return f"{count:,} words"


def ask_words(ask: ChartAsk, language: str) -> str:
    """A chart's data in a few words: "`tip` by `day`" / "`day`별 `tip`"."""
    said = words(language)
    measures = said["and"].join(f"`{name}`" for name in ask.measures)
    dimension = said["time"] if ask.dimension == "time" else f"`{ask.dimension}`"
    if ask.dimension == "time" and ask.frequency:
        dimension = said[ask.frequency]
    return said["by"].format(measures=measures, dimension=dimension)


def chart_line(chart: Chart, language: str) -> str:
    """A drawable chart with its first values, or why not and the nearest drawable chart."""
    said = words(language)
    if chart.drawable and chart.data is not None:
        preview = "; ".join(chart.preview) + (" …" if chart.preview else "")
        return said["drawn"].format(title=chart.title, file=chart.data.file, preview=preview)
    phrase = short(chart.reading.phrase)
    reason = short(chart.reason or said["none"], REASON_LIMIT)
    if chart.alternative is None:
        return said["undrawable_only"].format(phrase=phrase, reason=reason)
    alternative = ask_words(chart.alternative, language) + f" (`{chart.alternative.file}`)"
    return said["undrawable"].format(phrase=phrase, reason=reason, alternative=alternative)


def question_line(question: Question, language: str) -> str:
    """A question in its words, with its answer or why it has none now."""
    asked = f'"{short(question.reading.phrase)}"'
    if question.answerable:
        return f"{asked} — {short(question.answer, REASON_LIMIT)}"
    reason = short(question.reason or question.answer, REASON_LIMIT)
    return f"{asked} — " + words(language)["unanswerable"].format(reason=reason)


def rule_words(rule: FormatRule, language: str) -> str:
    """A format rule in words ("at most 300 words")."""
    return words(language)[rule.rule].format(value=rule.value)


def file_list(paths: list[str], limit: int = 240) -> str:
    """Files in backticks, the first few named (within `limit` characters), the rest counted."""
    shown: list[str] = []
    for path in paths[:SHOWN_FILES]:
        if shown and len(", ".join([*shown, f"`{path}`"])) > limit:
            break
        shown.append(f"`{path}`")
    rest = len(paths) - len(shown)
    return ", ".join(shown) + (f" (+{rest})" if rest else "")


def _language(spec: RequestSpec, language: str) -> str:
    said = words(language)
    name = language_name(spec.language, language)
    phrase = spec.language_reading.phrase
    if phrase.startswith("written in "):  # the reader's note of the request's script
        written = {"English": "en", "Korean": "ko"}.get(phrase.removeprefix("written in "), "")
        shown = language_name(written, language) if written else phrase.removeprefix("written in ")
        return f"{name} — " + said["written_in"].format(name=shown)
    return f"{name} — {reading_words(spec.language_reading, language)}"


def _web(spec: RequestSpec, language: str) -> str:
    said = words(language)
    research = spec.research
    if research is None:
        return said["search_not_asked"]
    phrase = short(research.reading.phrase, 60)
    if research.provider:
        return said["search_asked"].format(phrase=phrase, provider=research.provider)
    return said["search_no_provider"].format(phrase=phrase)


def _item(label: str, value: str) -> str:
    return f"- **{label}:** {value}"


def _items(label: str, lines: list[str]) -> list[str]:
    return [f"- **{label}:**", *(f"  - {line}" for line in lines)] if lines else []


def render_spec(spec: RequestSpec, offline: bool) -> str:
    """How the request (and every MODIFY) was understood, checked against the files."""
    language = spec.language
    said = words(language)
    shown = (
        (spec.deliverable_reading.phrase or "증거 브리프") if language == "ko" else spec.deliverable
    )
    deliverable = f"{shown} — {reading_words(spec.deliverable_reading, language)}"
    length = f"{length_label(spec, language)} — {reading_words(spec.length_reading, language)}"
    lines = [
        _item(said["deliverable"], deliverable),
        _item(said["length"], length),
        _item(said["language"], _language(spec, language)),
    ]
    if spec.audience:
        audience = f"{spec.audience} — {reading_words(spec.audience_reading, language)}"
        lines.append(_item(said["audience"], audience))
    sources = said["files"].format(count=len(spec.sources), files=file_list(spec.sources))
    lines.append(_item(said["sources"], sources if spec.sources else said["none"]))
    lines += _items(
        said["left_out"],
        [f"{file_list(g.files)} — {reading_words(g.reading, language)}" for g in spec.left_out],
    )
    lines += _items(said["charts"], [chart_line(chart, language) for chart in spec.charts])
    lines += _items(said["questions"], [question_line(q, language) for q in spec.questions])
    lines.append(_item(said["web_search"], _web(spec, language)))
    lines += _items(
        said["format_rules"],
        [f"{rule_words(r, language)} — {reading_words(r.reading, language)}"
         for r in spec.format_rules],
    )  # fmt: skip
    missed = [
        f'"{short(r.phrase, REASON_LIMIT)}" ({origin_words(r.origin, language)})'
        for r in spec.not_understood
    ]
    lines += _items(said["not_understood"], missed or [said["nothing_missed"]])
    lines += _items(said["modifications"], _changes(spec, language))
    if spec.why_run:
        lines.append(_item(said["why_run"], short(spec.why_run, REASON_LIMIT)))
    intro = [said["read_by_rules"], ""] if offline else []
    return "\n".join([*intro, *lines])


def _changes(spec: RequestSpec, language: str) -> list[str]:
    said = words(language)
    found = []
    for number, change in enumerate(spec.changes, start=1):
        key = "applied" if change.applied else "not_applied"
        state = said[key].format(detail=short(change.detail or said["none"], REASON_LIMIT))
        found.append(f'MODIFY {number} "{short(change.text)}": {state}')
    return found


INSTRUCTION_COLUMNS = ["#", "type", "content", "justification", "supersedes"]
KOREAN_COLUMNS = ["#", "유형", "내용", "근거", "대체"]
# The instructions table in each language the document is written in: heading, columns.
INSTRUCTION_TABLES = {
    "en": (ENGLISH["instructions"], INSTRUCTION_COLUMNS),
    "ko": (KOREAN["instructions"], KOREAN_COLUMNS),
}
LEARNING_COLUMNS = {
    "en": ["rank", "run_id", "score", "request"],
    "ko": ["순위", "실행", "점수", "요청"],
}


def _table(columns: list[str], rows: list[list[str]]) -> str:
    return "".join(render_table(columns, rows)).rstrip("\n")


def _narrow_table(columns: list[str], rows: list[list[str]]) -> str:
    """A pipe table without padding: each line as long as its own cells, not the longest row's
    (a padded table of long instructions is hundreds of characters a line on every row)."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(encode_cell(cell) or " " for cell in cells) + " |"

    return "\n".join([line(columns), "|" + "---|" * len(columns), *(line(row) for row in rows)])


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def language_of(proposal: Proposal) -> str:
    """The language the proposal is written in: its spec's, where the engine has the words."""
    language = proposal.spec.language if proposal.spec is not None else "en"
    return language if language in INSTRUCTION_TABLES else "en"


def instructions_section(proposal: Proposal, language: str = "en") -> str:
    """The proposed instructions as a table."""
    rows = [
        [
            str(number),
            item.instruction_type,
            item.content,
            item.justification,
            ", ".join(item.supersedes) or "—",
        ]
        for number, item in enumerate(proposal.instructions, start=1)
    ]
    return _narrow_table(INSTRUCTION_TABLES[language][1], rows)


SUMMARY_LINES = 8
SUMMARY_WIDTH = 156  # two lines of an 80-column terminal: the summary fits one screen


def summary_section(proposal: Proposal, language: str = "en") -> str:
    """What will be done, one short line an instruction: the proposal's first screen."""
    lines = [
        clip(f"- **{item.instruction_type}** {item.content}", SUMMARY_WIDTH, "…")
        for item in proposal.instructions[:SUMMARY_LINES]
    ]
    rest = len(proposal.instructions) - SUMMARY_LINES
    if rest > 0:
        lines.append(words(language)["summary_more"].format(count=rest))
    return "\n".join(lines)


def conflicts_section(proposal: Proposal, language: str = "en") -> str:
    """The conflicts with earlier ACTIVE instructions and what would be superseded."""
    said = words(language)
    if not proposal.conflicts:
        return said["no_conflicts"]
    lines = [f"- {line}" for line in proposal.conflicts]
    superseded = sorted({item for i in proposal.instructions for item in i.supersedes})
    if superseded:
        lines += ["", said["superseded_on_confirm"].format(ids=", ".join(superseded))]
    return "\n".join(lines)


def learning_section(learning: LearningContext, language: str = "en") -> str:
    """The past runs this one learns from, ranked with their BM25 scores."""
    said = words(language)
    if not learning.past_runs:
        return said["first_run"]
    rows = [
        [str(rank), past.run_id, f"{past.score:.3f}", _short(past.user_request, 120)]
        for rank, past in enumerate(learning.past_runs, start=1)
    ]
    columns = LEARNING_COLUMNS.get(language, LEARNING_COLUMNS["en"])
    return said["past_runs"] + "\n\n" + _table(columns, rows)


def answer_section(run_id: str, language: str = "en") -> str:
    """How the user answers: CLI commands or a line in user_response.md."""
    said = words(language)
    return "\n".join(
        [
            f"- {said['confirm']}: `multiverse confirm {run_id}`",
            f'- {said["modify"]}: `multiverse modify {run_id} "{said["what_to_change"]}"`',
            f"- {said['cancel']}: `multiverse cancel {run_id}`",
            "",
            said["or_write"].format(run_id=run_id),
            said["answers"],
        ]
    )


def understanding_section(proposal: Proposal) -> str:
    """How the request was understood: the proposal's own words; a model's are followed by
    the spec as the files allow it (charts with first values, questions with answers)."""
    own = proposal.understanding.strip()
    if proposal.spec is None or proposal.made_offline:
        return own
    return f"{own}\n\n{render_spec(proposal.spec, offline=False)}"


def render_proposal(proposal: Proposal, run_id: str, learning: LearningContext) -> str:
    """The whole feedback_for_user.md of a run."""
    language = language_of(proposal)
    said = words(language)
    # The first screen (25 lines) says what will be done and how to answer; details below.
    parts = [said["title"].format(run_id=run_id)]
    if proposal.made_offline:
        parts.append(said["offline"])
    parts += [
        said["summary"],
        summary_section(proposal, language),
        said["answer_line"].format(run_id=run_id),
        said["understood"],
        understanding_section(proposal),
        said["instructions"],
        said["edit_hint"],
        instructions_section(proposal, language),
        said["conflicts"],
        conflicts_section(proposal, language),
        said["learning"],
        learning_section(learning, language),
        said["answer"],
        answer_section(run_id, language),
    ]
    return "\n\n".join(parts) + "\n"


_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


class UnreadableEdit(ValueError):
    """The proposal's instructions table, as a person left it, cannot be read."""


def _table_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines of the instructions table, and the columns it must have (its language's)."""
    found = [(h, c) for h, c in INSTRUCTION_TABLES.values() if h in lines]
    if not found:
        raise UnreadableEdit(f"the heading '{ENGLISH['instructions']}' is missing")
    heading, columns = found[0]
    start = lines.index(heading)
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.strip().startswith("|"):
            table.append(line)
        elif table and line.strip():
            raise UnreadableEdit(f"a line inside the instructions table is not a row: {line!r}")
    return table, columns


_EDITED_PAGES = re.compile(
    r"(?P<n>\d+(?:\.\d+)?|one|two|three|four|five|half|한|두|세|네|다섯)[\s-]*"
    r"(?:pages?\b|pager\b|페이지|쪽)",
    re.IGNORECASE,
)
_EDITED_WORDS = re.compile(r"(?P<n>\d[\d,]*)\s*(?:words?\b|단어|어절)", re.IGNORECASE)
_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "half": 0.5, "한": 1, "두": 2,
           "세": 3, "네": 4, "다섯": 5}  # fmt: skip


def edited_length(text: str) -> int | None:
    """The words a LENGTH cell a person wrote asks for: its pages first (a person who edits
    "2 pages (about 1,000 words)" to "1 page" changes the length), else its words."""
    pages = _EDITED_PAGES.search(text)
    if pages:
        said = pages["n"].lower()
        count = _COUNTS.get(said) or _COUNTS.get(pages["n"]) or float(said)
        return round(count * WORDS_PER_PAGE) or None
    words = _EDITED_WORDS.search(text)
    return int(words["n"].replace(",", "")) or None if words else None


def spec_with_edits(
    spec: RequestSpec, planned: list[ProposedInstruction], edited: list[ProposedInstruction]
) -> RequestSpec:
    """The spec as a person's edit of the proposal's table left it: a LENGTH they changed is the
    length; the rest stays as proposed."""

    def content(rows: list[ProposedInstruction], kind: str) -> str:
        return " ".join(" ".join(r.content.split()) for r in rows if r.instruction_type == kind)

    wanted = content(edited, "LENGTH")
    if not wanted or wanted == content(planned, "LENGTH"):
        return spec
    length = edited_length(wanted)
    if length is None:
        return spec
    reading = Reading(phrase=wanted, origin="proposal edit")
    return spec.model_copy(update={"length_words": length, "length_reading": reading})


def read_instructions(text: str) -> list[ProposedInstruction]:
    """The instructions table of a proposal document as it stands on disk (a person may have
    edited it before confirming); UnreadableEdit says why it cannot be taken."""
    table, columns = _table_lines(text.splitlines())
    if len(table) < 3:
        raise UnreadableEdit("the instructions table has no rows")
    header = [decode_cell(cell) for cell in split_row(table[0])]
    if header != columns:
        raise UnreadableEdit(f"its columns are {header}, expected {columns}")
    found = []
    for number, line in enumerate(table[2:], start=1):
        cells = [decode_cell(cell) for cell in split_row(line)]
        if len(cells) != len(columns):
            raise UnreadableEdit(f"row {number} has {len(cells)} cells, expected 5")
        _, kind, content, justification, supersedes = (cell.strip() for cell in cells)
        if not _TYPE.fullmatch(kind):
            raise UnreadableEdit(f"row {number}: type {kind!r} is not an UPPER_CASE word")
        if not content:
            raise UnreadableEdit(f"row {number} ({kind}): the content is empty")
        found.append(
            ProposedInstruction(
                instruction_type=kind,
                content=content,
                justification=justification or "Written by you in the proposal.",
                supersedes=[s.strip() for s in supersedes.split(",") if s.strip() not in ("", "—")],
            )
        )
    return found
