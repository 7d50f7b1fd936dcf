"""Dates on the command line (`runs --since`, `archive --before`): absolute, words or an age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.cli_runs import parse_when
from multiverse.errors import UserError

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_ages_count_back_from_now() -> None:
    assert parse_when("30m", NOW) == NOW - timedelta(minutes=30)
    assert parse_when("12h", NOW) == NOW - timedelta(hours=12)
    assert parse_when("7d", NOW) == NOW - timedelta(days=7)
    assert parse_when("2w", NOW) == NOW - timedelta(weeks=2)


def test_dates_with_a_zone_are_exact_and_words_are_local_midnights() -> None:
    assert parse_when("2026-11-20T14:30+00:00", NOW) == datetime(2026, 11, 20, 14, 30, tzinfo=UTC)
    today = parse_when("today", NOW)
    assert today <= NOW and NOW - today < timedelta(days=1, hours=14)
    assert parse_when("yesterday", NOW) == today - timedelta(days=1)
    assert parse_when("2026-11-20", NOW).tzinfo is UTC


@pytest.mark.parametrize("text", ["soon", "7 days", "-3d", ""])
def test_anything_else_says_the_forms(text: str) -> None:
    with pytest.raises(UserError, match="give one like 2026-11-20"):
        parse_when(text, NOW)
