"""Research planned by the model (issue 26): a web_search tool task on a model-backed tier,
through real litellm to a loopback OpenAI server, a loopback SearXNG and a loopback page server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from executor.model import ModelExecutor
from executor.model.research import (
    PlannedQuestion,
    ResearchPlan,
    Synthesis,
    checked_answers,
    citations,
    plan_of,
    plan_problems,
)
from executor.search import SearxngProvider, WebResearch, is_summary, read_findings
from executor.tools import parse_rules
from multiverse.config import RuntimeMapping, TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import PHASE_FOLDERS, Home
from multiverse.models import Phase, Task, Timing, ToolTask, UserInstruction
from multiverse.roles import ToolAssignment
from multiverse.spec import Question, Reading, RequestSpec, Research, run_prefix

from fake_openai import FakeOpenAI, text
from fakes import RecordingSleep
from web_servers import Loopback, Reply, Seen, html_reply, searxng_api, searxng_result, serve

pytestmark = pytest.mark.usefixtures("no_proxies")  # proxies off: loopback servers

RUN = "run-20260101-000000-001"
NOW = "2026-01-02T03:04:05Z"
KEY_ENV = "MULTIVERSE_TEST_RESEARCH_KEY"
TOOL_ID = "P1-S01-T01-PRE-01"
NEVER_FETCHED = "https://remembered.example/never-fetched"
QUESTIONS = ("How large was the widget market in 2025?", "Who makes most widgets?")
ARTICLES = {
    "/growth": ("Widget market growth",
                "<p>The global widget market size reached 4.2 billion dollars in 2025, up twelve "
                "percent on the year before, as demand for widgets rose in Europe and Asia.</p>"),
    "/makers": ("Widget makers",
                "<p>Three widget makers hold most of the widget market; the largest widget maker "
                "alone sells a third of all widgets and plans two new plants.</p>"),
}  # fmt: skip
PLAN = {"sub_questions": [
    {"question": "What was the size of the widget market in 2025?",
     "queries": ["widget market size 2025", "global widget market growth"]},
    {"question": "Which companies make most widgets?", "queries": ["largest widget makers"]},
]}  # fmt: skip
MODEL_QUERIES = ["widget market size 2025", "global widget market growth", "largest widget makers"]


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake key in the environment, as production reads it."""
    monkeypatch.setenv(KEY_ENV, "sk-test-research")


@pytest.fixture
def root(home: Home) -> Path:
    """An initialised home with the run's folders."""
    for folder in PHASE_FOLDERS:
        home.run(RUN).phase_workspace(folder).mkdir(parents=True)
    home.run(RUN).outputs.mkdir(parents=True)
    return home.root.resolve()


@pytest.fixture
def pages() -> Any:
    """The page server: an article per known path, 404 elsewhere."""

    def page(seen: Seen) -> Reply:
        if seen.route not in ARTICLES:
            return Reply(404, body=b"not found")
        title, body = ARTICLES[seen.route]
        return html_reply(f"<html><head><title>{title}</title></head><body><main><article>"
                          f"<h1>{title}</h1>{body}</article></main></body></html>")  # fmt: skip

    with serve(page) as server:
        yield server


@pytest.fixture
def searx(pages: Loopback) -> Any:
    """SearXNG answering every query with the two articles and a page that is gone."""

    def results(query: str) -> list[Any]:
        if "makers" in query:
            return [searxng_result(f"{pages.base_url}/makers", "Widget makers", "Who makes them.")]
        return [
            searxng_result(f"{pages.base_url}/growth", "Widget market growth",
                           f"Grows; see {NEVER_FETCHED}"),
            searxng_result(f"{pages.base_url}/gone", "Gone", "A page that is gone."),
        ]  # fmt: skip

    with serve(searxng_api(results)) as server:
        yield server


def spec(questions: tuple[str, ...] = QUESTIONS) -> RequestSpec:
    """A confirmed spec asking questions and outside research."""
    return RequestSpec(
        request="Write a widget market memo.",
        questions=[Question(reading=Reading(phrase=q, origin="request")) for q in questions],
        research=Research(reading=Reading(phrase="search the web", origin="request"),
                          queries=["widget market 2025"], provider="searxng"),
        confirmed=True,
    )  # fmt: skip


