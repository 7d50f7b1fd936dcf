"""What a model's research answers may say (issue 26): the plan and the synthesis as the model
writes them, the checks that every sentence cites a numbered passage fetched in this run and
names no other page, and the summary file assembled by code from what passed (pure).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from pydantic import BaseModel, ConfigDict, Field

from executor.builtin import split_sentences
from executor.search import MODEL_MARK, Asked, Gathered, Passage, searched_lines
from multiverse.roles import ToolAssignment

MAX_QUESTIONS = 5
QUESTION_CHARS = 300
QUERY_CHARS = 200
ANSWER_CHARS = 4000


class Answer(BaseModel):
    """Base of the model's answers: unknown keys ignored, strings trimmed."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class PlannedQuestion(Answer):
    """One sub-question of the research and the queries that search for it."""

    question: str = Field(min_length=1, max_length=QUESTION_CHARS)
    queries: list[str] = Field(min_length=1, max_length=2)


class ResearchPlan(Answer):
    """The model's research plan: sub-questions, each with its search queries."""

    sub_questions: list[PlannedQuestion] = Field(min_length=1, max_length=MAX_QUESTIONS)


class Finding(Answer):
    """The model's answer to one sub-question, every sentence citing passages as [n]."""

    sub_question: int = Field(ge=1)
    answer: str = Field(min_length=1, max_length=ANSWER_CHARS)


class Synthesis(Answer):
    """The model's answers to the sub-questions."""

    findings: list[Finding] = Field(min_length=1, max_length=MAX_QUESTIONS)


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def plan_problems(plan: ResearchPlan) -> list[str]:
    """What makes a plan unusable: an empty or over-long query, a question or query repeated
    (the JSON guard shows these to the model to repair)."""
    problems: list[str] = []
    questions: set[str] = set()
    queries: set[str] = set()
    for n, item in enumerate(plan.sub_questions, 1):
        if _key(item.question) in questions:
            problems.append(f"sub_questions.{n}.question repeats an earlier sub-question")
        questions.add(_key(item.question))
        for query in item.queries:
            if not query.strip():
                problems.append(f"sub_questions.{n}.queries: a query is empty")
            elif len(query) > QUERY_CHARS:
                problems.append(f"sub_questions.{n}.queries: {query[:40]!r}… is longer than "
                                f"{QUERY_CHARS} characters")  # fmt: skip
            elif _key(query) in queries:
                problems.append(f"sub_questions.{n}.queries: {query!r} is given twice")
            queries.add(_key(query))
    return problems


def plan_of(plan: ResearchPlan) -> list[Asked]:
    """The plan as searched: whitespace collapsed, each query once, sub-questions that keep a
    query (a plan that passed `plan_problems` loses nothing)."""
    seen: set[str] = set()
    asked: list[Asked] = []
    for item in plan.sub_questions[:MAX_QUESTIONS]:
        queries = []
        for query in item.queries:
            text = " ".join(query.split())[:QUERY_CHARS]
            if text and _key(text) not in seen:
                seen.add(_key(text))
                queries.append(text)
        if queries:
            asked.append(Asked(" ".join(item.question.split()), tuple(queries)))
    return asked


_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_URL = re.compile(r"https?://[^\s<>()\[\]\"'`]+")


def citations(sentence: str) -> list[int]:
    """The passage numbers a sentence cites: [1], [1][2] or [1, 2]."""
    return [int(n) for group in _CITATION.findall(sentence) for n in group.split(",")]


def urls_in(text: str) -> list[str]:
    """The http(s) URLs written in a text, without trailing punctuation."""
    return [url.rstrip(".,;:!?") for url in _URL.findall(text)]


def sentences(answer: str) -> list[str]:
    """The sentences of an answer, paragraph by paragraph."""
    return [s for line in answer.splitlines() if line.strip() for s in split_sentences(line)]


def sentence_problem(sentence: str, numbers: Collection[int], urls: Collection[str]) -> str | None:
    """Why a sentence may not stand: it cites nothing, cites a passage not listed, or names a
    page not fetched; None when it may."""
    cited = citations(sentence)
    if not cited:
        return "cites no passage"
    wrong = sorted({n for n in cited if n not in numbers})
    if wrong:
        return f"cites {', '.join(f'[{n}]' for n in wrong)}, which no listed passage has"
    foreign = [url for url in urls_in(sentence) if url.rstrip("/") not in urls]
    if foreign:
        return f"names {foreign[0]}, a page not fetched in this run (write no URL)"
    return None


