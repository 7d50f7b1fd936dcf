"""A test home's runtime-mapping.yaml: requests taken as soon as they are closed.

The daemon takes an inbox file once no process holds it open for writing and it has been
unchanged for `daemon.inbox_settle_ms` (1000 by default). The tests of that wait, in
tests/test_inbox.py, keep the default; elsewhere it is a second per request spent on nothing
the test asserts.
"""

from __future__ import annotations

from typing import Any

from multiverse.home import Home


def quick_intake(mapping: dict[str, Any]) -> dict[str, Any]:
    """`mapping` with `daemon.inbox_settle_ms: 0`, unless it sets the settle time itself."""
    return {**mapping, "daemon": {"inbox_settle_ms": 0, **mapping.get("daemon", {})}}


def take_requests_at_once(home: Home) -> None:
    """Set the shipped mapping's inbox_settle_ms to 0, every other line as shipped."""
    text = home.mapping_file.read_text(encoding="utf-8")
    quick = text.replace("  inbox_settle_ms: 1000 ", "  inbox_settle_ms: 0    ")
    assert quick != text, "the template's inbox_settle_ms line changed"
    home.mapping_file.write_text(quick, encoding="utf-8")
