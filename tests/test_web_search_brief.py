"""The web_search agent: search, fetch the top results, write a cited summary, or fail plainly."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from executor.builtin import BuiltinExecutor
from executor.search import ResearchFailed, SearxngProvider, WebResearch, render_brief
from executor.search.agent import best_passages, candidates
from executor.tools import SearchHit, parse_rules
from multiverse.home import Home
from multiverse.models import Phase, Task, Timing, ToolTask
from multiverse.roles import ToolAssignment

from journey import cli, copy_assets, once, only_run, run_tree
from web_servers import Loopback, Reply, Seen, html_reply, searxng_api, searxng_result, serve

pytestmark = pytest.mark.usefixtures("no_proxies")  # proxies off: loopback servers

RUN = "run-20260101-000000-001"
NOW = "2026-01-02T03:04:05Z"
MEMORY_URL = "https://remembered.example/never-fetched"
ARTICLES = {
    "/growth": (
        "Widget market growth",
        "<p>The global widget market size reached 4.2 billion dollars in 2025, up twelve "
        "percent on the year before, as demand for widgets rose in Europe and Asia.</p>"
        "<p>Shipping costs fell during the second half of the year for most carriers.</p>",
    ),
    "/makers": (
        "Widget makers",
        "<p>Three widget makers hold most of the market; the largest widget maker alone sells "
        "a third of all widgets and plans two new plants.</p>",
    ),
    "/weather": (
        "Weather",
        "<p>Tomorrow will be sunny with a light breeze from the west and mild temperatures "
        "in the afternoon and evening.</p>",
    ),
}


def page(seen: Seen) -> Reply:
    """An article page per known path (with navigation and footer), 404 elsewhere."""
    if seen.route not in ARTICLES:
        return Reply(404, body=b"not found")
    title, body = ARTICLES[seen.route]
    return html_reply(
        f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        "<footer>Copyright Example Widgets News</footer></body></html>"
    )


def results_for(pages: Loopback) -> Any:
    """The SearXNG results: real pages, a 404, a private address and an unrelated page."""

    def results(query: str) -> list[Any]:
        return [
            searxng_result(f"{pages.base_url}/growth", "Widget market growth",
                           f"Widget market grows; see {MEMORY_URL}", "2025-12-01"),
            searxng_result(f"{pages.base_url}/gone", "Gone page", "A page that is gone."),
            searxng_result("http://10.0.0.1/internal", "Internal", "An intranet page."),
            searxng_result(f"{pages.base_url}/weather", "Weather", "Sunny tomorrow."),
            searxng_result(f"{pages.base_url}/makers", "Widget makers", "Who makes widgets."),
        ]  # fmt: skip

    return results


def assignment(home: Path, purpose: str) -> ToolAssignment:
    """A PRE web_search tool task of an ANALYZING task."""
    task = Task(task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01", task_name="Market analysis",
                task_purpose="Analyse the widget market.", related_references=["assets"],
                output_path=f"runs/{RUN}/workspace/ANALYZING/analysis.md",
                pre_tool_purpose=purpose, execution_order=1)  # fmt: skip
    tool = ToolTask(tool_task_id="P1-S01-T01-PRE-01", run_id=RUN, parent_task_id=task.task_id,
                    timing=Timing.PRE, tool_type="web_search", tool_task_name="Web search",
                    tool_task_purpose=purpose, execution_order=1)  # fmt: skip
    return ToolAssignment(home=str(home), run_id=RUN, request="Write a widget market memo.",
                          phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
                          task=task, tool_task=tool)  # fmt: skip


def research(searx: Loopback, pages: Loopback, fetch_top: int = 3) -> WebResearch:
    """The agent over the loopback SearXNG, allowed to fetch only the page server."""
    return WebResearch(
        provider=SearxngProvider(searx.base_url),
        provider_label=f"searxng ({searx.base_url})",
        fetch_top=fetch_top,
        allow=parse_rules([pages.host]),
        clock=lambda: NOW,
    )


def cited_urls(brief: str) -> list[str]:
    """The URLs of the Sources section."""
    sources = brief.split("## Sources", 1)[1].split("## Queries", 1)[0]
    return re.findall(r"- \*\*URL:\*\* <([^>]+)>", sources)


def test_candidates_take_the_queries_in_turn_each_url_once() -> None:
    """Hits are interleaved across queries and a URL found twice is fetched once."""

    def hit(url: str) -> SearchHit:
        return SearchHit(title=url, url=url)

    found = [("a", [hit("u1"), hit("u2"), hit("u3")]), ("b", [hit("u2"), hit("u4")])]
    assert [(q, h.url) for q, h in candidates(found)] == [
        ("a", "u1"), ("b", "u2"), ("b", "u4"), ("a", "u3")
    ]  # fmt: skip


def test_passages_are_the_paragraphs_sharing_query_terms_best_first() -> None:
    """BM25 picks the paragraphs that share terms with the query (English or Korean), in rank
    order; headings, short lines and unrelated paragraphs are never quoted."""
    page = (
        "# Widget market\n\nShort.\n\n"
        "The widget market grew twelve percent, and widget prices rose with the market.\n\n"
        "Rain is expected in the north for most of the coming holiday weekend.\n\n"
        "- Widget exports doubled\n- to new markets in **Asia** and [Europe](https://e.eu)\n\n"
        "위젯 시장 규모는 2025년에 크게 성장했으며 수출도 함께 늘어났습니다."
    )
    assert best_passages(page, "widget market", 2) == [
        "The widget market grew twelve percent, and widget prices rose with the market.",
        "Widget exports doubled to new markets in Asia and Europe",
    ]
    assert best_passages(page, "위젯 시장", 1) == [
        "위젯 시장 규모는 2025년에 크게 성장했으며 수출도 함께 늘어났습니다."
    ]
    assert best_passages(page, "semiconductor", 2) == []


def test_the_summary_cites_only_pages_fetched_in_this_run(tmp_path: Path) -> None:
    """Sources are the fetched pages with title, URL, fetch time and quoted passages; the rest
    (a 404, a private address, an unrelated page) are listed as not used, never cited."""
    with serve(page) as pages, serve(searxng_api(results_for(pages))) as searx:
        work = assignment(tmp_path, "Search the web for recent widget market size figures.")
        findings = research(searx, pages).research(["widget market size"])
        fetched = sorted({seen.route for seen in pages.seen})
    brief = render_brief(work, findings)
    assert cited_urls(brief) == [f"{pages.base_url}/growth", f"{pages.base_url}/makers"]
    assert fetched == ["/gone", "/growth", "/makers", "/weather"]  # 10.0.0.1 never contacted
    assert MEMORY_URL not in brief
    assert "### [1] Widget market growth" in brief and f"- **Fetched:** {NOW}" in brief
    assert "> The global widget market size reached 4.2 billion dollars in 2025" in brief
    assert "Shipping costs" not in brief  # a passage with no query term is not quoted
    assert "Copyright" not in brief and "Home" not in brief  # main content only
    assert "- **Published (per the search provider):** 2025-12-01" in brief
    not_used = brief.split("## Results not used", 1)[1]
    assert f"<{pages.base_url}/gone> — HTTP 404" in not_used
    assert "<http://10.0.0.1/internal> — " in not_used and "private address" in not_used
    assert f"<{pages.base_url}/weather> — no passage" in not_used
    summary = brief.split("## Summary", 1)[1].split("## Sources", 1)[0]
    assert summary.count("[1]") == 1 and summary.count("[2]") == 1


def test_no_usable_source_fails_saying_what_was_tried(tmp_path: Path) -> None:
    """When every page fails, ResearchFailed names the queries and each URL with its reason."""
    with serve(page) as pages, serve(searxng_api(results_for(pages))) as searx:
        agent = WebResearch(
            provider=SearxngProvider(searx.base_url),
            provider_label="searxng (loopback)",
            allow=(),  # the page server is not allowed: every loopback page is refused
        )
        with pytest.raises(ResearchFailed) as caught:
            agent.research(["widget market size"])
    message = str(caught.value)
    assert "found no usable source" in message and "'widget market size': 5 results" in message
    assert f"{pages.base_url}/growth" in message and "loopback address" in message
    assert pages.seen == []


def test_the_builtin_executor_writes_the_summary_or_fails_explicitly(tmp_path: Path) -> None:
    """With a provider, web_search writes the cited summary; an unreachable one is FAILED."""
    purpose = "Search the web for recent widget market size figures."
    with serve(page) as pages, serve(searxng_api(results_for(pages))) as searx:
        signal = BuiltinExecutor(research(searx, pages)).execute_tool_task(
            assignment(tmp_path, purpose)
        )
        assert signal.status == "COMPLETED", signal.error
        (produced,) = signal.outputs
        assert produced.path == f"runs/{RUN}/workspace/ANALYZING/P1-S01-T01-PRE-01.md"
        brief = (tmp_path / produced.path).read_text("utf-8")
        assert brief.startswith("> Written by the multiverse web_search agent")
        assert cited_urls(brief) == [f"{pages.base_url}/growth", f"{pages.base_url}/makers"]
        searched = searx.seen[0].query["q"][0]
        assert "widget" in searched and "market" in searched
    down = WebResearch(provider=SearxngProvider(searx.base_url, timeout_seconds=2),
                       provider_label="searxng (down)")  # fmt: skip
    failed = BuiltinExecutor(down).execute_tool_task(assignment(tmp_path, purpose))
    assert failed.status == "FAILED" and failed.error is not None
    assert "found no usable source" in failed.error and "unreachable" in failed.error


def test_a_named_provider_without_its_key_writes_the_honest_note(tmp_path: Path) -> None:
    """A provider that cannot be used leaves the 'not performed' note, saying why."""
    executor = BuiltinExecutor(
        None, "web_search is mapped to tavily, but TAVILY_API_KEY is not set"
    )
    signal = executor.execute_tool_task(assignment(tmp_path, "Search for widget market size."))
    assert signal.status == "COMPLETED"
    note = (tmp_path / signal.outputs[0].path).read_text("utf-8")
    assert "No web search was performed" in note and "TAVILY_API_KEY is not set" in note


def test_a_run_with_searxng_configured_produces_a_cited_search_summary(home: Home) -> None:
    """The daemon, its mapping pointed at a loopback SearXNG, writes a cited web_search summary."""
    with serve(page) as pages, serve(searxng_api(results_for(pages))) as searx:
        mapping = home.root / "runtime-mapping.yaml"
        text = mapping.read_text("utf-8")
        configured = (
            f"  web_search: {{tool: web_search, options: {{provider: searxng, "
            f"base_url: '{searx.base_url}', fetch_top: 2}}}}\n"
            f"  web_fetch: {{tool: web_fetch, options: {{allow_hosts: ['{pages.host}']}}}}\n"
        )
        plain = "  web_search: web_search\n  web_fetch: web_fetch\n"
        assert plain in text
        mapping.write_text(text.replace(plain, configured), "utf-8")
        copy_assets(home)
        request = "Analyse these reports and write a memo on the latest widget market trends."
        assert cli(home, "submit", request).returncode == 0
        assert once(home).returncode == 0
        run_id = only_run(home)["run_id"]
        assert cli(home, "confirm", run_id).returncode == 0
        finished = once(home)
        assert finished.returncode == 0, finished.stderr
        assert only_run(home)["status"] == "COMPLETED"
        assert searx.seen and pages.seen
    searches = [t for t in run_tree(home, run_id)["tool_tasks"] if t["tool_type"] == "web_search"]
    assert searches and {t["status"] for t in searches} == {"COMPLETED"}
    briefs = [
        path.read_text("utf-8")
        for path in home.run(run_id).workspace.rglob("*.md")
        if path.read_text("utf-8").startswith("> Written by the multiverse web_search agent")
    ]
    assert len(briefs) == len(searches)
    for brief in briefs:
        assert cited_urls(brief)
        assert set(cited_urls(brief)) <= {f"{pages.base_url}{route}" for route in ARTICLES}
        assert re.search(r"- \*\*Fetched:\*\* \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", brief)
        assert "widget" in brief.split("## Sources", 1)[1].lower()
