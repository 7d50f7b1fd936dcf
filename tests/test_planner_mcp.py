"""Tests of MCP recipe loading and matching (planner.builtin.tasks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from multiverse.errors import ConfigError
from multiverse.home import Home, init_home
from multiverse.models import Timing
from planner.builtin.tasks import MCP_COLUMNS, load_mcps, match_mcp

HEADER = "| " + " | ".join(MCP_COLUMNS) + " |\n|---|---|---|---|---|---|\n"


def write_mcps(home: Path, rows: list[str]) -> Path:
    """Write a hand-made mcp_list.md with the given table rows."""
    path = home / "guidelines/mcp_list.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# MCP list\n\n" + HEADER + "".join(row + "\n" for row in rows), "utf-8")
    return path


def test_shipped_list_loads_two_recipes_in_step_order(tmp_path: Path) -> None:
    """The shipped mcp_list.md gives market_research (PRE) and figure_dashboard (POST)."""
    init_home(Home(tmp_path))
    recipes = load_mcps(tmp_path)
    assert [(r.name, r.timing) for r in recipes] == [
        ("market_research", Timing.PRE),
        ("figure_dashboard", Timing.POST),
    ]
    assert [s.tool_type for s in recipes[1].steps] == ["data_visualization"] * 2
    assert recipes[0].steps[0].purpose.startswith("Search for recent market size")


def test_missing_file_gives_no_recipes(tmp_path: Path) -> None:
    """A home without guidelines/mcp_list.md simply has no recipes."""
    assert load_mcps(tmp_path) == []


def test_steps_are_sorted_by_step_order(tmp_path: Path) -> None:
    """Rows written out of order still give the steps in step_order."""
    write_mcps(
        tmp_path,
        [
            "| r | chart | POST | 2 | data_visualization | second |",
            "| r | chart | POST | 1 | web_search | first |",
        ],
    )
    assert [s.purpose for s in load_mcps(tmp_path)[0].steps] == ["first", "second"]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("| r | chart | LATER | 1 | web_search | p |", "timing 'LATER' must be PRE or POST"),
        ("| r | chart | PRE | one | web_search | p |", "step_order 'one'"),
        ("| r | chart | PRE | 1 | web_search, web_fetch | p |", "exactly one tool type"),
        ("| r | chart | PRE | 1 | web_search |  |", "step_purpose is empty"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path: Path, row: str, problem: str) -> None:
    """A bad row raises ConfigError naming the file, the line and the defect."""
    path = write_mcps(tmp_path, ["| ok | chart | PRE | 1 | web_search | fine |", row])
    with pytest.raises(ConfigError) as caught:
        load_mcps(tmp_path)
    assert f"{path}:6" in str(caught.value)
    assert problem in str(caught.value)


def test_duplicate_step_and_changed_timing_are_refused(tmp_path: Path) -> None:
    """A recipe may not repeat a step_order nor change its timing between rows."""
    write_mcps(tmp_path, ["| r | a | PRE | 1 | web_search | p |", "| r | a | PRE | 1 | x | q |"])
    with pytest.raises(ConfigError, match="step_order 1 twice"):
        load_mcps(tmp_path)
    write_mcps(tmp_path, ["| r | a | PRE | 1 | web_search | p |", "| r | a | POST | 2 | x | q |"])
    with pytest.raises(ConfigError, match="first row"):
        load_mcps(tmp_path)


def test_missing_column_is_a_config_error(tmp_path: Path) -> None:
    """A table without the expected columns is a ConfigError naming the file."""
    path = tmp_path / "guidelines/mcp_list.md"
    path.parent.mkdir(parents=True)
    path.write_text("| mcp_name | timing |\n|---|---|\n| r | PRE |\n", "utf-8")
    with pytest.raises(ConfigError, match="missing column"):
        load_mcps(tmp_path)


def test_match_by_keyword_and_timing(tmp_path: Path) -> None:
    """A recipe fits when its timing matches and a keyword occurs, in any case or language."""
    init_home(Home(tmp_path))
    recipes = load_mcps(tmp_path)
    assert match_mcp(recipes, "Look at the MARKET size", Timing.PRE) is recipes[0]
    assert match_mcp(recipes, "경쟁사 매출을 조사", Timing.PRE) is recipes[0]
    assert match_mcp(recipes, "매출 차트를 그려줘", Timing.POST) is recipes[1]
    assert match_mcp(recipes, "market chart", Timing.POST) is recipes[1]
    assert match_mcp(recipes, "read the minutes", Timing.PRE) is None
    assert match_mcp(recipes, "draw a chart", Timing.PRE) is None


def test_most_keyword_hits_wins(tmp_path: Path) -> None:
    """Among fitting recipes the one with most keyword hits wins; ties go to file order."""
    write_mcps(
        tmp_path,
        [
            "| a | chart | POST | 1 | data_visualization | p |",
            "| b | chart, revenue | POST | 1 | data_visualization | p |",
            "| c | chart | POST | 1 | data_visualization | p |",
        ],
    )
    recipes = load_mcps(tmp_path)
    assert match_mcp(recipes, "revenue chart", Timing.POST) is recipes[1]
    assert match_mcp(recipes, "a chart", Timing.POST) is recipes[0]
