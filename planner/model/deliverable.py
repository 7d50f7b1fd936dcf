"""What code adds to a deliverable task of a model's plan, so the memo rests on the sources.

A small model picks the analysis notes of earlier phases as the deliverable's references and
leaves out the assets whose figures the memo must carry; and it rarely thinks of drawing the
chart the request asks for before the memo that shows it. Two rules, both visible in the plan:
- a task that publishes to outputs/ also reads the run's original inputs (most relevant first,
  up to SOURCE_LIMIT), so its figures can be traced to them;
- when the request asks for a chart and no chart was drawn in the run yet, the first deliverable
  task gets a PRE tool purpose naming it, so the visualisation tool draws it from the data
  before the memo is written.
"""

from __future__ import annotations

import re

from multiverse.contracts import PlanContext
from multiverse.models import AssetType

SOURCE_LIMIT = 3
_CHART = re.compile(r"\b(chart|graph|plot|visuali[sz]ation|diagram)s?\b|차트|그래프|도표", re.I)


def asked_chart(request: str) -> str | None:
    """The sentence of the request that asks for a chart, else None."""
    for sentence in re.split(r"(?<=[.!?。])\s+|\n+", request):
        if _CHART.search(sentence):
            return " ".join(sentence.split())
    return None


def drew_chart(context: PlanContext) -> bool:
    """Whether a tool of this run already drew a chart (a TOOL_OUTPUT page in the catalog)."""
    return any(
        entry.run_id == context.run_id
        and entry.asset_type is AssetType.TOOL_OUTPUT
        and entry.file_path.endswith((".html", ".svg"))
        for entry in context.catalog
    )


def source_inputs(context: PlanContext, ranked: list[str]) -> list[str]:
    """The run's original inputs among `ranked` (most relevant first), at most SOURCE_LIMIT."""
    inputs = {
        entry.file_path
        for entry in context.catalog
        if entry.asset_type is AssetType.ORIGINAL_INPUT and entry.run_id is None
    }
    return [path for path in ranked if path in inputs][:SOURCE_LIMIT]


def chart_purpose(context: PlanContext) -> str:
    """The PRE tool purpose of a deliverable, or "" when no chart is asked or one exists."""
    sentence = asked_chart(context.request)
    if sentence is None or drew_chart(context):
        return ""
    return f"Draw the chart the request asks for from the data, before the memo: {sentence}"
