"""`multiverse submit`: every request gets its own inbox file, whoever else submits at once."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path

from app.commands import drop_request
from multiverse.home import Home
from planner.builtin import decide_mode

from forked import forked, forked_cli
from journey import once, runs

REQUEST = "Write a market memo about e-bikes for the board, variant {}"


def test_concurrent_submits_each_make_their_own_file_and_run(home: Home) -> None:
    """Eight submits started together with the same first words make eight files, eight runs."""
    texts = [REQUEST.format(index) for index in range(8)]
    assert all(decide_mode(text, False).mode.value == "INITIAL_RUN" for text in texts)
    with ExitStack() as stack:  # eight processes at once (forked: they start within ms)
        children = [stack.enter_context(forked(home, "submit", text)) for text in texts]
        for child in children:
            child.wait(timeout=120)
        outputs = [(child.stdout(), child.stderr()) for child in children]
    assert [child.returncode for child in children] == [0] * 8, outputs
    printed = [Path(out.strip().removeprefix("submitted: ")) for out, _ in outputs]
    assert len(set(printed)) == 8
    for path, text in zip(printed, texts, strict=True):
        assert path.parent == home.inbox and path.read_text(encoding="utf-8") == text
    assert sorted(os.listdir(home.inbox)) == sorted(path.name for path in printed)
    assert once(home).returncode == 0
    assert sorted(row["user_request"] for row in runs(home)) == sorted(texts)


def test_submit_never_replaces_a_file(home: Home, tmp_path: Path) -> None:
    """A name already taken in inbox/ gets -1, -2; the file there is left as it was."""
    (home.inbox / "brief.md").write_text("someone else's request", encoding="utf-8")
    source = tmp_path / "brief.md"
    source.write_text("my request", encoding="utf-8")
    first = drop_request(home, None, source)[0]
    second = drop_request(home, None, source)[0]
    assert (first.name, second.name) == ("brief-1.md", "brief-2.md")
    assert (home.inbox / "brief.md").read_text(encoding="utf-8") == "someone else's request"
    assert first.read_text(encoding="utf-8") == second.read_text(encoding="utf-8") == "my request"
    assert sorted(os.listdir(home.inbox)) == ["brief-1.md", "brief-2.md", "brief.md"]


def test_a_hidden_file_name_is_submitted_under_a_visible_one(home: Home, tmp_path: Path) -> None:
    """A source named like a hidden or temporary file still lands where the daemon looks."""
    source = tmp_path / ".notes.md"
    source.write_text("Write a memo", encoding="utf-8")
    path = drop_request(home, None, source)[0]
    assert not path.name.startswith(".") and path.read_text(encoding="utf-8") == "Write a memo"


def test_a_full_disk_is_one_clear_line_and_leaves_nothing(home: Home, tmp_path: Path) -> None:
    """A refused write exits 4 with one line naming the file, and leaves no file behind."""
    trigger = tmp_path / "enospc"
    trigger.write_text("", encoding="utf-8")
    enospc = {"MULTIVERSE_FAULT_ENOSPC": str(trigger)}  # read at import: a process
    result = forked_cli(home, "submit", "Write a memo", env=enospc)
    assert result.returncode == 4, result.stderr
    assert (
        result.stderr.startswith("error: cannot write ") and "free some disk space" in result.stderr
    )
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert os.listdir(home.inbox) == []


def test_the_fallback_without_hard_links_creates_exclusively(home: Home) -> None:
    """Where hard links are refused, the file is still created under a free name only."""
    from multiverse.atomic import _create_in_place

    for name in ("req.md", "req-1.md"):
        (home.inbox / name).write_text("taken", encoding="utf-8")
    path = _create_in_place(home.inbox, "req.md", b"mine")
    assert (path.name, path.read_bytes()) == ("req-2.md", b"mine")
    assert [(home.inbox / name).read_text(encoding="utf-8") for name in ("req.md", "req-1.md")] == [
        "taken",
        "taken",
    ]
