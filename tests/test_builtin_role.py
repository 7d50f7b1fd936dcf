"""Tests of BuiltinExecutor: every phase's document, publishing, tools, confinement, no raising."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from executor.builtin import BuiltinExecutor
from multiverse.home import PHASE_FOLDERS, Home
from multiverse.models import AssetType, MajorStage, Phase, Task, Timing, ToolTask, UserInstruction
from multiverse.roles import ExecutorRole, ResultSignal, TaskAssignment, ToolAssignment
from multiverse.spec import RequestSpec

from specbrief import chart, checked

RUN = "run-20250101-000000-001"
WS = f"runs/{RUN}/workspace"
OUT = f"outputs/{RUN}"
ASSETS = ["assets/market_report_2024.md", "assets/competitor_review.txt",
          "assets/quarterly_revenue.csv", "assets/korea_market_ko.md"]  # fmt: skip
REQUEST = "Write a market-entry memo with a chart of the revenue figures.\nKeep it short."
PHASE_IDS = {"ANALYZING": "P1", "STRATEGIZING": "P2", "REFINING_CONTENT": "P3",
             "GENERATING_OUTPUT": "P4", "SETUP": "P0"}  # fmt: skip
BANNER = "Produced offline by the multiverse builtin engine"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(Path(__file__).parent / "fixtures" / "assets", tmp_path / "assets")
    for folder in PHASE_FOLDERS:
        (tmp_path / WS / folder).mkdir(parents=True)
    (tmp_path / OUT).mkdir(parents=True)
    return tmp_path


def make_task(phase: str, refs: list[str], out: str, post: str = "", task_id: str = "") -> Task:
    pid = PHASE_IDS[phase]
    return Task(task_id=task_id or f"{pid}-S01-T01", run_id=RUN, stage_id=f"{pid}-S01",
                task_name=f"{phase.title()} task", task_purpose="Work on the material.",
                related_references=refs, output_path=out, post_tool_purpose=post,
                execution_order=1)  # fmt: skip


def assignment(home: Path, phase: str, task: Task) -> TaskAssignment:
    pid = PHASE_IDS[phase]
    instruction = UserInstruction(instruction_id="I0001", run_id=RUN, instruction_type="FORMAT",
                                  content="A two-page memo in English")  # fmt: skip
    return TaskAssignment(
        home=str(home), run_id=RUN, request=REQUEST,
        phase=Phase(phase_id=pid, run_id=RUN, phase_name=phase),
        stage=MajorStage(stage_id=f"{pid}-S01", run_id=RUN, phase_id=pid, stage_name="Stage",
                         execution_order=1),
        task=task, instructions=[instruction],
    )  # fmt: skip


def run_task(home: Path, phase: str, refs: list[str], out: str, post: str = "") -> ResultSignal:
    return BuiltinExecutor().execute_task(
        assignment(home, phase, make_task(phase, refs, out, post))
    )


def tool(
    home: Path, phase: str, task: Task, tool_type: str, purpose: str, n: int = 1
) -> ResultSignal:
    tool_task = ToolTask(tool_task_id=f"{task.task_id}-POST-0{n}", run_id=RUN,
                         parent_task_id=task.task_id, timing=Timing.POST, tool_type=tool_type,
                         tool_task_name=f"{tool_type} step", tool_task_purpose=purpose,
                         execution_order=n)  # fmt: skip
    base = assignment(home, phase, task)
    return BuiltinExecutor().execute_tool_task(
        ToolAssignment(
            home=base.home,
            run_id=RUN,
            request=REQUEST,
            phase=base.phase,
            task=task,
            tool_task=tool_task,
        )
    )


def full_chain(home: Path) -> None:
    assert run_task(home, "ANALYZING", ASSETS, f"{WS}/ANALYZING/analysis.md").status == "COMPLETED"
    refs = [f"{WS}/ANALYZING/analysis.md"]
    assert run_task(home, "STRATEGIZING", refs, f"{WS}/STRATEGIZING/strategy.md").error is None
    refs.append(f"{WS}/STRATEGIZING/strategy.md")
    assert (
        run_task(home, "REFINING_CONTENT", refs, f"{WS}/REFINING_CONTENT/refined.md").error is None
    )


def test_builtin_executor_satisfies_the_role_protocol() -> None:
    """BuiltinExecutor is usable wherever an ExecutorRole is expected."""
    role: ExecutorRole = BuiltinExecutor()
    assert callable(role.execute_task)


def test_analysis_report_has_figures_key_sentences_and_facts(home: Path) -> None:
    """ANALYZING writes a report of headings, figures with context, key sentences, file facts."""
    signal = run_task(home, "ANALYZING", ASSETS, f"{WS}/ANALYZING/analysis.md", post="chart it")
    assert signal.status == "COMPLETED" and signal.post_tool_required
    (produced,) = signal.outputs
    assert produced.path == f"{WS}/ANALYZING/analysis.md"
    assert produced.asset_type == AssetType.ANALYSIS_REPORT
    assert produced.summary and "\n" not in produced.summary
    text = (home / produced.path).read_text("utf-8")
    assert text.startswith(f"> {BANNER}")
    assert "## Source: `assets/market_report_2024.md` — European E-Bike Market Report 2024" in text
    assert "  - Executive summary" in text  # structure keeps heading levels
    assert re.search(
        r"\| €18\.5 billion +\| The European e-bike market reached €18\.5 billion", text
    )
    assert re.search(r"\| 1,200억 원 +\| 2023년 국내 전기자전거 시장 규모는", text)
    assert "- 2023년 국내 전기자전거 시장 규모는 1,200억 원으로 전년 대비 35% 성장했다." in text
    assert "8 rows × 5 columns" in text and "| revenue_eur_m" in text
    assert "254 words" in text


def test_phase0_first_analysis_is_an_analysis_report(home: Path) -> None:
    """Phase 0's T04 writes an analysis report into workspace/ANALYZING/."""
    task = make_task("SETUP", ["assets/"], f"{WS}/ANALYZING/first_analysis.md", task_id="T04")
    signal = BuiltinExecutor().execute_task(assignment(home, "SETUP", task))
    assert signal.status == "COMPLETED", signal.error
    assert signal.outputs[0].asset_type == AssetType.ANALYSIS_REPORT
    assert "assets/quarterly_revenue.csv" in (home / signal.outputs[0].path).read_text("utf-8")


