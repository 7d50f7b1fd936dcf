"""MCP recipes (SPEC §10.3): multi-call recipes read from `guidelines/mcp_list.md`.

The file is one pipe table, one row per recipe step:
`mcp_name | applies_when | timing | step_order | tool_type | step_purpose`. Rows sharing an
`mcp_name` form one recipe; their steps run in `step_order`. A recipe fits a tool plan when its
timing matches and one of its comma-separated `applies_when` keywords occurs (case-insensitive,
as a substring, so Korean particles do not hide a keyword) in the text it is matched against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from multiverse.errors import ConfigError, TableError
from multiverse.models import Timing
from multiverse.roles import McpRecipe, McpStep
from multiverse.store import parse_table_text

MCP_FILE = "guidelines/mcp_list.md"
MCP_COLUMNS = ("mcp_name", "applies_when", "timing", "step_order", "tool_type", "step_purpose")
_TOOL_TYPE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass
class _Draft:
    """A recipe being assembled from its rows, remembering where it was first defined."""

    applies_when: str
    timing: Timing
    line: int
    steps: dict[int, McpStep] = field(default_factory=dict)


def load_mcps(home: Path) -> list[McpRecipe]:
    """The recipes of `<home>/guidelines/mcp_list.md`, in file order; [] when there is none."""
    path = home / MCP_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the MCP list: {error}") from error
    try:
        table = parse_table_text(text, path, MCP_COLUMNS)
    except TableError as error:
        raise ConfigError(f"MCP list {error}") from error
    drafts: dict[str, _Draft] = {}
    for index, cells in enumerate(table.rows):
        _add_row(drafts, cells, path, table.row_line_number(index))
    return [
        McpRecipe(
            name=name,
            applies_when=draft.applies_when,
            timing=draft.timing,
            steps=[draft.steps[order] for order in sorted(draft.steps)],
        )
        for name, draft in drafts.items()
    ]


def _add_row(drafts: dict[str, _Draft], cells: list[str], path: Path, line: int) -> None:
    """Add one table row to its recipe, or raise ConfigError naming the file and line."""
    name, applies_when, timing_text, order_text, tool_type, purpose = (c.strip() for c in cells)

    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{path}:{line}: {problem}")

    if not name:
        raise fail("mcp_name is empty")
    if timing_text.upper() not in Timing.__members__:
        raise fail(f"timing {timing_text!r} must be PRE or POST")
    timing = Timing(timing_text.upper())
    if not order_text.isdigit() or int(order_text) < 1:
        raise fail(f"step_order {order_text!r} must be a whole number from 1")
    if not _TOOL_TYPE.fullmatch(tool_type):
        raise fail(f"tool_type {tool_type!r} must name exactly one tool type (like web_search)")
    if not purpose:
        raise fail("step_purpose is empty")
    draft = drafts.setdefault(name, _Draft(applies_when, timing, line))
    if draft.timing is not timing or draft.applies_when != applies_when:
        raise fail(
            f"recipe {name!r} must keep the timing and applies_when of its first row "
            f"(line {draft.line})"
        )
    order = int(order_text)
    if order in draft.steps:
        raise fail(f"recipe {name!r} has step_order {order} twice")
    draft.steps[order] = McpStep(tool_type=tool_type, purpose=purpose)


def keywords(recipe: McpRecipe) -> list[str]:
    """The recipe's `applies_when` keywords, trimmed and case-folded."""
    return [word.strip().casefold() for word in recipe.applies_when.split(",") if word.strip()]


def match_mcp(recipes: list[McpRecipe], text: str, timing: Timing) -> McpRecipe | None:
    """The recipe of this timing with the most keywords found in `text`; ties go to file order."""
    folded = text.casefold()
    best: McpRecipe | None = None
    best_hits = 0
    for recipe in recipes:
        if recipe.timing is not timing:
            continue
        hits = sum(1 for word in keywords(recipe) if word in folded)
        if hits > best_hits:
            best, best_hits = recipe, hits
    return best
