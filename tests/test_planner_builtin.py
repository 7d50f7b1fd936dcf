"""Tests of the builtin offline planner (planner.builtin): realistic runs, valid plans."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from test_planner_support import RUN_ID, context, make_home, walk_run, write_request

from multiverse.models import AssetType, CatalogEntry, Phase, Timing, UserInstruction
from multiverse.roles import PlanFailed, PlannerRole
from planner.builtin import BuiltinPlanner

MEMO = (
    "Analyse these reports with the latest news and write a 2-page market-entry memo with a chart "
    "of the revenue figures"
)
KOREAN = "최신 뉴스와 함께 시장 경쟁 분석 보고서를 작성하고 매출 차트를 포함해줘"
PLAIN = "Summarise the quarterly notes into a short report for the board"


def test_builtin_planner_is_a_planner_role() -> None:
    """BuiltinPlanner provides every method of the PlannerRole interface."""
    planner: PlannerRole = BuiltinPlanner()
    for name in (
        "decide_mode",
        "plan_phase0",
        "propose",
        "plan_stages",
        "plan_tasks",
        "plan_tools",
    ):
        assert callable(getattr(planner, name))


def test_phase0_plan(tmp_path: Path) -> None:
    """Phase 0 is T00, T02, T03, T04 in order; T04 reads the request and every asset."""
    home = make_home(tmp_path)
    write_request(home, MEMO)
    plan = BuiltinPlanner().plan_phase0(context(home, MEMO))
    assert [(t.task_id, t.execution_order, t.stage_id) for t in plan.tasks] == [
        ("T00", 1, "P0-S01"),
        ("T02", 2, "P0-S01"),
        ("T03", 3, "P0-S01"),
        ("T04", 4, "P0-S01"),
    ]
    request = f"runs/{RUN_ID}/request.md"
    assert plan.tasks[0].output_path == f"runs/{RUN_ID}/workspace"
    assert plan.tasks[3].related_references == [
        request,
        "assets/competitors.md",
        "assets/q1.md",
        "assets/q2.md",
        "assets/q3.md",
        "assets/시장_보고서.md",
    ]
    assert all(t.related_references[0] == request for t in plan.tasks)


def test_whole_run_is_planned_validly(tmp_path: Path) -> None:
    """Every plan of a whole run is valid, and every reference is a real file at plan time."""
    home = make_home(tmp_path)
    walk = walk_run(home, MEMO)
    assert [(s.stage_id, s.stage_name) for s in walk.stages] == [
        ("P1-S01", "Source fact extraction"),
        ("P1-S02", "Consolidated analysis"),
        ("P2-S01", "Strategic assessment"),
        ("P3-S01", "Content refinement"),
        ("P4-S01", "Assembly plan"),
        ("P4-S02", "Publish deliverables"),
    ]
    for task in walk.tasks:
        assert task.related_references, task.task_id
        assert all((home / ref).is_file() for ref in task.related_references), task.task_id


def test_sources_are_grouped_by_three(tmp_path: Path) -> None:
    """Fact extraction makes one task per group of up to 3 sources, each reading the request."""
    home = make_home(tmp_path)
    walk = walk_run(home, MEMO)
    facts = [t for t in walk.tasks if t.stage_id == "P1-S01"]
    assert [t.output_path.rsplit("/", 1)[1] for t in facts] == ["facts_01.md", "facts_02.md"]
    assert [len(t.related_references) for t in facts] == [4, 3]
    assert "Extract headings, figures" in facts[0].task_purpose


def test_chain_of_outputs(tmp_path: Path) -> None:
    """Each stage reads what the previous ones produced, and publishing writes into outputs/."""
    home = make_home(tmp_path)
    tasks = {t.stage_id: t for t in walk_run(home, MEMO).tasks}
    work = f"runs/{RUN_ID}/workspace"
    assert f"{work}/ANALYZING/facts_02.md" in tasks["P1-S02"].related_references
    assert f"{work}/ANALYZING/analysis_summary.md" in tasks["P2-S01"].related_references
    assert f"{work}/STRATEGIZING/strategy.md" in tasks["P3-S01"].related_references
    assert f"{work}/REFINING_CONTENT/refined_content.md" in tasks["P4-S01"].related_references
    publish = tasks["P4-S02"]
    assert publish.output_path == f"outputs/{RUN_ID}/report.md"
    assert f"{work}/GENERATING_OUTPUT/assembly_plan.md" in publish.related_references
    assert f"{work}/ANALYZING/web_P1-S02-T01.md" in publish.related_references  # TOOL_OUTPUT
    assert "assets/q1.md" in publish.related_references  # the brief quotes the sources
    assert "guidelines/style.md" in publish.related_references
    assert "guidelines/mcp_list.md" not in publish.related_references
    assert "SWOT" in tasks["P2-S01"].task_purpose
    assert "memo" in publish.task_purpose and "2 pages" in tasks["P4-S01"].task_purpose
    assert "evidence brief" in publish.task_purpose


def test_market_and_chart_requests_expand_mcps(tmp_path: Path) -> None:
    """A request for outside information expands market_research (PRE); the chart asked for is
    drawn by the brief itself from the whole table, so no chart tool task is planned."""
    home = make_home(tmp_path)
    walk = walk_run(home, MEMO)
    assert walk.tool_plans == {"P1-S02-T01-PRE": ["web_search", "web_search"]}


def test_no_web_search_unless_outside_information_is_asked(tmp_path: Path) -> None:
    """A market request that asks for no outside information plans no web search."""
    home = make_home(tmp_path)
    walk = walk_run(home, "Write a market-entry memo on the markets in the reports.")
    assert walk.tool_plans == {}


def test_korean_request_flows_through(tmp_path: Path) -> None:
    """A Korean request gets the same plans, and its text reaches the tool purpose unchanged."""
    home = make_home(tmp_path)
    walk = walk_run(home, KOREAN)
    assert set(walk.tool_plans) == {"P1-S02-T01-PRE"}
    consolidate = next(t for t in walk.tasks if t.stage_id == "P1-S02")
    assert KOREAN in consolidate.pre_tool_purpose
    assert "Korean" in next(t for t in walk.tasks if t.stage_id == "P4-S02").task_purpose


def test_without_mcp_list_default_tools(tmp_path: Path) -> None:
    """Without recipes, PRE is one web_search."""
    home = make_home(tmp_path)
    (home / "guidelines/mcp_list.md").unlink()
    walk = walk_run(home, MEMO)
    assert walk.tool_plans == {"P1-S02-T01-PRE": ["web_search"]}


def test_plain_request_needs_no_tools(tmp_path: Path) -> None:
    """A request without outside-information or visual words plans no tool tasks."""
    home = make_home(tmp_path)
    walk = walk_run(home, PLAIN)
    assert walk.tool_plans == {}
    assert all(not t.pre_tool_purpose and not t.post_tool_purpose for t in walk.tasks)


def test_run_without_assets(tmp_path: Path) -> None:
    """With no assets, fact extraction reads the request and the first analysis."""
    home = make_home(tmp_path, assets={}, style=False)
    walk = walk_run(home, PLAIN)
    facts = [t for t in walk.tasks if t.stage_id == "P1-S01"]
    assert len(facts) == 1
    assert facts[0].related_references == [
        f"runs/{RUN_ID}/request.md",
        f"runs/{RUN_ID}/workspace/ANALYZING/first_analysis.md",
    ]


def test_many_assets(tmp_path: Path) -> None:
    """Ten sources give four extraction tasks, all read by the consolidation."""
    home = make_home(tmp_path, assets={f"assets/note_{n:02d}.md": f"# {n}\n" for n in range(10)})
    tasks = walk_run(home, PLAIN).tasks
    facts = [t.output_path for t in tasks if t.stage_id == "P1-S01"]
    assert len(facts) == 4
    consolidate = next(t for t in tasks if t.stage_id == "P1-S02")
    assert consolidate.related_references == facts


def test_confirmed_instructions_shape_the_publishing(tmp_path: Path) -> None:
    """The run's confirmed DELIVERABLE and the absence of VISUALS override the request's words."""
    home = make_home(tmp_path)
    write_request(home, MEMO)
    deliverable = UserInstruction(
        instruction_id="I0001",
        run_id=RUN_ID,
        instruction_type="DELIVERABLE",
        content="Deliver a presentation as markdown.",
    )
    base = context(home, MEMO, instructions=[deliverable])
    phase = base.phases[3]
    stages = BuiltinPlanner().plan_stages(base.model_copy(update={"phase": phase})).stages
    ctx = base.model_copy(update={"phase": phase, "stages": stages, "stage": stages[-1]})
    task = BuiltinPlanner().plan_tasks(ctx).tasks[0]
    assert "presentation" in task.task_purpose
    assert task.post_tool_purpose == ""
    assert task.output_path == f"outputs/{RUN_ID}/report.md"


def test_existing_output_gets_a_new_name(tmp_path: Path) -> None:
    """When an output name is taken on disk, the builtin picks a numbered variant."""
    home = make_home(tmp_path)
    write_request(home, MEMO)
    taken = home / f"runs/{RUN_ID}/workspace/ANALYZING/facts_01.md"
    taken.parent.mkdir(parents=True)
    taken.write_text("old", "utf-8")
    base = context(home, MEMO)
    phase = base.phases[0]
    stages = BuiltinPlanner().plan_stages(base.model_copy(update={"phase": phase})).stages
    ctx = base.model_copy(update={"phase": phase, "stages": stages, "stage": stages[0]})
    plan = BuiltinPlanner().plan_tasks(ctx)
    assert plan.tasks[0].output_path.endswith("ANALYZING/facts_01_2.md")


def test_unknown_phase_gets_a_synthesis_stage(tmp_path: Path) -> None:
    """A phase renamed by a person still gets one valid stage and one valid task."""
    home = make_home(tmp_path)
    write_request(home, PLAIN)
    phase = Phase(phase_id="P3", run_id=RUN_ID, phase_name="REVIEWING", phase_purpose="Review it.")
    entry = CatalogEntry(
        file_path=f"runs/{RUN_ID}/request.md", run_id=RUN_ID, asset_type=AssetType.ANALYSIS_REPORT
    )
    base = context(home, PLAIN, phase=phase, phases=[phase])
    stages = BuiltinPlanner().plan_stages(base).stages
    assert [s.stage_name for s in stages] == ["Reviewing synthesis"]
    ctx = base.model_copy(
        update={"stages": stages, "stage": stages[0], "catalog": [*base.catalog, entry]}
    )
    task = BuiltinPlanner().plan_tasks(ctx).tasks[0]
    assert task.output_path == f"runs/{RUN_ID}/workspace/REVIEWING/synthesis.md"


def test_post_tool_without_purpose(tmp_path: Path) -> None:
    """When the Executor asks for a visual the task did not plan, POST charts the task's output."""
    home = make_home(tmp_path)
    (home / "guidelines/mcp_list.md").unlink()
    walk = walk_run(home, PLAIN)
    task = walk.tasks[-1]
    tools = BuiltinPlanner().plan_tools(context(home, PLAIN, task=task), Timing.POST).tool_tasks
    assert [(t.tool_task_id, t.tool_type) for t in tools] == [
        (f"{task.task_id}-POST-01", "data_visualization"),
    ]
    assert task.output_path in tools[0].tool_task_purpose


