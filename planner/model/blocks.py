"""Data blocks of the plan prompts: the request, instructions, catalog rows and past runs, each
capped and fenced as data (SPEC §10.3).

A prompt gets what the plan needs and never the whole home: at most CATALOG_LIMIT catalog rows
(path, type and a capped summary) of the inputs and of this run, most relevant first. Text inside
a fence longer than any backtick run in it cannot close the fence. No file is read here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from multiverse.contracts import PlanContext
from multiverse.models import AssetType, CatalogEntry, UserInstruction
from multiverse.unread import is_unread

CATALOG_LIMIT = 60
REQUEST_LIMIT = 4000
SUMMARY_LIMIT = 300
LIST_LIMIT = 40
PAST_REQUEST_LIMIT = 300
_HANGUL = re.compile(r"[\uac00-\ud7af]")
# Rows of this run feed the next steps most directly, then the sources, then the rules.
_GROUP = {AssetType.ORIGINAL_INPUT: 1, AssetType.GUIDELINE_DOC: 2}


def short(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def quoted(text: str, info: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it, so it stays data."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def json_block(data: Any) -> str:
    """`data` as JSON (UTF-8 as is) in a fence; a list has one item per line, to save tokens."""
    if isinstance(data, list) and data:
        items = ",\n".join(f"  {json.dumps(item, ensure_ascii=False)}" for item in data)
        return quoted(f"[\n{items}\n]", "json")
    return quoted(json.dumps(data, ensure_ascii=False, indent=2), "json")


def request_block(request: str) -> str:
    """The request, capped, fenced as data."""
    cut = short(request.strip(), REQUEST_LIMIT)
    note = "" if cut == request.strip() else f"\n(cut to its first {REQUEST_LIMIT} characters)"
    return quoted(cut or "(empty request)", "text") + note


def words(text: str) -> set[str]:
    """Matching terms of a text: words of two or more letters, plus Hangul character bigrams."""
    found = set(re.findall(r"\w{2,}", text.casefold()))
    for word in list(found):
        if _HANGUL.search(word):
            found.update(word[i : i + 2] for i in range(len(word) - 1))
    return found


def instructions_block(items: Iterable[UserInstruction], with_run: bool = False) -> str:
    """Instructions as JSON rows, or a sentence when there are none."""
    rows = []
    for item in items:
        row = {
            "instruction_id": item.instruction_id,
            "instruction_type": item.instruction_type,
            "content": item.content,
            "justification": short(item.justification, SUMMARY_LIMIT),
        }
        if with_run:
            row = {"run_id": item.run_id, **row}
        rows.append(row)
    return json_block(rows) if rows else "(none)"


def relevant_catalog(
    context: PlanContext, query: str, limit: int = CATALOG_LIMIT
) -> list[CatalogEntry]:
    """The catalog rows of the inputs and of this run, most relevant first, capped.

    Rows noting an input that was not read are left out: they are never a reference.
    """
    wanted = words(query)
    scored = []
    for index, entry in enumerate(context.catalog):
        if entry.run_id not in (None, context.run_id) or is_unread(entry):
            continue
        group = 0 if entry.run_id == context.run_id else _GROUP.get(entry.asset_type, 3)
        overlap = len(wanted & words(f"{entry.file_path} {entry.summary}"))
        # Within this run the newest work comes first: it is what the next step builds on.
        recency = -index if group == 0 else index
        scored.append(((group, -overlap, recency), entry))
    return [entry for _, entry in sorted(scored, key=lambda pair: pair[0])[:limit]]


def catalog_block(context: PlanContext, query: str, limit: int = CATALOG_LIMIT) -> str:
    """The relevant catalog rows as JSON, with how many were left out."""
    rows = relevant_catalog(context, query, limit)
    data = [
        {
            "file_path": entry.file_path,
            "asset_type": entry.asset_type.value,
            "summary": short(" ".join(entry.summary.split()), SUMMARY_LIMIT),
        }
        for entry in rows
    ]
    shown = {entry.file_path for entry in rows}
    owned = [e for e in context.catalog if e.run_id in (None, context.run_id)]
    left = sum(1 for e in owned if not is_unread(e)) - len(shown)
    more = f"\n({left} less relevant catalog rows are not shown.)" if left > 0 else ""
    return (json_block(data) if data else "(the catalog has no rows yet)") + more


def learning_block(context: PlanContext) -> str:
    """The ranked past runs with their scores."""
    rows = [
        {
            "run_id": past.run_id,
            "score": round(past.score, 3),
            "user_request": short(past.user_request, PAST_REQUEST_LIMIT),
        }
        for past in context.learning.past_runs
    ]
    return json_block(rows) if rows else "(none: this is the first run)"
