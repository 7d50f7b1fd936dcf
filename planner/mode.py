"""The offline mode heuristic (SPEC §5): is a request a simple command or a structured run?

The rule, in order:

1. SIMPLE_TASK when the request (after an optional front-matter block) is a single line of at
   most 15 words that is a simple command or question and does not ask for a deliverable:
   - English commands *start* with a simple verb: list, show, convert, count, summarize /
     summarise, find, "what is in" / "what's in"; a question starts with a question word
     (what, which, how, when, where, who, is, are, was, were, do, does, did) or ends with "?".
   - Korean puts the verb last ("assets 목록 보여줘", "a.csv를 마크다운으로 변환해줘"), so a Korean
     command stem (목록, 보여, 변환, 요약, 세어, 알려, 찾아) or question word (뭐, 무엇, 얼마,
     몇, 어느, 어떤) may stand anywhere in the line; so may a closing "?".
   SIMPLE_TASK is a first word, not the last: the Executor performs the request or declines it,
   and a declined request becomes a run as in rule 2 (the Orchestrator's intake).
   - Deliverable words: report, memo, analysis, strategy, plan, presentation, proposal, deck
     (whole English words, singular: "summarize the reports" reads sources, "write a report"
     asks for a deliverable) and 보고서, 분석, 전략, 메모, 기획, 제안서, 발표.
2. Otherwise CONTINUOUS_RUN when past runs exist (their learning context applies), else
   INITIAL_RUN.
3. The builtin Planner of a home (`planner.builtin.question_mode`) also reads a request
   that rule 2 makes a run, of at most three lines and naming no deliverable, with the offline
   rules against the home's tables: when every question it asks is a lookup or a computation
   the tables answer now, it is a SIMPLE_TASK however many words it has.

A model's verdict (the model-backed Planner) is held to the same evidence by `settle_mode`: a
SIMPLE_TASK on a request that rule 1 says is not simple becomes a run, and whether a run is
INITIAL or CONTINUOUS is the fact of rule 2, not the model's guess.

Front matter `mode:` overrides are the Orchestrator's business, not this module's.
"""

from __future__ import annotations

import re

from multiverse.roles import Mode, ModeDecision

MAX_SIMPLE_WORDS = 15
SIMPLE_VERBS = ("list", "show", "convert", "count", "summarize", "summarise", "find")
QUESTION_WORDS = ("what", "what's", "which", "how", "when", "where", "who", "is", "are", "was")
QUESTION_WORDS_MORE = ("were", "do", "does", "did")
SIMPLE_PHRASES = ("what is in", "what's in")
KOREAN_COMMANDS = ("목록", "보여", "변환", "요약", "세어", "알려", "찾아")
KOREAN_QUESTIONS = ("뭐", "무엇", "얼마", "몇", "어느", "어떤")
DELIVERABLE_WORDS = (
    "report",
    "memo",
    "analysis",
    "strategy",
    "plan",
    "presentation",
    "proposal",
    "deck",
)
KOREAN_DELIVERABLES = ("보고서", "분석", "전략", "메모", "기획", "제안서", "발표")
_DELIVERABLE = re.compile(r"\b(" + "|".join(DELIVERABLE_WORDS) + r")\b", re.IGNORECASE)
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n---[ \t]*(\n|\Z)", re.DOTALL)


def strip_front_matter(request: str) -> str:
    """The request without a leading `---` front-matter block."""
    return _FRONT_MATTER.sub("", request, count=1)


def simple_command(line: str) -> str | None:
    """The simple command or question a line starts with (English) or holds (Korean), else None."""
    folded = line.casefold()
    for phrase in SIMPLE_PHRASES:
        if folded.startswith(phrase):
            return phrase
    first = re.split(r"[\s:,.?]+", folded, maxsplit=1)[0]
    if first in SIMPLE_VERBS or first in QUESTION_WORDS + QUESTION_WORDS_MORE:
        return first
    for stem in KOREAN_COMMANDS + KOREAN_QUESTIONS:
        if stem in line:
            return stem
    if line.rstrip().endswith("?"):
        return "?"
    return None


def deliverable_asked(text: str) -> str | None:
    """The first deliverable word found in `text`, else None."""
    match = _DELIVERABLE.search(text)
    if match:
        return match.group(1).lower()
    for word in KOREAN_DELIVERABLES:
        if word in text:
            return word
    return None


def request_lines(request: str) -> list[str]:
    """The request's non-empty lines, without front matter."""
    return [line.strip() for line in strip_front_matter(request).splitlines() if line.strip()]


def not_simple_because(request: str) -> str | None:
    """Why the request is a structured one whatever a model says, or None when it may be simple.

    The heuristic's own evidence minus its want of a simple verb: a model that answers simple
    tasks may take a short question ("which country sells most?"); a deliverable, several lines
    or many words are never a simple task.
    """
    return _why_not_simple(request_lines(request), need_command=False)


def run_mode(has_past_runs: bool) -> Mode:
    """The mode of a structured request (rule 2)."""
    return Mode.CONTINUOUS_RUN if has_past_runs else Mode.INITIAL_RUN


def settle_mode(decision: ModeDecision, request: str, has_past_runs: bool) -> ModeDecision:
    """A model's verdict checked against the heuristic's evidence (see the module's doc)."""
    if decision.mode is Mode.SIMPLE_TASK:
        why_not = not_simple_because(request)
        if why_not is None:
            return decision
        reason = (
            f"the model said SIMPLE_TASK ({decision.reason.strip()}), but the request is not "
            f"a simple command: {why_not}; so it is a run"
        )
        return ModeDecision(mode=run_mode(has_past_runs), reason=reason)
    mode = run_mode(has_past_runs)
    if decision.mode is mode:
        return decision
    past = "past runs exist" if has_past_runs else "there are no past runs"
    return ModeDecision(mode=mode, reason=f"{decision.reason.strip()} ({past}: {mode.value})")


def decide_mode(request: str, has_past_runs: bool) -> ModeDecision:
    """Apply the documented heuristic; `reason` says which rule fired."""
    lines = request_lines(request)
    why_not = _why_not_simple(lines)
    if why_not is None:
        command = simple_command(lines[0])
        words = len(lines[0].split())
        reason = (
            f"a single line of {words} words with the simple command or question {command!r} "
            "that asks for no deliverable"
        )
        return ModeDecision(mode=Mode.SIMPLE_TASK, reason=reason)
    if has_past_runs:
        reason = f"a structured request ({why_not}); past runs exist, so their lessons apply"
        return ModeDecision(mode=Mode.CONTINUOUS_RUN, reason=reason)
    reason = f"a structured request ({why_not}); there are no past runs"
    return ModeDecision(mode=Mode.INITIAL_RUN, reason=reason)


def _why_not_simple(lines: list[str], need_command: bool = True) -> str | None:
    """Why the request is not a simple command, or None when it is one.

    Without `need_command`, only the evidence of a structured request counts (a deliverable,
    several lines, many words): a short question a model judged simple may stand.
    """
    if not lines:
        return "the request is empty"
    if len(lines) > 1:
        return f"it has {len(lines)} lines"
    words = len(lines[0].split())
    if words > MAX_SIMPLE_WORDS:
        return f"it has {words} words, more than {MAX_SIMPLE_WORDS}"
    deliverable = deliverable_asked(lines[0])
    if deliverable is not None:
        return f"it asks for a deliverable: {deliverable!r}"
    if need_command and simple_command(lines[0]) is None:
        return (
            "it does not start with a simple command such as list, show or convert, "
            "nor is it a question"
        )
    return None