def test_recipe_with_unavailable_tool_is_skipped(tmp_path: Path) -> None:
    """A recipe naming a tool the mapping does not provide falls back to the default tool."""
    home = make_home(tmp_path)
    walk = walk_run(home, MEMO)
    publish = walk.tasks[-1]
    ctx = context(home, MEMO, task=publish, tool_types=["data_visualization"])
    (home / "guidelines/mcp_list.md").write_text(
        "| mcp_name | applies_when | timing | step_order | tool_type | step_purpose |\n"
        "|---|---|---|---|---|---|\n"
        "| paint | chart | POST | 1 | paint_program | Paint it. |\n",
        "utf-8",
    )
    tools = BuiltinPlanner().plan_tools(ctx, Timing.POST).tool_tasks
    assert [t.tool_type for t in tools] == ["data_visualization"]


def test_no_tool_types_fails_clearly(tmp_path: Path) -> None:
    """With no tool types available the builtin raises PlanFailed rather than invent one."""
    home = make_home(tmp_path)
    walk = walk_run(home, MEMO)
    ctx = context(home, MEMO, task=walk.tasks[-1], tool_types=[])
    with capture_logs() as logs, pytest.raises(PlanFailed) as caught:
        BuiltinPlanner().plan_tools(ctx, Timing.POST)
    assert caught.value.target == f"post_tool:{walk.tasks[-1].task_id}"
    assert "mapping provides no tool types" in str(caught.value)
    assert logs[-1]["event"] == "plan_invalid"


