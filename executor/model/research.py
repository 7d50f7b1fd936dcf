"""Research planned by the model (issue 26): a web_search tool task on a model-backed tier.

Three steps, two calls through the gateway, each beginning with the run's prefix:
1. plan: from the frozen spec's questions and research queries (and the tool task's purpose),
   the model writes 2-5 sub-questions with 1-2 search queries each (a JSON answer, repaired by
   the gateway's guard; a plan it cannot give falls back to the spec's own queries, logged);
2. gather: code searches every query with the configured provider, fetches the top pages through
   the guarded fetch and keeps the paragraphs that bear on each sub-question, each with its URL,
   title, fetch time and sub-question, in a research record in the workspace (markdown + JSON);
3. synthesis: the model answers each sub-question from the numbered passages only, citing [n];
   code checks every sentence (a passage listed, no page not fetched). An answer citing anything
   else is refused and asked once more; then the sentences that still do not stand are dropped,
   and a sub-question left with none shows its passages as quoted. Never a page not fetched.

With no search provider the builtin's honest note stands (no model call of nothing).

What a model's research answers may say (issue 26): the plan and the synthesis as the model
writes them, the checks that every sentence cites a numbered passage fetched in this run and
names no other page, and the summary file assembled by code from what passed (pure).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
from pydantic import BaseModel, ConfigDict, Field

from executor.builtin import (
    TaskError,
    nothing_usable_note,
    relative,
    search_queries,
    split_sentences,
    tool_folder,
)
from executor.model.prompt import load_template
from executor.model.references import estimate_tokens
from executor.search import (
    MODEL_MARK,
    Asked,
    Gathered,
    Passage,
    WebResearch,
    gather,
    render_research,
    searched_lines,
)
from multiverse.agent_package import AgentPackage
from multiverse.atomic import atomic_write_text
from multiverse.config import TierConfig
from multiverse.gateway import ChatMessage, LlmCall, LlmError, LlmErrorCode, ModelCalls
from multiverse.models import AssetType
from multiverse.roles import ProducedFile, ResultSignal, ToolAssignment
from multiverse.spec import run_prefix, with_prefix

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


log = structlog.get_logger(__name__)

ROLE = "executor"
SYSTEM, PLAN, SYNTHESIS = "research.md", "research_plan.md", "research_synthesis.md"
PLAN_TOKENS = 800
ANSWER_WORDS = 120  # a sub-question's answer
TOKENS_PER_QUESTION = 320
# What the prompt's own text, the run's prefix aside, is allowed before the passages are cut.
PROMPT_SLACK = 600
# The model's own faults: another plan or another answer from code does better than failing.
MODEL_FAULTS = (LlmErrorCode.INVALID_JSON, LlmErrorCode.RUNAWAY, LlmErrorCode.LENGTH_LIMIT)
REFUSAL = (
    "Your answer cannot be used: some sentences do not rest on the numbered passages.\n"
    "{problems}\n\n"
    "Answer again with the complete JSON: every sentence ends with the numbers of the listed "
    "passages it rests on, as [n]; no other number, no URL."
)


def _listed(items: list[str], none: str) -> str:
    return "\n".join(f"- {' '.join(item.split())}" for item in items) or none


def plan_messages(assignment: ToolAssignment) -> list[ChatMessage]:
    """The planning call: the run's prefix and the research prompt, then what to plan from."""
    spec = assignment.spec
    questions = [q.reading.phrase for q in spec.questions] if spec is not None else []
    research = list(spec.research.queries) if spec is not None and spec.research else []
    tool = assignment.tool_task
    user = load_template(PLAN).render(
        questions=_listed(questions, "- (none)"),
        research=_listed(research, "- (none: plan from the tool task's purpose)"),
        tool_name=" ".join(tool.tool_task_name.split()),
        purpose=" ".join(tool.tool_task_purpose.split()) or "(none given)",
        question_chars=str(QUESTION_CHARS),
        query_chars=str(QUERY_CHARS),
    )
    return [{"role": "system", "content": _system(assignment)}, {"role": "user", "content": user}]


