"""What a published deliverable did and did not do, said by code (SPEC §6a): every number traced
against the sources and the computed facts, the questions of the confirmed spec answered, the
language confirmed kept; the run's delivery record (`delivery.json`) lists what was not done.

The builtin brief is built from the spec, so it records only its own gaps; a deliverable a model
wrote is closed here: a question whose computed answer it does not state gets that answer, in a
section code writes and says so, and a language it did not keep is recorded, never hidden.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import structlog

from executor.builtin.sources import relative
from executor.builtin.specialists import WebOutcome, web_outcome
from executor.builtin.tablefacts import Answer, SourceTexts, answer, verified_facts
from executor.builtin.text import shorten, words
from multiverse.atomic import atomic_write_text
from multiverse.gateway import paragraphs
from multiverse.home import Home
from multiverse.models import PUBLISHING_PHASE
from multiverse.spec import LANGUAGES, Question, RequestSpec
from multiverse.trace import Known, unsourced_names, untraced, with_untraced, writes_any
from offline.asks import script_language

log = structlog.get_logger(__name__)

DELIVERY_FILE = "delivery.json"
# The script each language is written in, as `script_language` names it ("English" for any
# Latin script); a language whose script it cannot tell (Arabic, Hindi, Thai) is not checked.
_LATIN = ("en", "fr", "de", "es", "it", "pt", "vi", "nl", "id")
_SCRIPTS = {"ko": "Korean", "ja": "Japanese", "zh": "Chinese", "ru": "Russian",
            **dict.fromkeys(_LATIN, "English")}  # fmt: skip
_SCRIPT_NAMES = {"Korean": "Hangul", "Japanese": "Japanese", "Chinese": "Han",
                 "Russian": "Cyrillic", "English": "Latin"}  # fmt: skip


def traced_texts(home: Path, spec: RequestSpec | None) -> SourceTexts:
    """The files a deliverable's numbers are traced against: the confirmed spec's sources but
    those it leaves out, else every file of assets/."""
    if spec is not None:
        return SourceTexts(home, spec.kept())
    assets = Home(home).assets
    files = sorted(assets.rglob("*")) if assets.is_dir() and not assets.is_symlink() else []
    return SourceTexts(home, [relative(home, file) for file in files if file.is_file()])


def known_texts(home: Path, run_id: str, request: str, spec: RequestSpec | None,
                texts: SourceTexts | None = None, facts: Sequence[str] | None = None,
                web: WebOutcome | None = None) -> list[str]:  # fmt: skip
    """What a deliverable's numbers are traced against: the request (as confirmed, with its
    changes and its format rules' values), the facts computed from the tables, the sources'
    texts and the passages the run's web search quoted (`texts`, `facts`, `web`: what the
    caller has read or computed already)."""
    texts = texts if texts is not None else traced_texts(home, spec)
    if spec is None:
        known = [request]
    else:
        facts = facts if facts is not None else verified_facts(home, spec)
        known = [spec.request, *(c.text for c in spec.changes), *facts]
        known += [f"{rule.reading.phrase} {rule.value}" for rule in spec.format_rules]
    known += [text for source in texts.sources if (text := texts.text(source))]
    web = web if web is not None else web_outcome(home, run_id, spec, "")
    return known + [quoted.passage for quoted in web.quoted]


def close_published(home: Path, run_id: str, request: str, spec: RequestSpec | None,
                    path: Path) -> tuple[int, Path]:  # fmt: skip
    """Close a deliverable a model wrote: add the computed answers it does not state, trace its
    numbers (`known_texts`), list the untraced ones at its end, and record the run's delivery:
    how many there were and what was not done; the record's path."""
    lang = spec.language if spec is not None else (Home(home).run(run_id).language() or "en")
    w = words(lang)
    markdown = original = path.read_text(encoding="utf-8", errors="replace")
    todo: list[str] = []
    texts = traced_texts(home, spec)
    if spec is not None:
        answers = [answer(q, texts, spec.language, w["no_answer"]) for q in spec.questions]
        markdown = with_answers(markdown, answers, w["answers"], w["answers_by_code"])
        markdown = left_out_named_once(markdown, sorted(spec.excluded()), w["left_out"])
        todo += [w["todo_question"].format(said=a.said or asked_as(q), why=a.sentence)
                 for q, a in zip(spec.questions, answers, strict=True) if not a.found]  # fmt: skip
        asked = LANGUAGES.get(spec.language, (spec.language,))[0]
        written = other_script(spec.language, markdown)
        if written is not None:
            todo.append(w["todo_language"].format(asked=asked, written=written))
        else:
            foreign = other_script_paragraphs(spec.language, markdown)
            todo += [w["todo_paragraphs"].format(asked=asked, written=script, count=len(found),
                                                 example=shorten(found[0], EXAMPLE_LIMIT))
                     for script, found in foreign.items()]  # fmt: skip
    web = web_outcome(home, run_id, spec, w["web_no_provider"])
    known = known_texts(home, run_id, request, spec, texts, web=web)
    markdown, missing = with_untraced(markdown, Known.of(known), w["untraced"],
                                      w["untraced_intro"])  # fmt: skip
    if spec is not None:
        names = unsourced_names(original, known)  # what code added comes from `known`
        if names:
            shown = ", ".join(names[:NAMES_SHOWN]) + ("…" if len(names) > NAMES_SHOWN else "")
            todo.append(w["todo_names"].format(names=shown))
    if markdown != original:
        atomic_write_text(path, markdown)
    todo += {"nothing": [w["todo_web"]],
             "not_made": [w["todo_web_not_made"].format(why=web.why)]}.get(web.outcome, [])
    return len(missing), write_delivery(home, run_id, todo, len(missing))