def test_strategy_sorts_statements_by_cue_words_and_judges_nothing(home: Path) -> None:
    """STRATEGIZING lists themes, figures per unit, statements by cue words (said to be matched
    by keyword), and only the sources' own conclusions: no direction of its own."""
    run_task(home, "ANALYZING", ASSETS, f"{WS}/ANALYZING/analysis.md")
    signal = run_task(home, "STRATEGIZING", [f"{WS}/ANALYZING/analysis.md"],
                      f"{WS}/STRATEGIZING/strategy.md")  # fmt: skip
    assert signal.outputs[0].asset_type == AssetType.STRATEGY_DOC
    text = (home / signal.outputs[0].path).read_text("utf-8")
    growth = "## Statements using growth words (matched by keyword, not judged)"
    risk = "## Statements using risk words (matched by keyword, not judged)"
    own = "## What the sources conclude (quoted as theirs)"
    assert all(section in text for section in ("## Themes", growth, risk, own))
    assert "Recommended direction" not in text and "Concentrate on" not in text
    assert "성장했다. _(source: `assets/korea_market_ko.md`)_" in text.split(growth)[1]
    assert "Inventory overhang is the main risk" in text.split(risk)[1].split(own)[0]
    assert "**FORMAT:** A two-page memo in English" in text
    assert "workspace/ANALYZING" not in text.split("## Themes")[1]  # cites the assets themselves


def test_refined_content_is_sectioned_and_deduplicated(home: Path) -> None:
    """REFINING_CONTENT groups points by theme with figures, each point once across sections."""
    full_chain(home)
    text = (home / WS / "REFINING_CONTENT" / "refined.md").read_text("utf-8")
    assert "### Key points" in text and "### Supporting figures" in text
    blocks = [part.split("\n\n#")[0] for part in text.split("### Key points")[1:]]
    bullets = [line for block in blocks for line in block.splitlines() if line.startswith("- ")]
    assert len(bullets) >= 5 and len(bullets) == len(set(bullets))


