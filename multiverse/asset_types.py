"""Which asset type a file a task wrote is (SPEC §3.2), as every Executor decides it."""

from __future__ import annotations

from multiverse.models import AssetType, Phase

PHASE_TYPES = {
    "ANALYZING": AssetType.ANALYSIS_REPORT,
    "STRATEGIZING": AssetType.STRATEGY_DOC,
    "REFINING_CONTENT": AssetType.REFINED_CONTENT,
}


def phase_key(phase: Phase) -> str:
    """The phase whose behaviour applies: Phase 0's first analysis counts as ANALYZING."""
    return "ANALYZING" if phase.phase_id == "P0" else phase.phase_name


def asset_type(phase: Phase, is_task_output: bool, in_outputs: bool) -> AssetType:
    """A written file's asset type: by phase; tool files are TOOL_OUTPUT; outputs/ is FINAL."""
    key = phase_key(phase)
    if key == "GENERATING_OUTPUT" and in_outputs:
        return AssetType.FINAL_OUTPUT
    if not is_task_output:
        return AssetType.TOOL_OUTPUT
    if key == "GENERATING_OUTPUT":
        return AssetType.ASSEMBLY_PLAN
    return PHASE_TYPES.get(key, AssetType.TOOL_OUTPUT)