def asked_as(question: Question) -> str:
    """A question read by a model has no phrase of the request: what it computes or looks up
    ("change of revenue_eur_m", "price where symbol=IBM"), so the record names something."""
    if question.compute is not None:
        return f"{question.compute.kind} of {question.compute.measure}"
    if question.lookup is not None:
        picked = ", ".join(f"{key}={value}" for key, value in question.lookup.selectors.items())
        return f"{question.lookup.column} where {picked}"
    return "?"


def states(markdown: str, found: Answer) -> bool:
    """Whether the text states the computed answer: the answer's value at the precision it
    prints (a change's percent with its sign), or the category a ranking names; a text that
    writes only the answer's year or unit ("between 1867 and 2011" for "9.7 in 1867"), or a
    change as a percent it is not ("+22,317.5 %" for +22,317.5, +2,165.5 %), does not.
    An answer that says neither is judged by any figure of its sentence (its citation aside)."""
    if found.names:
        return any(name.casefold() in markdown.casefold() for name in found.names)
    if found.values or found.percents:
        return writes_any(markdown, found.values, found.percents)
    claim = found.sentence.rsplit(" (", 1)[0]
    figures = untraced(claim, Known.of([]))
    return bool(figures) and len(untraced(claim, Known.of([markdown]))) < len(figures)


def with_answers(markdown: str, answers: Sequence[Answer], heading: str, note: str) -> str:
    """The text with a section of the computed answers it does not state, after its first
    section (the summary), saying code wrote it; unchanged when it states them all."""
    lacking = [found.sentence for found in answers if found.found and not states(markdown, found)]
    if not lacking:
        return markdown
    section = "\n".join([f"## {heading}", "", f"_{note}_", "", *(f"- {s}" for s in lacking), ""])
    lines = markdown.splitlines()
    level_two = [n for n, line in enumerate(lines) if line.startswith("## ")]
    at = level_two[1] if len(level_two) > 1 else len(lines)
    return "\n".join([*lines[:at], section, *lines[at:]]).rstrip() + "\n"


_SENTENCE = re.compile(r"(?<=[.!?。])\s+")


def left_out_named_once(markdown: str, left_out: Sequence[str], line: str) -> str:
    """The text with no sentence naming a file left out (a model restates "leaving out
    souvenirs.csv"), and, where it named one, the one line that lists them, as the builtin
    brief has it (`line`: its words, with `{files}`)."""
    names = {name for path in left_out for name in (path, path.rsplit("/", 1)[-1])}
    if not names:
        return markdown
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    naming = re.compile(rf"(?<![\w/.-])(?:{alternatives})(?![\w.-]*\w)", re.IGNORECASE)
    if naming.search(markdown) is None:
        return markdown
    kept: list[str] = []
    for text_line in markdown.splitlines():
        if naming.search(text_line) is None:
            kept.append(text_line)
            continue
        lead = re.match(r"\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+)?", text_line)
        start = lead.end() if lead else 0
        sentences = [s for s in _SENTENCE.split(text_line[start:]) if naming.search(s) is None]
        if sentences:
            kept.append(text_line[:start] + " ".join(sentences))
    listed = line.format(files=", ".join(f"`{path}`" for path in left_out))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).rstrip() + f"\n\n{listed}\n"


def other_script(language: str, markdown: str) -> str | None:
    """The script the text is written in ("Latin", "Hangul"…) when it is not the one of
    `language` (None when it is, or when the language's script cannot be told)."""
    expected = _SCRIPTS.get(language)
    written = script_language(markdown) if markdown.strip() else None
    if expected is None or written is None or written == expected:
        return None
    return _SCRIPT_NAMES.get(written, written)


# A paragraph is judged only when it is prose of some length: a name, a figure or a table's
# header in another script is what a deliverable quotes, not a language it was written in.
PARAGRAPH_MIN_WORDS = 12
EXAMPLE_LIMIT = 80
NAMES_SHOWN = 8
_NOT_PROSE = re.compile(r"^\s*(?:\||```|~~~|#|<)")


def other_script_paragraphs(language: str, markdown: str) -> dict[str, list[str]]:
    """The prose paragraphs of a text written in another script than `language`'s, by script
    ("Hangul" → the paragraphs): a model copies a source's paragraph untranslated."""
    expected = _SCRIPTS.get(language)
    found: dict[str, list[str]] = {}
    if expected is None:
        return found
    for lines in paragraphs(markdown):
        paragraph = " ".join(line.strip() for line in lines)
        if not lines or _NOT_PROSE.match(lines[0]) or len(paragraph.split()) < PARAGRAPH_MIN_WORDS:
            continue
        written = script_language(paragraph)
        if written != expected:
            found.setdefault(_SCRIPT_NAMES.get(written, written), []).append(paragraph)
    return found


def write_delivery(home: Path, run_id: str, not_done: list[str], untraced_numbers: int) -> Path:
    """`delivery.json` in the run's GENERATING_OUTPUT workspace: what was asked and not done,
    and how many numbers of the deliverable were found in no source (for the completion)."""
    path = Home(home).run(run_id).phase_workspace(PUBLISHING_PHASE) / DELIVERY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    items = list(dict.fromkeys(not_done))
    record = {"not_done": items, "untraced_numbers": untraced_numbers}
    atomic_write_text(path, json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    log.info("deliverable_closed", run_id=run_id, not_done=len(items),
             untraced_numbers=untraced_numbers)  # fmt: skip
    return path
