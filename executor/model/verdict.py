"""Pure decisions about a finished tool loop: the model's final word and each file's asset type.

The files are the truth (SPEC §10.6): a task is COMPLETED only when its output file exists,
whatever the model says; the model's final JSON may only fail the task or ask for a visual.
"""

from __future__ import annotations

from dataclasses import dataclass

from multiverse.jsonguard import LooseJsonError, loose_parse
from multiverse.models import AssetType, Phase

MAX_TEXT_IN_ERROR = 1000
PHASE_TYPES = {
    "ANALYZING": AssetType.ANALYSIS_REPORT,
    "STRATEGIZING": AssetType.STRATEGY_DOC,
    "REFINING_CONTENT": AssetType.REFINED_CONTENT,
}


@dataclass(frozen=True)
class FinalWord:
    """What the model's last answer says: a failure it reports, a visual it asks for."""

    failed: str | None
    wants_visual: bool


def final_word(text: str) -> FinalWord:
    """Read the result JSON AGENT.md asks for; prose or broken JSON says nothing."""
    try:
        data = loose_parse(text)
    except LooseJsonError:
        return FinalWord(failed=None, wants_visual=False)
    if not isinstance(data, dict):
        return FinalWord(failed=None, wants_visual=False)
    failed = None
    if str(data.get("status", "")).upper() == "FAILED":
        failed = str(data.get("error") or "the model reported FAILED without a reason")
    return FinalWord(failed=failed, wants_visual=data.get("post_tool_required") is True)


def phase_key(phase: Phase) -> str:
    """The phase whose behaviour applies: Phase 0's first analysis counts as ANALYZING."""
    return "ANALYZING" if phase.phase_id == "P0" else phase.phase_name


def asset_type(phase: Phase, is_task_output: bool, in_outputs: bool) -> AssetType:
    """A written file's asset type, as the builtin executor decides it."""
    key = phase_key(phase)
    if key == "GENERATING_OUTPUT" and in_outputs:
        return AssetType.FINAL_OUTPUT
    if not is_task_output:
        return AssetType.TOOL_OUTPUT
    if key == "GENERATING_OUTPUT":
        return AssetType.ASSEMBLY_PLAN
    return PHASE_TYPES.get(key, AssetType.TOOL_OUTPUT)


def clipped(text: str) -> str:
    """A model's text short enough for an error message."""
    flat = text.strip()
    if len(flat) <= MAX_TEXT_IN_ERROR:
        return flat
    return flat[:MAX_TEXT_IN_ERROR] + " …"
