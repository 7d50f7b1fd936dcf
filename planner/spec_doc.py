"""The request spec in words: the proposal's "How I understood the request" (SPEC §6a).

Only what the validator checked is shown: each chart with its title and first values, or why
it cannot be drawn and what could be drawn instead (offered, never promised); each question
with its answer, or why it has none now. Each reading says which words chose it. Short lines,
in the requester's language (`planner.wording`); values (file and column names, the request's
own words, figures) are shown as they are.
"""

from __future__ import annotations

from multiverse.spec import Chart, ChartAsk, FormatRule, Question, Reading, RequestSpec
from planner.wording import language_name, words

WORDS_PER_PAGE = 500
DEFAULT_WORDS = 1000
SHORT_KINDS = frozenset({"note", "brief", "briefing", "summary", "overview", "answer"})
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


def length_words(spec: RequestSpec) -> tuple[int, bool]:
    """The length in words, and whether it was asked (else the deliverable's default)."""
    if spec.length_words:
        return spec.length_words, True
    short_kind = spec.deliverable in SHORT_KINDS
    return (WORDS_PER_PAGE if short_kind else DEFAULT_WORDS), False


def length_label(spec: RequestSpec, language: str) -> str:
    """"2 pages (about 1,000 words)", "300 words", or the default said as one."""
    count, asked = length_words(spec)
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
