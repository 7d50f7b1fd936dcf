"""The request spec the offline Planner reads (SPEC §6a): the request and every MODIFY since,
read by the offline rules against a light scan of the home, checked by the one validator.

Also here: why a request that asks questions is a run and not an answer at once (said in the
proposal and at `submit`), and whether a request is a question the tables answer at once (the
mode decision).
"""

from __future__ import annotations

from pathlib import Path

from multiverse.home import Home
from multiverse.roles import PlanContext
from multiverse.spec import HomeScan, RequestSpec, check_spec, scan_home
from multiverse.unread import look, why_unread
from offline import read_request

_WHY = {
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


def modifications(context: PlanContext) -> list[str]:
    """Every MODIFY text since the first proposal, in order."""
    texts = [text for text in context.modifications if text.strip()]
    if not texts and context.modification and context.modification.strip():
        texts = [context.modification]
    return texts


def read_spec(request: str, texts: list[str], scan: HomeScan, root: Path) -> RequestSpec:
    """A request and its MODIFY texts read by the rules, checked, with why it is a run."""
    return settle_spec(read_request(request, texts, scan, len(texts)), scan, root)


def settle_spec(spec: RequestSpec, scan: HomeScan, root: Path) -> RequestSpec:
    """A spec (the rules' or a model's) checked against the files, with why it is a run; a
    file that may not be read (a link leaving the home, a pipe) is never a source."""
    spec = check_spec(spec, scan, root)
    readable = [path for path in spec.sources if why_unread(look(root / path, root)) is None]
    spec = spec.model_copy(update={"sources": readable})
    return spec.model_copy(update={"why_run": why_run(spec)}) if spec.questions else spec


def request_spec(context: PlanContext) -> RequestSpec:
    """The run's request and every MODIFY since, read against the home and checked."""
    home = Home(Path(context.home))
    scan = scan_home(home, context.search_provider)
    return read_spec(context.request, modifications(context), scan, home.root)


def run_spec(context: PlanContext) -> RequestSpec:
    """The spec a later plan reads: the one CONFIRM froze, else (a run made before there were
    specs, or before CONFIRM) the request read afresh."""
    return context.spec if context.spec is not None else request_spec(context)


def why_run(spec: RequestSpec) -> str:
    """Why a request that asks questions is a run, in its language ("" when the tables answer
    every question at once)."""
    said = _WHY.get(spec.language, _WHY["en"])
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


def answered_at_once(request: str, home: Path) -> RequestSpec | None:
    """The checked spec of a request whose every question the home's tables answer now; None
    when it asks none, asks more than its questions, or one has no answer yet."""
    scan = scan_home(Home(home))
    spec = read_spec(request, [], scan, home)
    if not spec.questions or spec.why_run:
        return None
    return spec
