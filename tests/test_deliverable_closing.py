"""The close of a deliverable: a model's memo with an invented number gets it listed; the model
is given the computed facts to cite; the web search's outcome reaches the brief (its quoted
passages only, or that it gave nothing usable), and its queries come from the spec."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from executor.builtin import BuiltinExecutor
from executor.builtin.specialists import search_queries, spec_queries
from executor.model import ModelExecutor
from executor.search import SearxngProvider, WebResearch, render_brief
from executor.search.agent import Findings, QueryOutcome, Source
from multiverse.config import RuntimeMapping, TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.models import Timing, ToolTask
from multiverse.roles import ToolAssignment
from multiverse.spec import (
    Computation,
    FileSet,
    Question,
    Reading,
    RequestSpec,
    Research,
)

from fake_openai import FakeOpenAI, text
from specbrief import RUN, assignment, chart, checked, corpus_home, publish, section

pytestmark = pytest.mark.usefixtures("no_proxies")  # proxies off: loopback addresses

INVENTED = "99.5"
MEMO = (
    "# The US marriage rate\n\nMarriages per 1000 were highest in 1946, at 16.2, and "
    f"the rate will reach {INVENTED} per 1000 soon.\n"
)
VERDICT = json.dumps({
    "executive_summary": "The rate peaked at 16.2 in 1946.",
    "recommendation": "Read the rate against its 1946 peak.",
    "reasons": ["It was highest in 1946, at 16.2."],
})  # fmt: skip


def marriages_spec(home: Home, **fields: object) -> RequestSpec:
    """A request over the marriages table with a chart and a computed question."""
    corpus_home(home, "us_marriages_divorces")
    question = Question(
        reading=Reading(phrase="when was the marriage rate highest?", origin="request"),
        compute=Computation(kind="max", file="assets/us_marriages_divorces.csv",
                            measure="Marriages_per_1000"),
    )  # fmt: skip
    spec = RequestSpec(
        request="A memo on the US marriage rate: when was the marriage rate highest?",
        charts=[chart("the marriage rate by year", "us_marriages_divorces.csv",
                      "Marriages_per_1000")],
        questions=[question], **fields,  # type: ignore[arg-type]
    )  # fmt: skip
    return checked(home, spec)


def test_a_model_memo_with_an_invented_number_lists_it_and_counts_it(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """The single-shot memo is given the verified facts; its invented figure is listed under
    "Numbers not found in the sources" and counted in delivery.json; the true ones are not."""
    spec = marriages_spec(home)
    root = home.root.resolve()
    tier = TierConfig(model="openai/fake-model", api_base=fake_openai.base_url, max_tokens=4096,
                      timeout_seconds=10)  # fmt: skip
    role = ModelExecutor(Gateway(runs_root=root / "runs", retry=RetryPolicy(max_attempts=1)),
                         RuntimeMapping(), tier, root)  # fmt: skip
    fake_openai.script(text(MEMO), text(VERDICT))
    task = assignment(home, spec, out="memo.md")
    task = task.model_copy(update={"task": task.task.model_copy(
        update={"related_references": ["assets/us_marriages_divorces.csv"]})})  # fmt: skip
    signal = role.execute_task(task)
    assert signal.status == "COMPLETED", signal.error
    prompt = str(fake_openai.requests[0]["messages"][-1]["content"])
    assert "## Verified facts to use and cite" in prompt
    assert "Marriages per 1000 was highest in 1946, at 16.2" in prompt
    memo = (root / "outputs" / RUN / "memo.md").read_text(encoding="utf-8")
    closing = section(memo, "Numbers not found in the sources")
    assert re.findall(r"^- \*\*([^*]+)\*\* — ", closing, re.MULTILINE) == [INVENTED]
    delivery = home.run(RUN).phase_workspace("GENERATING_OUTPUT") / "delivery.json"
    assert json.loads(delivery.read_text(encoding="utf-8"))["untraced_numbers"] == 1


def tool_assignment(home: Home, spec: RequestSpec | None) -> ToolAssignment:
    """A PRE web_search of the publishing task."""
    base = assignment(home, spec)
    tool = ToolTask(tool_task_id="P4-S02-T01-PRE-01", run_id=RUN, parent_task_id="P4-S02-T01",
                    timing=Timing.PRE, tool_type="web_search", tool_task_name="Web search",
                    tool_task_purpose="Search the web for the marriage rate.",
                    execution_order=1)  # fmt: skip
    return ToolAssignment(home=base.home, run_id=RUN, request=base.request, phase=base.phase,
                          task=base.task, tool_task=tool, spec=spec)  # fmt: skip


def test_search_queries_come_from_the_questions_else_the_request_without_its_exclusions(
    home: Home,
) -> None:
    """The spec's research queries and questions are searched; without questions the request's
    words are, the clause leaving a file out and its name excluded."""
    spec = marriages_spec(home, research=Research(
        reading=Reading(phrase="check the web", origin="request"), queries=["US marriage rate"]))
    assert search_queries(tool_assignment(home, spec)) == [
        "US marriage rate", "when was the marriage rate highest?"]
    plain = RequestSpec(
        request="Brief on marriage trends, but leave out the notes.md file, it's outdated.",
        left_out=[FileSet(files=["assets/notes.md"],
                          reading=Reading(phrase="leave out the notes.md file", origin="request"))],
    )  # fmt: skip
    (query,) = spec_queries(plain)
    assert "marriage" in query and "notes" not in query and "outdated" not in query


def test_the_brief_quotes_what_the_search_found_never_its_bookkeeping(home: Home) -> None:
    """A web_search summary of the run gives the brief its quoted passages with their pages; the
    search's purpose, provider, fetch times and queries are never passages."""
    spec = marriages_spec(home, research=Research(
        reading=Reading(phrase="and the latest figures from the web", origin="request"),
        queries=["US marriage rate"], provider="searxng"))
    passage = "The US marriage rate fell to 6.1 per 1,000 people in 2019, a record low."
    findings = Findings(
        provider="searxng (loopback)", searched_at="2026-01-02T03:04:05Z",
        queries=[QueryOutcome(query="US marriage rate", hits=1)],
        sources=[Source(title="Marriage rates", url="https://stats.example/marriage",
                        fetched_at="2026-01-02T03:04:06Z", query="US marriage rate",
                        passages=[passage])],
    )  # fmt: skip
    summary = render_brief(tool_assignment(home, spec), findings)
    target = home.run(RUN).phase_workspace("GENERATING_OUTPUT") / "P4-S02-T01-PRE-01.md"
    target.write_text(summary, encoding="utf-8")
    published = publish(home, spec)
    web = section(published.report, "From the web")
    assert passage in web and "(https://stats.example/marriage)" in web
    for bookkeeping in ("searxng", "Purpose", "Fetched", "2026-01-02", "Queries", "Provider"):
        assert bookkeeping not in published.report
    assert "- <https://stats.example/marriage>" in section(published.report, "Sources")
    assert published.delivery["untraced_numbers"] == 0