def assignment(root: Path, with_spec: RequestSpec | None) -> ToolAssignment:
    """A PRE web_search tool task of an ANALYZING task, with the run's instructions."""
    task = Task(task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01", task_name="Market analysis",
                task_purpose="Analyse the widget market.", related_references=["assets"],
                output_path=f"runs/{RUN}/workspace/ANALYZING/analysis.md",
                pre_tool_purpose="Search the web for the widget market.", execution_order=1)
    tool = ToolTask(tool_task_id=TOOL_ID, run_id=RUN, parent_task_id=task.task_id,
                    timing=Timing.PRE, tool_type="web_search", tool_task_name="Web search",
                    tool_task_purpose="Search the web for the widget market.", execution_order=1)
    rule = UserInstruction(instruction_id="I0001", run_id=RUN, instruction_type="FORMAT",
                           content="A two-page memo in English")
    return ToolAssignment(home=str(root), run_id=RUN, request="Write a widget market memo.",
                          phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
                          task=task, tool_task=tool, instructions=[rule],
                          spec=with_spec)  # fmt: skip


def executor(
    root: Path, server: FakeOpenAI, sleep: RecordingSleep, research: WebResearch | None
) -> ModelExecutor:
    """A ModelExecutor on the fake server whose web_search is `research` (None: no provider)."""
    retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)
    gateway = Gateway(runs_root=root / "runs", retry=retry, sleep=sleep, jitter=lambda: 0.5)
    tier = TierConfig(model="openai/fake-model", api_base=server.base_url, api_key_env=KEY_ENV,
                      max_tokens=1024, timeout_seconds=10, executor_mode="single_shot")
    return ModelExecutor(gateway, RuntimeMapping(), tier, root, web_research=research)  # fmt: skip


def web(searx: Loopback, pages: Loopback) -> WebResearch:
    """The search agent over the loopback SearXNG, allowed to fetch only the page server."""
    return WebResearch(provider=SearxngProvider(searx.base_url),
                       provider_label=f"searxng ({searx.base_url})", fetch_top=2,
                       allow=parse_rules([pages.host]), clock=lambda: NOW)  # fmt: skip


def synthesis(*findings: tuple[int, str]) -> str:
    """A synthesis answer: (sub-question, answer) pairs."""
    return json.dumps({"findings": [{"sub_question": n, "answer": a} for n, a in findings]})


def searched(searx: Loopback) -> list[str]:
    """The queries the search server received, in order."""
    return [seen.query["q"][0] for seen in searx.seen]


def folder(root: Path) -> Path:
    """Where the tool task writes."""
    return root / "runs" / RUN / "workspace" / "ANALYZING"


def user_text(body: dict[str, Any]) -> str:
    """The user messages of one recorded request, joined."""
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def source_urls(summary: str) -> list[str]:
    """The URLs listed under Sources."""
    part = summary.split("## Sources", 1)[1].split("## Queries", 1)[0]
    return re.findall(r"- \*\*URL:\*\* <([^>]+)>", part)


