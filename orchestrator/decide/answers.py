"""The user's answers, read one way everywhere (SPEC §6.5, §8, §11, §13): the words a person or
the CLI writes into runs/<run_id>/user_response.md, decoded and parsed (pure).
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class DecisionKind(StrEnum):
    """What the user answered."""

    CONFIRM = "CONFIRM"
    MODIFY = "MODIFY"
    CANCEL = "CANCEL"
    RETRY = "RETRY"  # only for a FAILED run (SPEC §8)
    RESUME = "RESUME"  # only for a held run (daemon.pause_before, or PAUSE)
    PAUSE = "PAUSE"  # a confirmed run holds before its next step until RESUME
    APPROVE = "APPROVE"  # only for a run waiting for an approval (SPEC §11)
    DENY = "DENY"
    INVALID = "INVALID"


class Decision(BaseModel):
    """A parsed answer; `text` is the MODIFY text or, when INVALID, what was written."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: DecisionKind
    text: str = ""


_WORD = re.compile(
    r"^\s*(confirm|cancel|modify|retry|resume|pause|approve|deny)\b\s*[:\-—]?\s*", re.IGNORECASE
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# Invisible characters editors and clipboards add: a byte-order mark, zero-width spaces and
# joiners. They are never part of an answer.
_INVISIBLE = re.compile("[\ufeff\u200b\u200c\u200d\u2060]")
# "CONFIRM." or "Cancel!" is still the word.
_END_PUNCTUATION = re.compile(r"^[.!。！]+$")


def decode_answer(data: bytes) -> str:
    """An answer file's text: UTF-8 (with or without a byte-order mark) or, as some Windows
    editors save it, UTF-16 with a byte-order mark; undecodable bytes become U+FFFD."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def parse_decision(raw: str) -> Decision:
    """Parse CONFIRM, CANCEL, RETRY, RESUME, PAUSE, APPROVE, DENY or `MODIFY: text`
    (case-insensitive; comments, headings, a byte-order mark and surrounding whitespace
    ignored)."""
    raw = _INVISIBLE.sub("", raw)
    lines = [line for line in _COMMENT.sub("", raw).splitlines() if line.strip()]
    lines = [line for line in lines if not line.lstrip().startswith("#")]
    text = "\n".join(lines).strip()
    match = _WORD.match(text)
    if match is None:
        return Decision(kind=DecisionKind.INVALID, text=text[:500])
    word = match.group(1).upper()
    rest = text[match.end() :].strip()
    if word == "MODIFY":
        if not rest:
            return Decision(kind=DecisionKind.INVALID, text=text[:500])
        return Decision(kind=DecisionKind.MODIFY, text=rest)
    if rest and not _END_PUNCTUATION.match(rest):
        # "confirm but change X" is not a confirmation: refuse rather than guess.
        return Decision(kind=DecisionKind.INVALID, text=text[:500])
    return Decision(kind=DecisionKind(word))


def parse_answer(data: bytes) -> Decision | None:
    """The answer an answer file's bytes hold, or None while it is still empty."""
    raw = decode_answer(data)
    return parse_decision(raw) if raw.strip() else None


def render_decision(kind: DecisionKind, text: str = "") -> str:
    """The content the CLI writes into user_response.md."""
    if kind is DecisionKind.MODIFY:
        return f"MODIFY: {text}\n"
    return f"{kind.value}\n"