def test_a_search_that_gives_nothing_usable_is_said_by_the_brief(home: Home) -> None:
    """With a spec, a search whose provider gives nothing leaves a note (the run goes on); the
    brief says the planned search returned nothing usable, and it is listed as not done."""
    spec = marriages_spec(home, research=Research(
        reading=Reading(phrase="check the web", origin="request"), queries=["marriage rate"],
        provider="searxng"))
    down = WebResearch(provider=SearxngProvider("http://127.0.0.1:9", timeout_seconds=2),
                       provider_label="searxng (down)")  # fmt: skip
    signal = BuiltinExecutor(down).execute_tool_task(tool_assignment(home, spec))
    assert signal.status == "COMPLETED", signal.error
    published = publish(home, spec)
    said = section(published.report, "From the web")
    assert "returned nothing usable" in said
    assert "the web search planned returned nothing usable" in published.delivery["not_done"]
    assert "127.0.0.1" not in published.report


def test_delivery_json_is_written_where_the_completion_reads_it(home: Home) -> None:
    """`runs/<id>/workspace/GENERATING_OUTPUT/delivery.json` holds the two keys, nothing else."""
    published = publish(home, marriages_spec(home))
    assert set(published.delivery) == {"not_done", "untraced_numbers"}
    assert Path(home.run(RUN).phase_workspace("GENERATING_OUTPUT"), "delivery.json").is_file()
