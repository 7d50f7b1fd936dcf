"""Tests of the model planner's bookkeeping: answer models, output names, numbered references."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

import pytest
from pydantic import ValidationError

from multiverse.gateway import load_prompt
from multiverse.models import AssetType, CatalogEntry, MajorStage, Phase
from multiverse.roles import PlanContext
from planner.model import PROMPTS_PACKAGE
from planner.model.answers import (
    StagesAnswer,
    TaskAnswer,
    TasksAnswer,
    ToolTasksAnswer,
    asked_chart,
    chart_purpose,
    deliverable_marks,
    file_slug,
    free_path,
    output_paths,
    source_inputs,
    tasks_answer,
)
from planner.model.context import REFERENCE_LIMIT, reference_candidates

RUN_ID = "run-20260101-120000-001"
EXAMPLES = {
    "mode": None,
    "stages": StagesAnswer,
    "tasks": TasksAnswer,
    "tools": ToolTasksAnswer,
}


def task(name: str, file_name: str = "", deliverable: bool | None = None) -> TaskAnswer:
    """A task answer (with `deliverable` only when given, as in the publishing stage)."""
    model = tasks_answer(["runs/x/request.md"], publishing=deliverable is not None)
    item: dict[str, object] = {"name": name, "purpose": "Do it.", "file_name": file_name}
    if deliverable is not None:
        item["deliverable"] = deliverable
    return model.model_validate({"tasks": [item]}).tasks[0]


def context(home: Path, catalog: list[CatalogEntry] | None = None) -> PlanContext:
    """A plan context of RUN_ID in `home`, in phase P1."""
    phase = Phase(phase_id="P1", run_id=RUN_ID, phase_name="ANALYZING")
    stage = MajorStage(
        stage_id="P1-S01", run_id=RUN_ID, phase_id="P1", stage_name="Facts", execution_order=1
    )
    return PlanContext(
        home=str(home),
        run_id=RUN_ID,
        request="Analyse the market.",
        catalog=catalog or [],
        phases=[phase],
        phase=phase,
        stages=[stage],
        stage=stage,
    )


@pytest.mark.parametrize(
    ("suggested", "name", "expected"),
    [
        ("market_memo.md", "x", "market_memo.md"),
        ("", "Rank the Regions!", "rank_the_regions.md"),
        ("../../etc/passwd", "x", "passwd.md"),
        ("/tmp/Data Table.CSV", "x", "data_table.csv"),
        ("script.sh", "x", "script_sh.md"),
        (".hidden.md", "x", "hidden.md"),
        (".md", "", "task_03.md"),
        ("시장 메모.md", "x", "시장_메모.md"),
    ],
)
def test_file_slug_is_a_safe_name(suggested: str, name: str, expected: str) -> None:
    """A suggested name becomes word characters joined by _, .md unless a safe suffix is given."""
    assert file_slug(suggested, name, 3) == expected


def test_free_path_skips_taken_and_existing_files(tmp_path: Path) -> None:
    """A path taken by the plan or present on disk gets a numbered variant."""
    folder = "runs/r/workspace/ANALYZING"
    (tmp_path / folder).mkdir(parents=True)
    (tmp_path / folder / "facts_2.md").write_text("old", encoding="utf-8")
    taken = {f"{folder}/facts.md"}
    assert free_path(folder, "facts.md", taken, tmp_path) == f"{folder}/facts_3.md"


def test_deliverable_marks() -> None:
    """Only a publishing stage publishes: the marked tasks, else its last task."""
    items = [task("a", deliverable=False), task("b", deliverable=False)]
    assert deliverable_marks(items, publishing=True) == [False, True]
    marked = [task("a", deliverable=True), task("b", deliverable=False)]
    assert deliverable_marks(marked, publishing=True) == [True, False]
    assert deliverable_marks(marked, publishing=False) == [False, False]


def test_output_paths_are_unique_and_new(tmp_path: Path) -> None:
    """Two tasks naming the same file, one already catalogued, get distinct new paths."""
    folder = f"runs/{RUN_ID}/workspace/ANALYZING"
    known = CatalogEntry(file_path=f"{folder}/facts.md", asset_type=AssetType.ANALYSIS_REPORT)
    ctx = context(tmp_path, [known])
    assert ctx.stage is not None and ctx.phase is not None
    paths = output_paths(ctx, ctx.stage, ctx.phase, [task("a", "facts.md"), task("b", "facts")])
    assert paths == [f"{folder}/facts_2.md", f"{folder}/facts_3.md"]


def test_references_are_numbered_request_first_and_capped(tmp_path: Path) -> None:
    """Number 1 is the request; at most REFERENCE_LIMIT catalog rows follow, unread ones never."""
    rows = [
        CatalogEntry(file_path=f"assets/f{n:02d}.md", asset_type=AssetType.ORIGINAL_INPUT)
        for n in range(REFERENCE_LIMIT + 5)
    ]
    ctx = context(tmp_path, rows)
    assert ctx.stage is not None
    references = reference_candidates(ctx, f"{ctx.stage.stage_name}\n{ctx.stage.stage_goal}")
    assert references.paths[0] == f"runs/{RUN_ID}/request.md"
    assert len(references.paths) == REFERENCE_LIMIT + 1
    assert references.lines[1] == "2. assets/f00.md (ORIGINAL_INPUT)"
    assert references.path(2) == "assets/f00.md"
    assert references.block().startswith("```text\n1. ")


def test_answers_ignore_unknown_keys_but_refuse_empty_text() -> None:
    """A model's extra keys are dropped; an empty name is an error the model is shown."""
    made = StagesAnswer.model_validate(
        {"stages": [{"name": " Facts ", "goal": "g", "stage_id": "X", "execution_order": 9}]}
    )
    assert made.stages[0].name == "Facts"
    assert "stage_id" not in made.stages[0].model_dump()
    with pytest.raises(ValidationError, match="at least 1 character"):
        StagesAnswer.model_validate({"stages": [{"name": " ", "goal": "g"}]})


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_template_shows_one_example_in_the_new_format(name: str) -> None:
    """Every template shows exactly one example answer, and it validates as that answer."""
    body = load_prompt(PROMPTS_PACKAGE, name).body
    assert body.count("Example answer:") == 1
    example = body.split("Example answer:", 1)[1].strip().splitlines()[0]
    filled = string.Template(example).substitute(example_reference="2", example_tool="web_search")
    data = json.loads(filled)
    model = EXAMPLES[name]
    if model is None:
        assert set(data) == {"mode", "reason"}
    else:
        model.model_validate(data)
        assert not re.search(r"task_id|stage_id|execution_order|output_path", filled)


