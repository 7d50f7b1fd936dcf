"""Reading a person's answer (SPEC §6.5, §8): what an editor adds around the word is no content."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.decide import Decision, DecisionKind, parse_decision
from orchestrator.evidence import read_response


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("\ufeffCONFIRM", DecisionKind.CONFIRM),  # a byte-order mark
        ("CONFIRM   \n\n  ", DecisionKind.CONFIRM),  # trailing spaces and blank lines
        ("  confirm\u00a0\n", DecisionKind.CONFIRM),  # a no-break space
        ("\u200bCancel!", DecisionKind.CANCEL),  # a zero-width space, punctuation
        ("# My answer\n<!-- say one word -->\nRetry.\n", DecisionKind.RETRY),
        ("resume\n", DecisionKind.RESUME),  # what `multiverse resume` writes, in any case
        ("Approve.\n", DecisionKind.APPROVE),  # an approval's answer, read by the same reader
        ("deny", DecisionKind.DENY),
        ("approve rm -rf", DecisionKind.INVALID),  # never a guess: only the word itself
        ("confirm but make it shorter", DecisionKind.INVALID),
        ("MODIFY:", DecisionKind.INVALID),
        ("maybe", DecisionKind.INVALID),
    ],
)
def test_the_word_is_found_whatever_surrounds_it(raw: str, kind: DecisionKind) -> None:
    """BOMs, invisible characters, spaces, comments and a final full stop are not the answer."""
    assert parse_decision(raw).kind is kind


def test_modify_keeps_its_text_without_the_bom() -> None:
    """The MODIFY text is what the person wrote after the word, trimmed."""
    assert parse_decision("\ufeffMODIFY: one page only  \n") == Decision(
        kind=DecisionKind.MODIFY, text="one page only"
    )


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-8"])
def test_an_answer_file_in_any_usual_encoding_is_read(tmp_path: Path, encoding: str) -> None:
    """Notepad's UTF-8 with BOM and UTF-16 files are read as the word they hold."""
    path = tmp_path / "user_response.md"
    path.write_bytes("CONFIRM\r\n".encode(encoding))
    decision = read_response(path)
    assert decision is not None and decision.kind is DecisionKind.CONFIRM


def test_an_absent_or_empty_answer_is_no_answer(tmp_path: Path) -> None:
    """No file, or only whitespace: still waiting."""
    path = tmp_path / "user_response.md"
    assert read_response(path) is None
    path.write_bytes(b"\xef\xbb\xbf  \n")
    assert read_response(path) is None