def test_the_model_plans_from_the_spec_and_the_answer_cites_only_fetched_pages(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep, searx: Loopback, pages: Loopback
) -> None:
    """The planning prompt holds the spec's questions after the run's prefix; the search server
    gets the model's queries; the passages are recorded with URL and fetch time; the summary's
    citations all resolve to fetched pages; both calls are in the run's usage."""
    fake_openai.script(text(json.dumps(PLAN)), text(synthesis(
        (1, "The widget market reached 4.2 billion dollars in 2025 [1]."),
        (2, "Three makers hold most of the market [2]."))))  # fmt: skip
    work = assignment(root, spec())
    signal = executor(root, fake_openai, sleep, web(searx, pages)).execute_tool_task(work)
    assert signal.status == "COMPLETED", signal.error
    plan_request, synthesis_request = fake_openai.requests
    prefix = run_prefix(work.request, work.spec, work.instructions)
    for body in (plan_request, synthesis_request):
        assert body["messages"][0]["content"].startswith(prefix)  # the provider's cache reused
    asked = user_text(plan_request)
    assert all(question in asked for question in QUESTIONS) and "widget market 2025" in asked
    assert searched(searx) == MODEL_QUERIES
    record = (folder(root) / f"research_{TOOL_ID}.md").read_text(encoding="utf-8")
    kept = json.loads((folder(root) / f"research_{TOOL_ID}.json").read_text(encoding="utf-8"))
    assert [(p["number"], p["url"], p["fetched_at"], p["question"]) for p in kept["passages"]] == [
        (1, f"{pages.base_url}/growth", NOW, 1), (2, f"{pages.base_url}/makers", NOW, 2)]
    assert f"<{pages.base_url}/growth>" in record and f"**Fetched:** {NOW}" in record
    assert f"{pages.base_url}/gone" in record.split("## Results not used", 1)[1]
    assert "4.2 billion dollars" in user_text(synthesis_request)
    summary = (folder(root) / f"{TOOL_ID}.md").read_text(encoding="utf-8")
    assert is_summary(summary) and "4.2 billion dollars in 2025 [1]." in summary
    fetched = {p["url"] for p in kept["passages"]}
    assert set(source_urls(summary)) == fetched and NEVER_FETCHED not in summary
    assert {int(n) for n in re.findall(r"\[(\d+)\]", summary)} == {1, 2}
    assert {q.url for q in read_findings(summary)} == fetched  # the deliverable reads them back
    assert [o.path for o in signal.outputs] == [
        f"runs/{RUN}/workspace/ANALYZING/{TOOL_ID}.md",
        f"runs/{RUN}/workspace/ANALYZING/research_{TOOL_ID}.md"]  # fmt: skip
    usage = json.loads((root / "runs" / RUN / "usage.json").read_text(encoding="utf-8"))
    assert usage["calls"] == 2 and usage["by_role"]["executor"]["calls"] == 2


def test_a_citation_of_a_page_not_fetched_is_refused_and_repaired(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep, searx: Loopback, pages: Loopback
) -> None:
    """An answer citing [9] or naming a URL never fetched is refused with the reasons, asked
    once more, and only the repaired answer is written."""
    fake_openai.script(
        text(json.dumps(PLAN)),
        text(synthesis((1, "The market reached 4.2 billion dollars [9]."),
                       (2, f"Three makers dominate, per {NEVER_FETCHED} [2]."))),
        text(synthesis((1, "The market reached 4.2 billion dollars [1]."),
                       (2, "Three makers hold most of the market [2]."))),
    )  # fmt: skip
    with capture_logs() as logs:
        signal = executor(root, fake_openai, sleep, web(searx, pages)).execute_tool_task(
            assignment(root, spec()))
    assert signal.status == "COMPLETED", signal.error
    assert fake_openai.count == 3
    refusal = fake_openai.requests[2]["messages"][-1]["content"]
    assert "[9]" in refusal and NEVER_FETCHED in refusal
    assert any(e["event"] == "research_citations_refused" for e in logs)
    summary = (folder(root) / f"{TOOL_ID}.md").read_text(encoding="utf-8")
    assert "[9]" not in summary and NEVER_FETCHED not in summary
    assert "Three makers hold most of the market [2]." in summary


def test_sentences_still_unsupported_after_the_repair_are_dropped(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep, searx: Loopback, pages: Loopback
) -> None:
    """After one refused repair the sentences citing nothing fetched are dropped, and a
    sub-question left with none shows its passages as quoted instead."""
    wrong = synthesis((1, "The market reached 4.2 billion dollars [1]. It will double [7]."),
                      (2, "Makers are listed at https://elsewhere.example/makers [2]."))
    fake_openai.script(text(json.dumps(PLAN)), text(wrong), text(wrong))
    signal = executor(root, fake_openai, sleep, web(searx, pages)).execute_tool_task(
        assignment(root, spec()))
    assert signal.status == "COMPLETED", signal.error
    summary = (folder(root) / f"{TOOL_ID}.md").read_text(encoding="utf-8")
    findings = summary.split("## Sources", 1)[0]
    assert "4.2 billion dollars [1]." in findings and "double" not in findings
    assert "elsewhere.example" not in summary
    assert "the largest widget maker alone sells a third of all widgets" in findings
    assert "a third of all widgets and plans two new plants.” [2]" in findings  # its number


