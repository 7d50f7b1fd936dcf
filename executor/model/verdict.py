"""Pure decisions about a finished tool loop: the model's final word (asset types: multiverse).

The files are the truth (SPEC §10.6): a task is COMPLETED only when its output file exists,
whatever the model says; the model's final JSON may only fail the task or ask for a visual.
"""

from __future__ import annotations

from dataclasses import dataclass

from multiverse.jsonguard import LooseJsonError, loose_parse

MAX_TEXT_IN_ERROR = 1000


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


def clipped(text: str) -> str:
    """A model's text short enough for an error message."""
    flat = text.strip()
    if len(flat) <= MAX_TEXT_IN_ERROR:
        return flat
    return flat[:MAX_TEXT_IN_ERROR] + " …"
