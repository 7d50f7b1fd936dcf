"""The approval bridge (SPEC §11, seed 001 §17.3.1): an action off the allow-list waits for a
person's yes, bound to that very action, through real daemons, a real model server on loopback
and the real CLI.

The Executor tier is a scripted model (the fake OpenAI server with a responder that follows the
prompt): on the first task it asks to run `touch approved-marker` (not on the shell's allow-list
of `echo`), then writes the task's file. Approve, deny, time out, restart while waiting, and
APPROVE written into user_response.md each end as they must.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from executor.model.loop import ApprovalBridge
from multiverse.errors import UserError
from multiverse.home import Home
from multiverse.processes import read_events
from multiverse.roles import ApprovalStatus
from multiverse.runs import ApprovalBook, StepWaiting, action_hash

from fake_openai import FakeOpenAI, Reply, text, tools
from journey import cli, copy_assets, once, only_run, serving, wait_for
from mappings import quick_intake

REQUEST = "Analyse the market report and write a memo with a chart of the revenue figures."
MARKER = "approved-marker"
TOOLS = (
    "list_directory", "read_file", "read_many_files", "write_file", "glob",
    "search_file_content", "replace", "create_directory", "data_visualization",
)  # fmt: skip
_OUTPUT = re.compile(r"Write the complete result to exactly `([^`]+)`")


def _last_tool_name(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            return str(message["tool_calls"][-1]["function"]["name"])
    return None


def follow_the_prompt(state: dict[str, bool]) -> Any:
    """A model that asks for the shell once (the first task), writes its file, then is done."""

    def respond(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        prompt = "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
        target = _OUTPUT.search(prompt)
        if target is None:
            return text("DONE")
        last = _last_tool_name(messages)
        if last == "write_file":
            return text("DONE")
        if last is None and not state.get("asked"):
            state["asked"] = True
            return tools(("run_shell_command", {"command": f"touch {MARKER}"}))
        content = "# Result\n\nWritten by the scripted model.\n"
        return tools(("write_file", {"path": target.group(1), "content": content}))

    return respond


@pytest.fixture
def approval_home(home: Home, fake_openai: FakeOpenAI) -> Home:
    """A home whose Executor tier is the scripted model, with the shell allowed `echo` only."""
    copy_assets(home, "market_report_2024.md")
    fake_openai.responder = follow_the_prompt({})
    configure(home, fake_openai)
    return home


def configure(home: Home, server: FakeOpenAI, timeout: float | None = None) -> None:
    """The mapping: MEDIUM on the fake model (tool loop), the shell with its allow-list."""
    tier = {"model": "openai/fake-model", "api_base": server.base_url, "executor_mode": "tools"}
    mapping: dict[str, Any] = {
        "tier_mapping": {"MEDIUM": tier},
        "tool_mapping": {name: name for name in TOOLS},
    }
    mapping["tool_mapping"]["run_shell_command"] = {
        "tool": "run_shell_command", "options": {"allow": ["echo"]},
    }  # fmt: skip
    if timeout is not None:
        mapping["daemon"] = {"approval_timeout_seconds": timeout}
    home.mapping_file.write_text(json.dumps(quick_intake(mapping), indent=1), encoding="utf-8")


def to_the_question(home: Home) -> str:
    """Submit, confirm, and run until the action waits for approval; the run id."""
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id = str(only_run(home)["run_id"])
    assert cli(home, "confirm", run_id).returncode == 0
    result = once(home)
    assert only_run(home)["status"] == "PENDING", result.stdout + result.stderr
    return run_id


def asked(home: Home, run_id: str) -> int:
    """How many times messages.md asked for approval."""
    return home.run(run_id).messages.read_text("utf-8").count("asks for your approval")


def markers(home: Home) -> list[Path]:
    """The marker files the shell command made."""
    return list(home.runs.rglob(MARKER))


def event_names(home: Home, run_id: str) -> list[str]:
    """The run's DPS event names."""
    return [event["event"] for event in read_events(home.run(run_id).root / "events.jsonl")]


def test_approve_runs_the_action_and_the_run_completes(approval_home: Home) -> None:
    """The run waits (asked once), `approve` lets that command run, and the run completes."""
    home = approval_home
    run_id = to_the_question(home)
    assert asked(home, run_id) == 1 and markers(home) == []
    (pending,) = ApprovalBook(home.run(run_id).root).pending()
    assert pending.tool == "run_shell_command" and pending.arguments == {
        "command": f"touch {MARKER}"
    }
    request = next(
        e for e in read_events(home.run(run_id).root / "events.jsonl")
        if e["event"] == "agent.interaction.request"
    )  # fmt: skip
    assert request["interaction_type"] == "PERMISSION"
    assert request["context"]["tool_name"] == "run_shell_command"
    answer = cli(home, "approve", run_id)
    assert answer.returncode == 0 and pending.id in answer.stdout
    result = once(home)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    assert len(markers(home)) == 1
    assert "control.interaction.response" in event_names(home, run_id)


def test_deny_refuses_the_action_and_the_model_goes_on(approval_home: Home) -> None:
    """`deny`: the command never runs; the model is told and finishes the task."""
    home = approval_home
    run_id = to_the_question(home)
    assert cli(home, "deny", run_id).returncode == 0
    result = once(home)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    assert markers(home) == []
    (record,) = ApprovalBook(home.run(run_id).root).all()
    assert record.status is ApprovalStatus.DENIED and record.answered_by == "cli"