def citation_problems(
    synthesis: Synthesis, numbers: Collection[int], urls: Collection[str], count: int
) -> list[str]:
    """Every sentence that may not stand and every sub-question without its finding."""
    problems: list[str] = []
    answered = set()
    for finding in synthesis.findings:
        where = f"sub-question {finding.sub_question}"
        if not 1 <= finding.sub_question <= count:
            problems.append(f"{where} does not exist (they are 1 to {count})")
            continue
        answered.add(finding.sub_question)
        for sentence in sentences(finding.answer):
            why = sentence_problem(sentence, numbers, urls)
            if why is not None:
                problems.append(f"{where}: the sentence {sentence[:80]!r} {why}")
    problems += [f"sub-question {n} has no finding" for n in range(1, count + 1)
                 if n not in answered]  # fmt: skip
    return problems


def checked_answers(
    synthesis: Synthesis, numbers: Collection[int], urls: Collection[str], count: int
) -> dict[int, str]:
    """Each sub-question's answer with only the sentences that may stand (none: left out)."""
    answers: dict[int, str] = {}
    for finding in synthesis.findings:
        if not 1 <= finding.sub_question <= count or finding.sub_question in answers:
            continue
        kept = [s for s in sentences(finding.answer) if sentence_problem(s, numbers, urls) is None]
        if kept:
            answers[finding.sub_question] = " ".join(kept)
    return answers


def fetched_urls(passages: Sequence[Passage]) -> set[str]:
    """The pages a sentence may name: those passages were quoted from (no trailing slash)."""
    return {passage.url.rstrip("/") for passage in passages}


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def _finding(index: int, gathered: Gathered, answer: str | None) -> list[str]:
    mine = [p for p in gathered.passages if p.question == index]
    if answer is not None:
        return [answer, ""]
    if not mine:
        return ["No fetched page had a paragraph bearing on this sub-question.", ""]
    # No checked answer: the passages themselves, as quoted, rather than a sentence unchecked.
    lines = ["No answer of the model could be checked against the passages; what they say:", ""]
    return lines + [f"- “{p.text}” [{p.number}]" for p in mine] + [""]


def render_summary(
    assignment: ToolAssignment, gathered: Gathered, answers: dict[int, str], record: str
) -> str:
    """The tool task's output: the checked answers, every passage numbered as cited with its
    page and fetch time, the queries and the pages not used."""
    tool = assignment.tool_task
    lines = [
        MODEL_MARK, "", f"# Web search: {tool.tool_task_name}", "",
        f"- **Run:** `{assignment.run_id}` · **Tool task:** `{tool.tool_task_id}` ({tool.timing})",
        f"- **For task:** `{assignment.task.task_id}` {assignment.task.task_name}",
        f"- **Purpose:** {' '.join(tool.tool_task_purpose.split()) or '(none given)'}",
        f"- **Provider:** {gathered.provider} · **Searched:** {gathered.searched_at}",
        f"- **Research record:** `{record}`", "", "## Findings", "",
    ]  # fmt: skip
    for index, question in enumerate(gathered.questions, 1):
        lines += [f"### {index}. {question}", "", *_finding(index, gathered, answers.get(index))]
    lines += ["## Sources", ""]
    for p in gathered.passages:
        lines += [f"### [{p.number}] {p.title}", "", f"- **URL:** <{p.url}>",
                  f"- **Fetched:** {p.fetched_at}", f"- **For sub-question:** {p.question}", "",
                  _quote(p.text), ""]  # fmt: skip
    lines += searched_lines(gathered.queries, gathered.skipped)
    return "\n".join(lines).rstrip() + "\n"


def nothing_found(gathered: Gathered) -> str:
    """Why no passage was kept: every query and every page tried, with its outcome (pure)."""
    parts = [f"{q.query!r}: {q.error}" if q.error else f"{q.query!r}: {q.hits} results"
             for q in gathered.queries]  # fmt: skip
    message = f"web search through {gathered.provider} found no usable source; searched "
    message += "; ".join(parts) or "nothing"
    if gathered.skipped:
        message += "; fetched " + "; ".join(f"{s.url}: {s.reason}" for s in gathered.skipped)
    return message
