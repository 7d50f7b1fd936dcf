"""Choosing each role's implementation from runtime-mapping.yaml (SPEC §15: roles behind
interfaces). The Orchestrator receives a Crew and never learns which implementation it has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import structlog

from communicator.builtin import BuiltinCommunicator
from communicator.speaker import Speaker, print_to_console
from executor.builtin.role import BuiltinExecutor
from multiverse.config import RuntimeMapping, effective_tiers, warn_degraded_once
from multiverse.home import Home
from orchestrator.crew import Crew
from planner.builtin import BuiltinPlanner

log = structlog.get_logger(__name__)
TOOL_TYPES = ("web_search", "data_visualization")


def tool_types(mapping: RuntimeMapping) -> tuple[str, ...]:
    """The specialised tool types the mapping provides."""
    return tuple(name for name in TOOL_TYPES if name in mapping.tool_mapping)


def build_crew(
    home: Home,
    mapping: RuntimeMapping,
    environ: Mapping[str, str],
    console: Callable[[str], None] = print_to_console,
) -> Crew:
    """The roles for this home: builtin where no model is configured or reachable by key."""
    effective = effective_tiers(mapping, environ)
    warn_degraded_once(effective)
    return Crew(
        home=home,
        planner=BuiltinPlanner(),
        executor=BuiltinExecutor(),
        speaker=Speaker(home, BuiltinCommunicator(), console),
        tool_types=tool_types(mapping),
    )
