"""Dates on the command line (`runs --since D`, `archive --before D`): absolute or relative.

Accepted: `2026-11-20`, `2026-11-20T14:30` (local time unless it says its zone), `today`,
`yesterday`, and an age: `30m`, `12h`, `7d`, `2w` (that long before now).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from multiverse.errors import UserError

_AGE = re.compile(r"(\d+)\s*([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
EXAMPLES = "2026-11-20, 2026-11-20T14:30, today, yesterday, 12h, 7d or 2w"


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """The moment a command-line date names, in UTC; a UserError saying the forms if none."""
    now = now or datetime.now(UTC)
    word = text.strip().lower()
    local_midnight = now.astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    if word == "today":
        return local_midnight.astimezone(UTC)
    if word == "yesterday":
        return (local_midnight - timedelta(days=1)).astimezone(UTC)
    if match := _AGE.fullmatch(word):
        return now - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"{text!r} is not a date: give one like {EXAMPLES}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a bare date or time is the user's local time
    return moment.astimezone(UTC)