def test_assembly_plan_in_workspace(home: Path) -> None:
    """GENERATING_OUTPUT into the workspace writes an assembly plan naming the deliverables."""
    full_chain(home)
    signal = run_task(home, "GENERATING_OUTPUT", [f"{WS}/REFINING_CONTENT/refined.md"],
                      f"{WS}/GENERATING_OUTPUT/plan.md")  # fmt: skip
    assert signal.outputs[0].asset_type == AssetType.ASSEMBLY_PLAN
    text = (home / signal.outputs[0].path).read_text("utf-8")
    assert f"`{OUT}/report.html`" in text and "## Outline" in text


def test_publishing_writes_an_evidence_brief_with_the_chart_asked_for(home: Path) -> None:
    """Publishing writes the evidence brief (report.md) and a self-contained report.html: the
    question, facts with their file and line, the chart asked for with exact totals."""
    full_chain(home)
    refs = [f"{WS}/REFINING_CONTENT/refined.md", *ASSETS]
    task = make_task("GENERATING_OUTPUT", refs, f"{OUT}/report.md")
    base = assignment(home, "GENERATING_OUTPUT", task)
    chart = UserInstruction(instruction_id="I0002", run_id=RUN, instruction_type="CHART",
                            content="revenue by region: sums of `revenue_eur_m` over every row "
                            "of `assets/quarterly_revenue.csv`, grouped on `region`.")  # fmt: skip
    signal = BuiltinExecutor().execute_task(
        base.model_copy(update={"instructions": [*base.instructions, chart]})
    )
    assert signal.status == "COMPLETED", signal.error
    kinds = {o.path: o.asset_type for o in signal.outputs}
    assert kinds[f"{OUT}/report.md"] == kinds[f"{OUT}/report.html"] == AssetType.FINAL_OUTPUT
    assert kinds[f"{OUT}/report.docx"] == AssetType.FINAL_OUTPUT  # exported beside the HTML
    assert kinds[f"{OUT}/report-chart-1.svg"] == AssetType.TOOL_OUTPUT
    markdown = (home / OUT / "report.md").read_text("utf-8")
    assert markdown.startswith(f"> {BANNER}")
    assert "# Evidence brief: Write a market-entry memo with a chart of the revenue figures" in (
        markdown
    )
    assert "> Write a market-entry memo" in markdown and "> Keep it short." in markdown
    assert re.search(r"— _`assets/market_report_2024\.md`, § [^,]+, line \d+_", markdown)
    assert "| Germany | 6,900 |" in markdown and "| France | 2,400 |" in markdown
    assert "Recommended direction" not in markdown and "## What a model would add" in markdown
    page = (home / OUT / "report.html").read_text("utf-8")
    assert BANNER in page[:300] and "<svg" in page and "pygal-chart" in page
    assert not re.search(r"<(?:script|img|link)[^>]+(?:src|href)=", page)
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", page)
    assert "<table>" in page


def test_publishing_escapes_hostile_html_from_assets(home: Path) -> None:
    """Raw HTML in an asset shows as text in report.html and never runs."""
    (home / "assets" / "hostile.md").write_text(
        "# Hostile\n\nRevenue grew 20% to $5 million <script>alert('x')</script> this year.\n",
        "utf-8",
    )
    run_task(home, "ANALYZING", ["assets/hostile.md"], f"{WS}/ANALYZING/a.md")
    run_task(home, "GENERATING_OUTPUT", [f"{WS}/ANALYZING/a.md"], f"{OUT}/report.md")
    page = (home / OUT / "report.html").read_text("utf-8")
    assert "<script>alert" not in page and "alert('x')" in page


def test_output_outside_workspace_fails(home: Path) -> None:
    """An output_path outside the run's workspace and outputs is refused as FAILED."""
    for out in ("assets/evil.md", f"runs/{RUN}/db/tasks.md", "../evil.md", "/tmp/evil.md"):
        signal = run_task(home, "ANALYZING", ASSETS[:1], out)
        assert signal.status == "FAILED" and "refused" in (signal.error or ""), out
    assert not (home / "assets" / "evil.md").exists()


