"""The offline engine's language rules: what a request or an instruction asks that rules can read
(lengths, audiences, deliverables, languages, charts, questions, periods, sources to leave out),
and the request spec they fill (`read_request`). Used only by the builtin roles.

The offline reading of a request and of every MODIFY into a request spec (SPEC §6a): rules,
over the words of the request and the scan of the home (its files, columns and categories).

What a rule reads, it records with the words that chose it; what no rule can decide is listed
as not understood, never guessed. Exclusions are read first and taken out of the text, so
their words choose nothing else (no chart, no fact, no ranking). A MODIFY is read the same way
against the spec so far: it overrides what it restates (length, language, audience), adds what
it adds (charts, questions, files to leave out), removes what it refuses ("drop the chart by
party size"); an exclusion never becomes an inclusion; a MODIFY nothing could apply is said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from multiverse.spec import (
    Change,
    Chart,
    ChartAsk,
    FileSet,
    FormatRule,
    HomeScan,
    Mode,
    Question,
    Reading,
    RequestSpec,
    Research,
)
from offline import asks
from offline.charting import chart_sentence, drop_charts, is_chart_sentence, with_scope
from offline.questions import (
    extremes_asked,
    is_judgement,
    is_question,
    question_parts,
    questions_of,
)
from offline.resolve import files_named, table_and_measures

LANGUAGE_CODES = {"English": "en", "Korean": "ko"}
SUPPORTED = frozenset(LANGUAGE_CODES.values())

_SENTENCE = re.compile(r"(?<=[.!?。？！])\s+|\n+|(?<=요)\.\s*|(?<=다)\.\s*")
_EXCLUDE = re.compile(
    r"(?<!\bthe )(?<!\ba )\b(?:leave out|leaving out|leave aside|exclude|excluding|except for|"
    r"except|everything except|ignore|ignoring|skip|omit|without|do not use|don't use|not use|"
    r"drop|remove)\s+"
    r"(?P<what>(?:[^,.;:!?\n]|\.(?=\w))+)",
    re.IGNORECASE,
)
_NOT_NEEDED = re.compile(
    r"(?P<what>(?:the\s+)?[^,.;:!?\n]{3,80}?)\s+(?:isn't|is not|aren't|are not)\s+"
    r"(?:needed|relevant|required|wanted|useful|for this)",
    re.IGNORECASE,
)
_EXCLUDE_KO = re.compile(
    r"(?P<what>(?:[^,.;:!?\n]|\.(?=\w)){2,60}?)\s?(?:은|는|을|를|이|가|도)?\s?"
    r"(?:빼고|빼 ?줘|빼 ?주세요|빼|제외|말고|없이|쓰지 ?마|사용하지 ?마|필요 ?없)"
)
_CLAUSE_END = re.compile(
    r"\s+(?:and|but|then|so|because|while|as)\s+(?=(?:make|write|keep|use|add|change|put|"
    r"turn|limit|shorten|cut|focus|include|do|be|it|they|please|also|just|give|show|chart|"
    r"plot|draw|tell|send|summari[sz]e|compare)\b)",
    re.IGNORECASE,
)
@dataclass
class Draft:
    """A spec while it is read: mutable, turned into the frozen RequestSpec at the end."""

    request: str
    language: str = "en"
    language_reading: Reading = field(default_factory=Reading)
    deliverable: str = "brief"
    deliverable_reading: Reading = field(default_factory=Reading)
    audience: str | None = None
    audience_reading: Reading = field(default_factory=Reading)
    length_words: int | None = None
    length_reading: Reading = field(default_factory=Reading)
    left_out: list[FileSet] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    research: Research | None = None
    format_rules: list[FormatRule] = field(default_factory=list)
    not_understood: list[Reading] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def excluded(self) -> set[str]:
        """The files left out so far."""
        return {path for group in self.left_out for path in group.files}


def read_request(
    request: str, modifications: Sequence[str], scan: HomeScan, revision: int = 0
) -> RequestSpec:
    """The spec of a request and of each MODIFY since, in order."""
    text = _body(request)
    draft = Draft(request=text)
    _read(draft, text, scan, "request")
    for number, modification in enumerate(modifications, start=1):
        _modify(draft, modification, scan, f"MODIFY {number}")
    _guidelines(draft, scan)
    return _spec(draft, scan, revision)


def _body(request: str) -> str:
    """The request without its front matter."""
    match = re.match(r"\A---\n.*?\n---\n", request, re.DOTALL)
    return (request[match.end() :] if match else request).strip()


def charts_said(texts: Iterable[str]) -> bool:
    """Whether a request or a MODIFY asks for a chart in words."""
    return any(is_chart_sentence(sentence) for text in texts for sentence in sentences(text))


def sentences(text: str) -> list[str]:
    """The sentences of a text (English and Korean endings)."""
    return [part.strip() for part in _SENTENCE.split(text) if part and part.strip()]


# -- reading one text ----------------------------------------------------------------------


def _read(draft: Draft, text: str, scan: HomeScan, origin: str) -> list[str]:
    """Read a request or a MODIFY into the draft; returns what it changed, in words."""
    done: list[str] = []
    rest = _exclusions(draft, text, scan, origin, done)
    if origin == "request":
        _language_of_script(draft, text)
    asked = asks.language_asked(rest)
    if asked is not None:
        code = LANGUAGE_CODES.get(asked, "en")
        draft.language, draft.language_reading = code, Reading(phrase=asked, origin=origin)
        done.append(f"language: {asked}")
    _shape(draft, rest, origin, done)
    if asks.charts_refused(rest) and draft.charts:
        draft.charts = drop_charts(draft.charts, rest)
        done.append("charts: removed")
    previous = ""
    # What a question that names no table of its own is about: the chart or question before.
    about: Question | ChartAsk | None = (
        draft.questions[-1] if draft.questions else _subject(rest, scan, draft.excluded())
    )
    for sentence in sentences(rest):
        if is_chart_sentence(sentence) and not asks.charts_refused(sentence):
            found = chart_sentence(
                sentence,
                scan,
                draft.excluded(),
                Reading(phrase=sentence, origin=origin),
                context=previous,
            )
            draft.charts += [with_scope(chart, rest, scan) for chart in found]
            done += [f"chart: {chart.reading.phrase}" for chart in found]
            about = next((c.data for c in reversed(draft.charts) if c.data is not None), about)
        if is_question(sentence):
            for part in question_parts(sentence):
                if is_chart_sentence(part) and not is_question(part):
                    continue  # the chart's own words ("plot the births per month in 1978")
                about = _question(draft, part, scan, origin, done, about)
        previous = sentence
    _research(draft, rest, scan, origin, done)
    _rules(draft, rest, origin, done)
    return done


def _subject(text: str, scan: HomeScan, excluded: set[str]) -> ChartAsk | None:
    """The table a whole request is about ("a memo on US residual fuel oil"), which a
    question that names none of its own ("include the average for 1983") asks of."""
    found = table_and_measures(text, scan, excluded)
    if found is None:
        return None
    return ChartAsk(file=found[0].path, measures=found[2])


def _question(
    draft: Draft,
    part: str,
    scan: HomeScan,
    origin: str,
    done: list[str],
    about: Question | ChartAsk | None,
) -> Question | ChartAsk | None:
    """One question: read into lookups or computations, or said as not understood; returns
    what the next question continues."""
    if is_judgement(part):
        draft.not_understood.append(
            Reading(
                phrase=f"{part} — “worst” or “best” is a judgement the offline rules do not "
                "make; the answer gives the highest and lowest values",
                origin=origin,
            )
        )
        reading = Reading(phrase=part, origin=origin)
        ends = [q for asked in extremes_asked(part)
                for q in questions_of(asked, scan, draft.excluded(), reading, about)]
        if len(ends) == 2 and all(q.compute is not None for q in ends):
            draft.questions += ends
            done.append(f"question: {part}")
            return ends[-1]
        return about
    found = questions_of(part, scan, draft.excluded(), Reading(phrase=part, origin=origin), about)
    if found:
        draft.questions += found
        done.append(f"question: {part}")
        return found[-1]
    return about


def _language_of_script(draft: Draft, text: str) -> None:
    written = asks.script_language(text)
    code = LANGUAGE_CODES.get(written)
    if code is None:
        draft.language = "en"
        draft.language_reading = Reading(phrase=f"written in {written}", origin="request")
        draft.not_understood.append(
            Reading(
                phrase=f"the request is written in {written}; the offline engine writes "
                "English and Korean, so it answers in English",
                origin="request",
            )
        )
        return
    draft.language = code
    draft.language_reading = Reading(phrase=f"written in {written}", origin="request")


def _shape(draft: Draft, text: str, origin: str, done: list[str]) -> None:
    """The deliverable, its length and its audience, where the text says them."""
    kind = asks.deliverable_asked(text)
    if kind is not None:
        draft.deliverable, draft.deliverable_reading = (
            kind[0],
            Reading(phrase=kind[1], origin=origin),
        )
        done.append(f"deliverable: {kind[0]}")
    length = asks.length_asked(text)
    if length is not None:
        draft.length_words, draft.length_reading = (
            length.words,
            Reading(phrase=length.said, origin=origin),
        )
        done.append(f"length: {length.label}")
    audience = asks.audience_asked(text)
    if audience is not None:
        draft.audience, draft.audience_reading = audience, Reading(phrase=audience, origin=origin)
        done.append(f"audience: {audience}")


def _exclusions(draft: Draft, text: str, scan: HomeScan, origin: str, done: list[str]) -> str:
    """Read what the text leaves out; returns the text without those clauses."""
    rest = text
    for match in [
        *_EXCLUDE.finditer(text),
        *_NOT_NEEDED.finditer(text),
        *_EXCLUDE_KO.finditer(text),
    ]:
        head = _CLAUSE_END.split(match.group("what"), maxsplit=1)[0]
        what = head.strip(" '\"`")
        if not what or re.search(r"\b(?:charts?|graphs?|plots?)\b|차트|그래프", what, re.I):
            continue  # "drop the chart by party size" is about a chart, read with the charts
        if re.fullmatch(r"(?:it|this|that|them|그것|이것)", what, re.IGNORECASE):
            continue
        # the exclusion's own clause: "... report and make it one page" keeps its length
        clause = match.group(0)
        if len(head) < len(match.group("what")):
            clause = text[match.start(): match.start("what") + len(head)]
        named = files_named(what, scan)
        reading = Reading(phrase=clause.strip(), origin=origin)
        if named is None:
            draft.not_understood.append(
                Reading(
                    phrase=f"{clause.strip()}: no file of assets/ matches "
                    f"“{what}”; name the file to leave out",
                    origin=origin,
                )
            )
        else:
            new = [path for path in named.files if path not in draft.excluded()]
            if new:
                draft.left_out.append(FileSet(files=new, reading=reading))
                done.append("left out: " + ", ".join(new))
        rest = rest.replace(clause, " ")
    return rest


def _research(draft: Draft, text: str, scan: HomeScan, origin: str, done: list[str]) -> None:
    if asks.search_refused(text):
        if draft.research is not None:
            draft.research = None
            done.append("web search: removed")
        return
    said = asks.outside_asked(text)
    if said is None:
        return
    note = (
        ""
        if scan.search_provider
        else "no web search provider is configured (runtime-mapping.yaml): nothing is searched"
    )
    queries = [q.reading.phrase for q in draft.questions] or [draft.request[:200]]
    draft.research = Research(
        reading=Reading(phrase=said, origin=origin),
        queries=queries,
        provider=scan.search_provider,
        note=note,
    )
    done.append("web search")


def _rules(draft: Draft, text: str, origin: str, done: list[str]) -> None:
    """Format rules the text itself states ("no tables", "in bullet points")."""
    per_item = ""  # the words of a limit on each item, which no limit on the whole reads
    for rule, pattern in asks.FORMAT_RULES:
        match = pattern.search(text.replace(per_item, " ") if per_item else text)
        if match is None or any(item.rule == rule for item in draft.format_rules):
            continue
        value = ""
        if rule == "item_words":
            per_item = match.group(0)
        if rule in ("max_words", "item_words"):
            value = (match.group("n") or match.group("k") or "").replace(",", "")
        draft.format_rules.append(
            FormatRule(
                rule=rule, value=value, reading=Reading(phrase=match.group(0), origin=origin)
            )
        )
        done.append(f"format: {rule}")


def _guidelines(draft: Draft, scan: HomeScan) -> None:
    """The format rules of guidelines/: obeyed by the deliverable, never quoted as facts."""
    for guideline in scan.guidelines:
        _rules(draft, guideline.text, guideline.path, [])


# -- MODIFY --------------------------------------------------------------------------------


def _modify(draft: Draft, text: str, scan: HomeScan, origin: str) -> None:
    """Apply one MODIFY; it is recorded as applied (with what it did, and any part of it that
    could not be) or as not applied. A part that cannot be applied never loses the others."""
    done: list[str] = []
    failed: list[str] = []
    found = _DROP_CHART.search(text)
    clause = ""
    if found is not None:  # the clause of the drop: from its verb to the clause's end
        end = re.search(r"[.,;!?]|\s(?:and|but)\s|그리고|(?<=[고며])\s", text[found.end():])
        start = found.start()
        if re.match(r"차트|그래프", found.group(0)):  # Korean names the chart before it
            starts = [m.end() for m in re.finditer(r"[.,;!?]\s*|그리고\s*", text[:start])]
            start = starts[-1] if starts else 0
        clause = text[start: found.end() + (end.start() if end else len(text))]
        before = len(draft.charts)
        kept = drop_charts(draft.charts, clause)  # the words of the drop, not the rest
        if len(kept) < before:
            done.append(f"charts removed: {before - len(kept)}")
            draft.charts = kept
        else:
            failed.append("no chart asked matches what to drop")
    rest = text.replace(clause, " ") if clause else text
    done += _read(draft, rest, scan, origin)
    if done:
        detail = "; ".join(done + [f"not applied: {why}" for why in failed])
        draft.changes.append(Change(text=text, applied=True, detail=detail))
    elif failed:
        draft.changes.append(Change(text=text, applied=False, detail="; ".join(failed)))
    else:
        draft.changes.append(
            Change(text=text, applied=False, detail="the offline rules found nothing to change")
        )
        draft.not_understood.append(Reading(phrase=text, origin=origin))


_DROP_CHART = re.compile(
    r"\b(?:drop|remove|delete|leave out|no longer|without|skip|lose)\b.{0,40}"
    r"\b(?:charts?|graphs?|plots?)\b"
    r"|(?:차트|그래프).{0,20}(?:빼|제외|삭제|없애)",
    re.IGNORECASE,
)


# -- the spec --------------------------------------------------------------------------------


def _spec(draft: Draft, scan: HomeScan, revision: int) -> RequestSpec:
    excluded = draft.excluded()
    sources = [item.path for item in scan.files if item.path not in excluded]
    mode, why = _mode(draft)
    return RequestSpec(
        revision=revision,
        request=draft.request,
        mode=mode,
        why_run=why,
        deliverable=draft.deliverable if mode == "run" else "answer",
        deliverable_reading=draft.deliverable_reading,
        audience=draft.audience,
        audience_reading=draft.audience_reading,
        length_words=draft.length_words,
        length_reading=draft.length_reading,
        language=draft.language,
        language_reading=draft.language_reading,
        sources=sources,
        left_out=draft.left_out,
        charts=draft.charts,
        questions=draft.questions,
        research=draft.research,
        format_rules=draft.format_rules,
        not_understood=draft.not_understood,
        changes=draft.changes,
    )


def _mode(draft: Draft) -> tuple[Mode, str]:
    """A question answered at once ("simple"), or a run, and why a question became a run."""
    if not draft.questions:
        return "run", ""
    asked = []
    if draft.charts:
        asked.append("a chart")
    if draft.deliverable_reading.phrase:
        asked.append(f"a {draft.deliverable}")
    if draft.length_reading.phrase:
        asked.append("a length")
    if asked:
        return "run", "the request asks for " + " and ".join(asked) + ", besides its question"
    unanswerable = [q for q in draft.questions if q.lookup is None and q.compute is None]
    if unanswerable:
        return "run", "no table of assets/ could be matched to its question"
    return "simple", ""


# Why a request that asks questions is a run, in its language.
_WHY_RUN = {
    "en": {
        "chart": "a chart",
        "length": "a length",
        "asks": "it asks for {what} as well as the answer to its question",
        "and": " and ",
        "no_table": "no table of assets/ holds what its question asks",
        "unanswered": "its question cannot be answered from the tables at once: {why}",
    },
    "ko": {
        "chart": "차트",
        "length": "분량",
        "asks": "질문의 답 외에 {what}도 요청했습니다",
        "and": ", ",
        "no_table": "질문이 묻는 값을 담은 표가 assets/에 없습니다",
        "unanswered": "표에서 바로 답할 수 없는 질문입니다: {why}",
    },
}


def why_run(spec: RequestSpec) -> str:
    """Why a request that asks questions is a run, in its language ("" when the tables answer
    every question at once)."""
    said = _WHY_RUN.get(spec.language, _WHY_RUN["en"])
    if spec.mode == "run":
        asked = [said["chart"]] if spec.charts else []
        if spec.deliverable_reading.phrase:
            kind = spec.deliverable_reading.phrase if spec.language == "ko" else spec.deliverable
            asked.append(kind if spec.language == "ko" else f"a {kind}")
        if spec.length_reading.phrase:
            asked.append(said["length"])
        if asked:
            return said["asks"].format(what=said["and"].join(asked))
        if any(q.lookup is None and q.compute is None for q in spec.questions):
            return said["no_table"]
        return spec.why_run
    reasons = [
        (q.reason or q.answer).rstrip(".") for q in spec.questions if not q.answerable
    ]
    return said["unanswered"].format(why="; ".join(reasons)) if reasons else ""


__all__ = ["charts_said", "read_request", "why_run"]