def _system(assignment: ToolAssignment) -> str:
    prefix = run_prefix(assignment.request, assignment.spec, assignment.instructions)
    return with_prefix(prefix, load_template(SYSTEM).body)


def _passage(passage: Passage) -> str:
    return (f"[{passage.number}] (sub-question {passage.question}; {passage.title}; "
            f"{passage.url})\n{passage.text}")  # fmt: skip


def synthesis_messages(
    assignment: ToolAssignment, gathered: Gathered, room: int
) -> tuple[list[ChatMessage], list[Passage]]:
    """The synthesis call and the passages it shows: in order, as many as `room` tokens hold."""
    system = _system(assignment)
    template = load_template(SYNTHESIS)
    questions = "\n".join(f"{n}. {q}" for n, q in enumerate(gathered.questions, 1))

    def render(shown: list[Passage]) -> str:
        passages = "\n\n".join(_passage(p) for p in shown) or "(none)"
        return template.render(questions=questions, passages=passages,
                               answer_words=str(ANSWER_WORDS))  # fmt: skip

    shown: list[Passage] = []
    used = estimate_tokens(system + render([]))
    for passage in gathered.passages:
        cost = estimate_tokens(_passage(passage)) + 2
        if shown and used + cost > room:
            break  # the first passage is always shown: a synthesis of nothing is not asked
        shown.append(passage)
        used += cost
    user = render(shown)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}], shown