def test_references_outside_home_or_missing_fail(home: Path) -> None:
    """A reference leaving the home (by `..` or a symlink) or missing fails with its path."""
    (home / "assets" / "link.md").symlink_to("/etc/hostname")
    for ref in ("../../etc/passwd", "/etc/passwd", "assets/link.md"):
        signal = run_task(home, "ANALYZING", [ref], f"{WS}/ANALYZING/x.md")
        assert signal.status == "FAILED" and ref in (signal.error or "")
    signal = run_task(home, "ANALYZING", ["assets/nope.md"], f"{WS}/ANALYZING/x.md")
    assert signal.status == "FAILED" and "assets/nope.md" in (signal.error or "")
    assert not (home / WS / "ANALYZING" / "x.md").exists()


def test_failures_become_signals_never_exceptions(home: Path) -> None:
    """A write that the file system refuses, or an unknown phase, is a FAILED signal."""
    shutil.rmtree(home / WS / "STRATEGIZING")
    (home / WS / "STRATEGIZING").write_text("a file where a folder should be", "utf-8")
    signal = run_task(home, "STRATEGIZING", ASSETS[:1], f"{WS}/STRATEGIZING/s.md")
    assert signal.status == "FAILED" and "cannot write" in (signal.error or "")
    assert "Not a directory" in (signal.error or "")
    task = make_task("ANALYZING", ASSETS[:1], f"{WS}/ANALYZING/x.md")
    odd = assignment(home, "ANALYZING", task).model_copy(
        update={"phase": Phase(phase_id="P1", run_id=RUN, phase_name="DREAMING")}
    )
    assert BuiltinExecutor().execute_task(odd).status == "FAILED"


def test_same_input_same_output(home: Path) -> None:
    """The engine is deterministic: the same task writes the same bytes twice."""
    out = f"{WS}/ANALYZING/analysis.md"
    run_task(home, "ANALYZING", ASSETS, out)
    first = (home / out).read_bytes()
    run_task(home, "ANALYZING", ASSETS, out)
    assert (home / out).read_bytes() == first


def test_data_visualization_writes_offline_pygal_chart(home: Path) -> None:
    """data_visualization writes <tool_task_id>.html with an inline pygal SVG and no CDN."""
    parent = make_task("ANALYZING", ["assets/quarterly_revenue.csv"], f"{WS}/ANALYZING/a.md")
    signal = tool(home, "ANALYZING", parent, "data_visualization", "Chart the revenue series")
    assert signal.status == "COMPLETED", signal.error
    (produced,) = signal.outputs
    assert produced.path == f"{WS}/ANALYZING/P1-S01-T01-POST-01.html"
    assert produced.asset_type == AssetType.TOOL_OUTPUT
    page = (home / produced.path).read_text("utf-8")
    assert page.count("<svg") >= 1 and "pygal-chart" in page and "Germany" in page
    assert "<script src" not in page and not re.search(r"""(?:src|href)=["']https?:""", page)
    assert "revenue_eur_m" in produced.summary
    again = tool(home, "ANALYZING", parent, "data_visualization", "Chart the revenue series")
    assert (home / again.outputs[0].path).read_text("utf-8") == page  # stable chart ids


def test_comparison_chart_and_beside_published_output(home: Path) -> None:
    """A comparison purpose charts the largest values; beside a published output it goes there."""
    parent = make_task("GENERATING_OUTPUT", ASSETS, f"{OUT}/report.md")
    purpose = "Chart the comparison of the largest values across sources as a bar chart."
    signal = tool(home, "GENERATING_OUTPUT", parent, "data_visualization", purpose)
    assert signal.outputs[0].path == f"{OUT}/P4-S01-T01-POST-01.html"
    page = (home / signal.outputs[0].path).read_text("utf-8")
    assert "Largest values across sources" in page


def test_chart_without_figures_says_so(home: Path) -> None:
    """Material without numbers gives a page that says no figures were found."""
    (home / "assets" / "words.md").write_text("# Notes\n\nNothing but words here.\n", "utf-8")
    parent = make_task("ANALYZING", ["assets/words.md"], f"{WS}/ANALYZING/a.md")
    signal = tool(home, "ANALYZING", parent, "data_visualization", "Chart it")
    assert signal.status == "COMPLETED"
    page = (home / signal.outputs[0].path).read_text("utf-8")
    assert "No figures were found" in page and "<svg" not in page