def test_missing_context_fails_clearly(tmp_path: Path) -> None:
    """A context without the phase, stage or task to plan is a PlanFailed naming it."""
    home = make_home(tmp_path)
    planner = BuiltinPlanner()
    with pytest.raises(PlanFailed, match="names no phase"):
        planner.plan_stages(context(home, MEMO))
    with pytest.raises(PlanFailed, match="names no stage"):
        planner.plan_tasks(context(home, MEMO))
    with pytest.raises(PlanFailed, match="names no task"):
        planner.plan_tools(context(home, MEMO), Timing.PRE)


def test_plans_are_logged(tmp_path: Path) -> None:
    """Each plan made is logged as a plan_made event with its target and run."""
    home = make_home(tmp_path)
    write_request(home, MEMO)
    with capture_logs() as logs:
        BuiltinPlanner().plan_phase0(context(home, MEMO))
    assert logs == [
        {
            "event": "plan_made",
            "target": "phase0",
            "run_id": RUN_ID,
            "engine": "builtin",
            "log_level": "info",
        },
    ]


def test_confirmed_research_asks_for_a_pre_tool(tmp_path: Path) -> None:
    """A confirmed RESEARCH instruction plans a PRE web search even if the request names none."""
    home = make_home(tmp_path)
    write_request(home, PLAIN)
    research = UserInstruction(
        instruction_id="I0002", run_id=RUN_ID, instruction_type="RESEARCH", content="Search."
    )
    base = context(home, PLAIN, instructions=[research])
    phase = base.phases[0]
    stages = BuiltinPlanner().plan_stages(base.model_copy(update={"phase": phase})).stages
    ctx = base.model_copy(update={"phase": phase, "stages": stages, "stage": stages[1]})
    task = BuiltinPlanner().plan_tasks(ctx).tasks[0]
    assert task.pre_tool_purpose.startswith("Search the web for recent outside information")
    assert task.related_references == [f"runs/{RUN_ID}/request.md"]
