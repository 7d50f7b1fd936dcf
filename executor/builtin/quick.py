"""Questions over the home's tables answered at once (SPEC §5): a lookup or a computation asked
as a SIMPLE_TASK is read by the offline rules into a request spec, checked against the tables by
the one validator, and answered with each figure and its citation, in the requester's language.

A request that asks more than its questions (a chart, a memo, a length), or a question the
tables cannot answer now, is declined with why: it becomes a run, and the user is told the
reason at `submit` and in the proposal.
"""

from __future__ import annotations

from pathlib import Path

from executor.builtin.evidence import BANNER
from multiverse.home import Home
from multiverse.spec import Question, RequestSpec, check_spec, scan_home
from offline import read_request

BANNER_KO = "> multiverse 내장 엔진이 오프라인으로 만든 답입니다 (언어 모델을 쓰지 않았습니다)."

_WORDS = {
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


def words(language: str) -> dict[str, str]:
    """The fixed words of a decline in the requester's language (English otherwise)."""
    return _WORDS.get(language, _WORDS["en"])


def table_spec(request: str, home: Path) -> RequestSpec:
    """The request read by the offline rules against the home's tables, checked."""
    scan = scan_home(Home(home))
    return check_spec(read_request(request, [], scan), scan, home)


def why_run(spec: RequestSpec) -> str:
    """Why a request that asks questions cannot be answered at once ("" when it can)."""
    said = words(spec.language)
    if spec.mode == "run":
        asked = [said["chart"]] if spec.charts else []
        if spec.deliverable_reading.phrase:
            kind = spec.deliverable_reading.phrase
            asked.append(kind if spec.language == "ko" else f"a {spec.deliverable}")
        if spec.length_reading.phrase:
            asked.append(said["length"])
        if asked:
            return said["asks"].format(what=said["and"].join(asked))
        if any(q.lookup is None and q.compute is None for q in spec.questions):
            return said["no_table"]
        return spec.why_run
    reasons = [question_reason(q) for q in spec.questions if not q.answerable]
    return said["unanswered"].format(why="; ".join(reasons)) if reasons else ""


def question_reason(question: Question) -> str:
    """Why one checked question has no answer now (with the nearest cells, when there are)."""
    return (question.reason or question.answer).rstrip(".")


def table_answer(request: str, home: Path) -> str | None:
    """The whole reply (its banner first) to a request whose every question over a table is
    answered now; None when the rules read none, or cannot answer one at once."""
    spec = table_spec(request, home)
    if not spec.questions or why_run(spec):
        return None
    return f"{banner(spec.language)}\n\n{render_answer(spec)}\n"


def banner(language: str) -> str:
    """The offline banner in the reply's language."""
    return BANNER_KO if language == "ko" else BANNER


def render_answer(spec: RequestSpec) -> str:
    """Each question in the request's words, then its answer with figure and citation."""
    parts: list[str] = []
    for question in spec.questions:
        asked = " ".join(question.reading.phrase.split())
        parts += [f"**{asked}**" if asked else "", question.answer]
    return "\n\n".join(part for part in parts if part)
