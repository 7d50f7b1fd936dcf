"""The cited summary a web_search tool task writes into the workspace (pure)."""

from __future__ import annotations

from executor.search.records import Findings, Source
from multiverse.contracts import ToolAssignment

MARK = (
    "> Written by the multiverse web_search agent: every passage below is quoted from a page "
    "fetched in this run; no language model wrote or changed it."
)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def _source(number: int, source: Source) -> list[str]:
    lines = [
        f"### [{number}] {source.title}",
        "",
        f"- **URL:** <{source.url}>",
        f"- **Fetched:** {source.fetched_at}",
    ]
    if source.published:
        lines.append(f"- **Published (per the search provider):** {source.published}")
    lines += [f"- **Found by:** `{source.query}`", ""]
    for passage in source.passages:
        lines += [_quote(passage), ""]
    return lines


def render_brief(assignment: ToolAssignment, findings: Findings) -> str:
    """The summary: what was searched, each fetched source with its quoted passages, cited."""
    tool = assignment.tool_task
    lines = [
        MARK,
        "",
        f"# Web search: {tool.tool_task_name}",
        "",
        f"- **Run:** `{assignment.run_id}` · **Tool task:** `{tool.tool_task_id}` ({tool.timing})",
        f"- **For task:** `{assignment.task.task_id}` {assignment.task.task_name}",
        f"- **Purpose:** {' '.join(tool.tool_task_purpose.split()) or '(none given)'}",
        f"- **Provider:** {findings.provider} · **Searched:** {findings.searched_at}",
        "",
        "## Summary",
        "",
        "Extractive: the most relevant passage of each source, with its number in the list of "
        "sources below.",
        "",
        *(f"- {s.passages[0]} [{n}]" for n, s in enumerate(findings.sources, 1)),
        "",
        "## Sources",
        "",
    ]
    for number, source in enumerate(findings.sources, 1):
        lines += _source(number, source)
    lines += ["## Queries", ""]
    for n, outcome in enumerate(findings.queries, 1):
        result = f"failed: {outcome.error}" if outcome.error else f"{outcome.hits} results"
        lines.append(f"{n}. `{outcome.query}` — {result}")
    if findings.skipped:
        lines += ["", "## Results not used", ""]
        lines += [f"- <{s.url}> — {s.reason}" for s in findings.skipped]
    return "\n".join(lines).rstrip() + "\n"
