"""The disk cache of finished model calls: a restarted daemon never pays for a call twice.

One JSON file per entry under a folder the caller gives (the daemon: `<home>/.multiverse/
llm_cache/`). The key is sha256 of `role:agent_version:variant:prompt_version:scope:input_hash`,
the input hash covering model, messages, tools, max_tokens, sampling and the answer mode.
Only successful answers are stored, and never a key (SPEC §10.4).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import structlog
from pydantic import ValidationError

from multiverse.atomic import atomic_write_text
from multiverse.llm import LlmAnswer, LlmCall, LlmData
from multiverse.secrets import mask_secrets

log = structlog.get_logger(__name__)

TEXT_MODE = "text"


class CacheEntry(LlmData):
    """One cached answer and what it answered."""

    key: str
    role: str
    scope: str
    model: str
    mode: str
    answer: LlmAnswer
    repairs: int = 0
    created_at: str


def input_hash(call: LlmCall, mode: str = TEXT_MODE) -> str:
    """sha256 of everything the model sees and how the answer is used."""
    material = {
        "model": call.model,
        "messages": call.messages,
        "tools": [tool.model_dump() for tool in call.tools],
        "max_tokens": call.max_tokens,
        "sampling": call.sampling,
        "extra_body": call.extra_body,
        "stop": call.stop,
        "json_mode": call.json_mode,
        "structured_output": call.structured_output,
        "mode": mode,
    }
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def cache_key(call: LlmCall, mode: str = TEXT_MODE) -> str:
    """The entry's key: sha256 of role:agent_version:variant:prompt_version:scope:input_hash."""
    parts = (
        call.role,
        call.agent_version,
        call.variant,
        call.prompt_version,
        call.scope,
        input_hash(call, mode),
    )
    return hashlib.sha256(":".join(parts).encode("utf-8")).hexdigest()


class LlmCache:
    """Finished answers on disk, one file per key."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path_for(self, key: str) -> Path:
        """Where the entry of `key` lives (fanned out by the key's first two characters)."""
        return self.folder / key[:2] / f"{key}.json"

    def get(self, call: LlmCall, mode: str = TEXT_MODE) -> CacheEntry | None:
        """The cached entry for this call, or None (a missing or unreadable entry is a miss)."""
        key = cache_key(call, mode)
        path = self.path_for(key)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("llm_cache_unreadable", path=str(path), error=str(exc))
            return None
        try:
            entry = CacheEntry.model_validate_json(raw)
        except ValidationError as exc:
            log.warning("llm_cache_unreadable", path=str(path), error=str(exc).splitlines()[0])
            return None
        return entry if entry.key == key else None

    def put(
        self, call: LlmCall, answer: LlmAnswer, mode: str = TEXT_MODE, repairs: int = 0
    ) -> Path:
        """Store a successful answer; returns the entry's file."""
        key = cache_key(call, mode)
        entry = CacheEntry(
            key=key,
            role=call.role,
            scope=call.scope,
            model=call.model,
            mode=mode,
            answer=answer.model_copy(update={"cached": False}),
            repairs=repairs,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        path = self.path_for(key)
        # The mask is a last line of defence: an answer that echoes a key never reaches disk.
        atomic_write_text(path, mask_secrets(entry.model_dump_json(indent=1)))
        return path