def test_no_answer_before_the_timeout_is_a_no(home: Home, fake_openai: FakeOpenAI) -> None:
    """Past the deadline (1 s here) the waiting action is TIMED_OUT: refused, the run goes on."""
    copy_assets(home, "market_report_2024.md")
    fake_openai.responder = follow_the_prompt({})
    configure(home, fake_openai, timeout=1)
    run_id = to_the_question(home)
    (waiting,) = ApprovalBook(home.run(run_id).root).pending()
    wait_for(lambda: time.time() > waiting.deadline, "the approval's deadline to pass")
    result = once(home)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    assert markers(home) == []
    (record,) = ApprovalBook(home.run(run_id).root).all()
    assert record.status is ApprovalStatus.TIMED_OUT
    assert "control.interaction.timeout" in event_names(home, run_id)


def test_a_restart_while_waiting_asks_again_and_never_approves(approval_home: Home) -> None:
    """A new daemon finds the request waiting: it asks again and still waits."""
    home = approval_home
    run_id = to_the_question(home)
    result = once(home)
    assert only_run(home)["status"] == "PENDING", result.stdout + result.stderr
    assert asked(home, run_id) == 2 and markers(home) == []
    (record,) = ApprovalBook(home.run(run_id).root).all()
    assert record.status is ApprovalStatus.PENDING


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16"])
def test_approve_written_into_user_response_md(approval_home: Home, encoding: str) -> None:
    """APPROVE in user_response.md, in any encoding an editor saves, is the same yes; the
    answer file is set aside (a UTF-16 APPROVE once timed out as a denial)."""
    home = approval_home
    run_id = to_the_question(home)
    home.run(run_id).user_response.write_bytes("APPROVE\r\n".encode(encoding))
    result = once(home)
    assert only_run(home)["status"] == "COMPLETED", result.stdout + result.stderr
    assert len(markers(home)) == 1
    assert not home.run(run_id).user_response.exists()
    (record,) = ApprovalBook(home.run(run_id).root).all()
    assert record.answered_by == "user_response.md"


def test_an_approval_is_bound_to_its_exact_arguments(tmp_path: Path) -> None:
    """A yes for `touch a` does not approve `touch b`; each waits for its own answer."""
    root = tmp_path / "runs" / "run-x"
    bridge = ApprovalBridge(root, "run-x", "P1-S01-T01", timeout_seconds=600)
    with pytest.raises(StepWaiting) as first:
        bridge("run_shell_command", {"command": "touch a"})
    book = ApprovalBook(root)
    book.answer(first.value.approval.id, True, "test")
    assert bridge("run_shell_command", {"command": "touch a"}) is True
    with pytest.raises(StepWaiting) as other:
        bridge("run_shell_command", {"command": "touch b"})
    assert other.value.approval.id != first.value.approval.id
    assert other.value.approval.action_hash == action_hash(
        "run_shell_command", {"command": "touch b"}, "P1-S01-T01"
    )
    elsewhere = ApprovalBridge(root, "run-x", "P1-S01-T02", timeout_seconds=600)
    with pytest.raises(StepWaiting):  # the same call in another task is asked again
        elsewhere("run_shell_command", {"command": "touch a"})


def test_ambiguous_state_is_a_no(tmp_path: Path) -> None:
    """A torn record denies its action; an unknown id approves nothing (fail closed)."""
    root = tmp_path / "runs" / "run-x"
    bridge = ApprovalBridge(root, "run-x", "P1-S01-T01", timeout_seconds=600)
    arguments = {"command": "touch a"}
    with pytest.raises(StepWaiting):
        bridge("run_shell_command", arguments)
    book = ApprovalBook(root)
    with pytest.raises(UserError, match="no approval 'A-unknown'"):
        book.answer("A-unknown", True, "test")
    record = book.folder / f"{action_hash('run_shell_command', arguments, 'P1-S01-T01')}.json"
    record.write_text('{"id": "A-', encoding="utf-8")  # torn by a crash mid-write
    assert bridge("run_shell_command", arguments) is False
    with pytest.raises(UserError, match="no approval is waiting"):
        book.answer(None, True, "test")


def test_a_serving_daemon_comes_back_at_the_deadline_by_itself(
    home: Home, fake_openai: FakeOpenAI
) -> None:
    """`start` (not --once): no answer and no file event, yet the run goes on at the deadline."""
    copy_assets(home, "market_report_2024.md")
    fake_openai.responder = follow_the_prompt({})
    configure(home, fake_openai, timeout=2)
    assert cli(home, "submit", REQUEST).returncode == 0
    assert once(home).returncode == 0
    run_id = str(only_run(home)["run_id"])
    assert cli(home, "confirm", run_id).returncode == 0
    with serving(home) as daemon:
        wait_for(lambda: only_run(home)["status"] == "COMPLETED", "the run to complete")
        assert daemon.stop() == 0
    (record,) = ApprovalBook(home.run(run_id).root).all()
    assert record.status is ApprovalStatus.TIMED_OUT and markers(home) == []