def test_a_plan_the_model_cannot_give_falls_back_to_the_spec_queries(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep, searx: Loopback, pages: Loopback
) -> None:
    """A planning answer still invalid after the guard's repairs is logged, and the spec's own
    questions and research queries are searched instead."""
    duplicated = json.dumps({"sub_questions": [
        {"question": "Market size?", "queries": ["widget market", "widget market"]}]})  # fmt: skip
    fake_openai.script(text(duplicated), text("no JSON here"), text(duplicated),
                       text(synthesis((1, "The market reached 4.2 billion dollars [1]."))))
    with capture_logs() as logs:
        signal = executor(root, fake_openai, sleep, web(searx, pages)).execute_tool_task(
            assignment(root, spec()))
    assert signal.status == "COMPLETED", signal.error
    repair = fake_openai.requests[1]["messages"][-1]["content"]
    assert "'widget market' is given twice" in repair
    assert any(e["event"] == "research_plan_fallback" for e in logs)
    assert searched(searx) == ["widget market 2025", *QUESTIONS]


def test_no_provider_writes_the_honest_note_and_calls_no_model(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """Without a search provider nothing is planned or synthesised: the note says no search was
    made."""
    signal = executor(root, fake_openai, sleep, None).execute_tool_task(assignment(root, spec()))
    assert signal.status == "COMPLETED", signal.error
    note = (folder(root) / f"{TOOL_ID}.md").read_text(encoding="utf-8")
    assert "# Web search not performed" in note and "no search results here" in note
    assert fake_openai.count == 0
    assert not (folder(root) / f"research_{TOOL_ID}.md").exists()


def test_nothing_fetched_is_said_and_nothing_is_synthesised(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep, pages: Loopback
) -> None:
    """When no page gives a passage the note says what was searched; no synthesis call."""

    def gone(query: str) -> list[Any]:
        return [searxng_result(f"{pages.base_url}/gone", "Gone", "A page that is gone.")]

    fake_openai.script(text(json.dumps(PLAN)))
    with serve(searxng_api(gone)) as searx:
        signal = executor(root, fake_openai, sleep, web(searx, pages)).execute_tool_task(
            assignment(root, spec()))
    assert signal.status == "COMPLETED", signal.error
    note = (folder(root) / f"{TOOL_ID}.md").read_text(encoding="utf-8")
    assert "# Web search returned nothing usable" in note and "HTTP 404" in note
    assert all(f"`{query}`" in note for query in MODEL_QUERIES)
    assert fake_openai.count == 1


def test_plan_checks_repeats_and_keeps_each_query_once() -> None:
    """A repeated question or query is a problem to repair; the plan searched keeps each once."""
    plan = ResearchPlan(sub_questions=[
        PlannedQuestion(question="Size?", queries=["Widget  market", "widget market"]),
        PlannedQuestion(question="size?", queries=["makers"])])  # fmt: skip
    assert plan_problems(plan) == [
        "sub_questions.1.queries: 'widget market' is given twice",
        "sub_questions.2.question repeats an earlier sub-question",
    ]
    assert [(a.question, a.queries) for a in plan_of(plan)] == [
        ("Size?", ("Widget market",)), ("size?", ("makers",))]  # fmt: skip


def test_only_sentences_citing_listed_passages_and_no_other_page_stand() -> None:
    """[n], [n][m] and [n, m] are read; a sentence citing nothing, a number not listed or a
    page not fetched is dropped; a finding of a sub-question that does not exist is ignored."""
    assert citations("a [1][2] b [3, 4].") == [1, 2, 3, 4]
    answer = Synthesis.model_validate({"findings": [
        {"sub_question": 1, "answer": "Kept [1]. Uncited. Unknown [5]. See https://x.example [2]."},
        {"sub_question": 2, "answer": "Named https://ok.example/page/ [2]."},
        {"sub_question": 7, "answer": "Nowhere [1]."}]})  # fmt: skip
    assert checked_answers(answer, {1, 2}, {"https://ok.example/page"}, 2) == {
        1: "Kept [1].", 2: "Named https://ok.example/page/ [2]."}  # fmt: skip