def test_a_deliverable_reads_the_inputs_and_has_the_asked_chart_drawn_first(
    tmp_path: Path,
) -> None:
    """Code adds the original inputs to a deliverable and a PRE chart purpose when one is asked."""
    inputs = [
        CatalogEntry(file_path=f"assets/{name}", asset_type=AssetType.ORIGINAL_INPUT)
        for name in ("a.md", "b.csv", "c.md", "d.md")
    ]
    asked = context(tmp_path, inputs).model_copy(
        update={"request": "Write a memo. Add a chart of revenue by country!"}
    )
    ranked = ["runs/x/request.md", "assets/b.csv", "assets/a.md", "assets/d.md", "assets/c.md"]
    assert source_inputs(asked, ranked) == ["assets/b.csv", "assets/a.md", "assets/d.md"]
    assert asked_chart(asked.request) == "Add a chart of revenue by country!"
    assert chart_purpose(asked).endswith("Add a chart of revenue by country!")
    drawn = CatalogEntry(
        file_path=f"runs/{RUN_ID}/workspace/ANALYZING/P1-S01-T01-POST-01.html",
        asset_type=AssetType.TOOL_OUTPUT,
        run_id=RUN_ID,
    )
    assert chart_purpose(asked.model_copy(update={"catalog": [*inputs, drawn]})) == ""
    assert chart_purpose(context(tmp_path, inputs)) == ""  # no chart asked