@dataclass(frozen=True)
class ModelResearch:
    """A web_search tool task done with the model: plan, gather, synthesise; never raises."""

    gateway: ModelCalls
    tier: TierConfig
    window: int
    research: WebResearch
    package: Callable[[], AgentPackage]  # loaded per task: an edited card applies at once
    summarize: Callable[[Path], str]

    def execute(self, assignment: ToolAssignment) -> ResultSignal:
        """Do the tool task; any failure is a FAILED signal."""
        tool = assignment.tool_task
        try:
            signal = self._execute(assignment, self.package())
        except (LlmError, TaskError) as error:
            signal = ResultSignal(status="FAILED", error=str(error))
        except Exception as error:  # the contract: nothing escapes into the Orchestrator
            log.exception("model_research_crashed", run_id=assignment.run_id,
                          tool_task_id=tool.tool_task_id)  # fmt: skip
            signal = ResultSignal(status="FAILED", error=f"model research error: "
                                  f"{type(error).__name__}: {error}")  # fmt: skip
        log.info("tool_task_executed", run_id=assignment.run_id, tool_task_id=tool.tool_task_id,
                 tool_type=tool.tool_type, executor="model", status=signal.status,
                 error=signal.error)  # fmt: skip
        return signal

    def _execute(self, assignment: ToolAssignment, package: AgentPackage) -> ResultSignal:
        home = Path(assignment.home).resolve()
        folder = tool_folder(home, assignment)
        tool = assignment.tool_task
        target = folder / f"{tool.tool_task_id}.md"
        record = folder / f"research_{tool.tool_task_id}.md"
        plan = self._plan(assignment, package)
        gathered = gather(self.research, plan)
        atomic_write_text(record, render_research(tool.tool_task_name, gathered))
        atomic_write_text(record.with_suffix(".json"), gathered.model_dump_json(indent=2) + "\n")
        if not gathered.passages:
            why = nothing_found(gathered)
            if assignment.spec is None:
                raise TaskError(why)
            # The deliverable says so, and the run goes on (as the builtin agent does).
            queries = [q.query for q in gathered.queries]
            atomic_write_text(target, nothing_usable_note(assignment, why, queries))
        else:
            answers = self._synthesis(assignment, package, gathered)
            atomic_write_text(target, render_summary(assignment, gathered, answers,
                                                     relative(home, record)))  # fmt: skip
        outputs = [
            ProducedFile(path=relative(home, path), asset_type=AssetType.TOOL_OUTPUT,
                         summary=self.summarize(path))
            for path in (target, record)
        ]  # fmt: skip
        return ResultSignal(status="COMPLETED", outputs=outputs)

    def _plan(self, assignment: ToolAssignment, package: AgentPackage) -> list[Asked]:
        """The model's sub-questions and queries; the spec's own queries when it gives none."""
        call = self._call(assignment, package, plan_messages(assignment),
                          self.tier.answer_tokens(PLAN_TOKENS), "research-plan")  # fmt: skip
        try:
            planned = plan_of(self.gateway.complete_json(call, ResearchPlan, plan_problems).value)
        except LlmError as error:
            if error.code not in MODEL_FAULTS:
                raise  # a budget, a timeout, a provider down: the synthesis would meet it too
            queries = search_queries(assignment)[:MAX_QUESTIONS]
            log.warning("research_plan_fallback", run_id=assignment.run_id,
                        tool_task_id=assignment.tool_task.tool_task_id, reason=str(error)[:300],
                        queries=queries)  # fmt: skip
            return [Asked(query, (query,)) for query in queries]
        log.info("research_planned", run_id=assignment.run_id,
                 tool_task_id=assignment.tool_task.tool_task_id, questions=len(planned),
                 queries=sum(len(asked.queries) for asked in planned))  # fmt: skip
        return planned

    def _synthesis(
        self, assignment: ToolAssignment, package: AgentPackage, gathered: Gathered
    ) -> dict[int, str]:
        """Each sub-question's checked answer (none for one the model could not answer)."""
        count = len(gathered.questions)
        tokens = self.tier.answer_tokens(TOKENS_PER_QUESTION * count + 200)
        room = self.window - tokens - PROMPT_SLACK
        messages, shown = synthesis_messages(assignment, gathered, room)
        numbers = {passage.number for passage in shown}
        urls = fetched_urls(gathered.passages)
        call = self._call(assignment, package, messages, tokens, "research-synthesis")
        tool_task_id = assignment.tool_task.tool_task_id
        try:
            result = self.gateway.complete_json(call, Synthesis)
            problems = citation_problems(result.value, numbers, urls, count)
            if problems:
                log.info("research_citations_refused", run_id=assignment.run_id,
                         tool_task_id=tool_task_id, problems=problems[:5])  # fmt: skip
                listing = "\n".join(f"- {problem}" for problem in problems[:12])
                again = [*messages, {"role": "assistant", "content": result.raw},
                         {"role": "user", "content": REFUSAL.format(problems=listing)}]  # fmt: skip
                call = call.model_copy(update={"messages": again,
                                               "scope": f"{call.scope}-repair"})  # fmt: skip
                result = self.gateway.complete_json(call, Synthesis)
        except LlmError as error:
            if error.code not in MODEL_FAULTS:
                raise
            log.warning("research_synthesis_fallback", run_id=assignment.run_id,
                        tool_task_id=tool_task_id, reason=str(error)[:300])  # fmt: skip
            return {}
        left = citation_problems(result.value, numbers, urls, count)
        if left:
            log.warning("research_sentences_dropped", run_id=assignment.run_id,
                        tool_task_id=tool_task_id, problems=left[:5])  # fmt: skip
        return checked_answers(result.value, numbers, urls, count)

    def _call(
        self, assignment: ToolAssignment, package: AgentPackage, messages: list[ChatMessage],
        max_tokens: int, step: str,
    ) -> LlmCall:  # fmt: skip
        tags = "+".join(load_template(name).tag for name in (SYSTEM, PLAN, SYNTHESIS))
        return LlmCall(
            role=ROLE,
            agent_version=package.agent_version,
            prompt_version=f"{package.prompt_version}+{tags}",
            scope=f"{assignment.run_id}:{assignment.tool_task.tool_task_id}:{step}",
            run_id=assignment.run_id,
            tier=package.tier.value,
            messages=messages,
            **self.tier.call_fields(),
            max_tokens=max_tokens,
        )