def test_web_search_offline_note_is_honest(home: Path) -> None:
    """web_search writes a note saying no search was made, with the queries it would run."""
    parent = make_task("ANALYZING", ASSETS[:1], f"{WS}/ANALYZING/a.md")
    signal = tool(home, "ANALYZING", parent, "web_search",
                  "Search for recent market size, growth and competitor figures.")  # fmt: skip
    assert signal.status == "COMPLETED"
    text = (home / signal.outputs[0].path).read_text("utf-8")
    assert text.startswith(f"> {BANNER}")
    assert "No web search was performed" in text and "no network access" in text
    assert "`market size growth competitor`" in text
    assert "runtime-mapping.yaml" in text


def test_unknown_tool_type_fails(home: Path) -> None:
    """A tool type the offline engine lacks is a FAILED signal naming it."""
    parent = make_task("ANALYZING", ASSETS[:1], f"{WS}/ANALYZING/a.md")
    signal = tool(home, "ANALYZING", parent, "run_shell_command", "ls")
    assert signal.status == "FAILED"
    assert signal.error == "tool type run_shell_command is not available offline"


def test_a_chart_asked_by_name_is_drawn_from_the_assets_data(home: Path, tmp_path: Path) -> None:
    """ "revenue by country" is drawn from the assets' tables even when the task read a note;
    an asset linked to a file outside the home is never read."""
    outside = tmp_path.parent / f"{tmp_path.name}-outside.csv"
    outside.write_text("country,revenue\nLeakland,999\nSecretia,777\n", encoding="utf-8")
    (home / "assets" / "leak.csv").symlink_to(outside)
    note = f"{WS}/ANALYZING/note.md"
    (home / note).write_text("# Note\n\nNo table here.\n", encoding="utf-8")
    parent = make_task("ANALYZING", [note], f"{WS}/ANALYZING/a.md")
    signal = tool(home, "ANALYZING", parent, "data_visualization", "A chart of revenue by country")
    assert signal.status == "COMPLETED", signal.error
    page = (home / signal.outputs[0].path).read_text("utf-8")
    assert "Revenue 2023 (€ bn) by Country" in page  # the market report's table
    assert "revenue_eur_m by region (sum of 4 rows each)" in page  # the CSV, every row summed
    assert "Leakland" not in page and "Secretia" not in page


def test_a_chart_the_spec_asks_for_is_drawn_from_the_spec_not_the_words(home: Path) -> None:
    """A data_visualization tool task of a run with a confirmed spec draws the spec's charts
    (the measure and grouping CONFIRM froze) from their tables, whatever chart the request's
    words or the tool's purpose would suggest; the request naming revenue does not bring it in."""
    asked = chart("a chart of units by region", "quarterly_revenue.csv", "units_k",
                  dimension="region")  # fmt: skip
    spec = checked(Home(home), RequestSpec(request=REQUEST, charts=[asked]))
    assert spec.charts[0].drawable, spec.charts[0].reason
    parent = make_task("GENERATING_OUTPUT", ASSETS, f"{OUT}/report.md")
    tool_task = ToolTask(tool_task_id=f"{parent.task_id}-PRE-01", run_id=RUN,
                         parent_task_id=parent.task_id, timing=Timing.PRE,
                         tool_type="data_visualization", tool_task_name="Charts asked for",
                         tool_task_purpose="A chart of revenue by country",
                         execution_order=1)  # fmt: skip
    base = assignment(home, "GENERATING_OUTPUT", parent)
    signal = BuiltinExecutor().execute_tool_task(ToolAssignment(
        home=base.home, run_id=RUN, request="Write a memo with a chart of revenue by country.",
        phase=base.phase, task=parent, tool_task=tool_task, spec=spec))  # fmt: skip
    assert signal.status == "COMPLETED", signal.error
    page = (home / signal.outputs[0].path).read_text("utf-8")
    assert page.count("<svg") == 1 and "Source: assets/quarterly_revenue.csv" in page
    assert "units (thousand) by region" in page and "525" in page  # Germany: (462+…+489) / 4
    assert "Revenue 2023" not in page and "revenue_eur_m" not in page
