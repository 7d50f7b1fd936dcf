"""A model call served by a process tier: its prompt as text and where its session works.

The Planner and the Communicator call the gateway as for any model; for a process tier the
gateway hands the call's messages to the command as one text, with the JSON schema the answer
must follow spelled out (a CLI cannot be given a response_format), and takes its stdout as the
answer, which then passes the same JSON guard and repairs as a model's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from multiverse.leftovers import RECORDS
from multiverse.llm import LlmCall, LlmErrorCode
from multiverse.process_session import Place

PROCESS_CODES = {
    "TIMEOUT": LlmErrorCode.TIMEOUT,
    "NO_OUTPUT": LlmErrorCode.NO_OUTPUT,
    "SIGNAL_EXIT": LlmErrorCode.SIGNAL_EXIT,
    "PROCESS_EXIT": LlmErrorCode.PROCESS_EXIT,
}


def process_prompt(call: LlmCall, response_format: dict[str, Any] | None) -> str:
    """The call's messages as one text, each under its role; then the answer's schema."""
    parts = [f"## {message['role']}\n\n{message['content']}" for message in call.messages]
    if response_format is not None:
        schema = response_format.get("json_schema", {}).get("schema", response_format)
        parts.append(
            "## answer format\n\nAnswer with one JSON object only (no prose, no code fence) "
            f"that validates against this JSON schema:\n\n{json.dumps(schema, ensure_ascii=False)}"
        )
    return "\n\n".join(parts) + "\n"


def process_place(call: LlmCall, runs_root: Path | None, state_root: Path | None) -> Place:
    """Where the call's session works: its run's folder, else the home's state."""
    if call.run_id is not None and runs_root is not None:
        run = runs_root / call.run_id
        cwd, events, logs, records = run / "workspace", run / "events.jsonl", run / "logs", run
    else:
        base = state_root or Path.cwd() / ".multiverse"
        cwd, events, logs, records = base / "sessions", base / "events.jsonl", base / "logs", base
    cwd.mkdir(parents=True, exist_ok=True)
    home = runs_root.parent if runs_root is not None else cwd
    return Place(home=home, cwd=cwd, events=events, logs=logs, records=records / RECORDS,
                 run_id=call.run_id, role=call.role)  # fmt: skip
