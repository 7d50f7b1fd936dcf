"""Tests of tool calls written as text: the pure parser, and the tool loop running them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from executor.model import ModelExecutor
from executor.model.loop import text_tool_calls
from multiverse.config import RuntimeMapping, TierConfig
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import Home
from multiverse.models import MajorStage, Phase, Task
from multiverse.roles import TaskAssignment

from fake_openai import FakeOpenAI, text
from runhome import prepare_run_home

RUN = "run-20250101-000000-001"
ASSET = "assets/market_report_2024.md"
KNOWN = ("read_file", "write_file", "list_directory")
DONE = '{"status": "COMPLETED", "post_tool_required": false, "outputs": [], "error": null}'


def calls(answer: str) -> list[tuple[str, dict[str, Any], str | None]]:
    """The (name, arguments, error) of the calls found in an answer."""
    return [(c.name, c.arguments, c.arguments_error) for c in text_tool_calls(answer, KNOWN)]


def test_name_and_arguments_in_a_json_fence_is_a_call() -> None:
    """The shape small models write most: {"name", "arguments"} in a ```json fence."""
    answer = 'I will read it.\n```json\n{"name": "read_file", "arguments": {"path": "a.md"}}\n```'
    assert calls(answer) == [("read_file", {"path": "a.md"}, None)]


@pytest.mark.parametrize(
    "item",
    [
        {"tool": "read_file", "args": {"path": "a.md"}},
        {"tool": "read_file", "parameters": {"path": "a.md"}},
        {"tool_name": "read_file", "arguments": {"path": "a.md"}},
        {"function": {"name": "read_file", "arguments": {"path": "a.md"}}},
        {"type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.md"}'}},
        {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a.md"}}}]},
    ],
)
def test_every_shape_seen_from_small_models_is_a_call(item: dict[str, Any]) -> None:
    """tool/args, tool/parameters, function{...} (arguments as a string too), tool_calls."""
    assert calls(json.dumps(item)) == [("read_file", {"path": "a.md"}, None)]


def test_qwen_tool_call_tags_and_lists_give_every_call_in_order() -> None:
    """Qwen's <tool_call> tags, and a list of calls, give each call in order."""
    tagged = (
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.md"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "list_directory", "arguments": {"path": "assets"}}\n</tool_call>'
    )
    assert [name for name, _, _ in calls(tagged)] == ["read_file", "list_directory"]
    write = {"name": "write_file", "arguments": {"path": "b.md", "content": "x"}}
    listed = json.dumps([{"name": "read_file", "arguments": {"path": "a.md"}}, write])
    assert [name for name, _, _ in calls(listed)] == ["read_file", "write_file"]
    assert [c.id for c in text_tool_calls(listed, KNOWN)] == ["text_call_0", "text_call_1"]


def test_result_json_prose_and_unknown_tools_are_not_calls() -> None:
    """The final result JSON, plain prose and a tool nobody knows are not tool calls."""
    assert calls(DONE) == []
    assert calls(f"```json\n{DONE}\n```") == []
    assert calls("The market grew [14%] in {2023}.") == []
    assert calls('{"name": "delete_everything", "arguments": {}}') == []


def test_unusable_arguments_are_a_call_with_an_error() -> None:
    """Arguments that are not a JSON object still make a call, whose error the model sees."""
    ((name, arguments, problem),) = calls('{"name": "read_file", "arguments": "{not json"}')
    assert (name, arguments) == ("read_file", {}) and problem is not None
    assert "not valid JSON" in problem
    ((_, _, problem),) = calls('{"name": "read_file", "arguments": [1, 2]}')
    assert problem == "tool arguments are not a JSON object"


# -- the tool loop, through real litellm and the loopback server ------------------------------


@pytest.fixture
def root(home: Home) -> Path:
    """An initialised home with the fixture assets and a run's folders."""
    return prepare_run_home(home, RUN)


def executor(root: Path, server: FakeOpenAI) -> ModelExecutor:
    """A tools-mode ModelExecutor on the fake server (keyless, as a self-hosted server)."""
    tier = TierConfig(model="openai/fake-model", api_base=server.base_url, max_tokens=256,
                      timeout_seconds=10, executor_mode="tools")  # fmt: skip
    retry = RetryPolicy(max_attempts=1)
    gateway = Gateway(runs_root=root / "runs", retry=retry, sleep=lambda _: None)
    return ModelExecutor(gateway, RuntimeMapping(), tier, root)


def assignment(root: Path, out: str) -> TaskAssignment:
    """One ANALYZING task reading the market report and writing `out`."""
    task = Task(task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01", task_name="Analysis",
                task_purpose="Extract the market figures.", related_references=[ASSET],
                output_path=out, execution_order=1)  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=RUN, request="Write a market-entry memo.",
        phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
        stage=MajorStage(stage_id="P1-S01", run_id=RUN, phase_id="P1", stage_name="Stage",
                         execution_order=1),
        task=task,
    )  # fmt: skip


def fenced(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as a small model writes it: JSON in a code fence, with a line of prose."""
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"Calling the tool now.\n```json\n{call}\n```"


def test_a_tool_call_written_in_a_code_fence_is_executed(
    root: Path, fake_openai: FakeOpenAI
) -> None:
    """Text tool calls read and write through the registry; the results come back; COMPLETED."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    fake_openai.script(
        text(fenced("read_file", {"path": ASSET})),
        text(fenced("write_file", {"path": out, "content": "# Analysis\n\n€18.5 billion.\n"})),
        text(DONE),
    )
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "COMPLETED" and [o.path for o in signal.outputs] == [out]
    assert (root / out).read_text("utf-8") == "# Analysis\n\n€18.5 billion.\n"
    _, second, third = fake_openai.requests
    assistant, results = second["messages"][-2:]
    assert assistant == {"role": "assistant", "content": fenced("read_file", {"path": ASSET})}
    assert results["role"] == "user" and "`read_file`" in results["content"]
    assert "€18.5 billion" in results["content"]  # the file's text went back to the model
    assert f"bytes to {out}" in third["messages"][-1]["content"]
    assert not any(m["role"] == "tool" for m in third["messages"])


def test_text_tool_calls_are_confined_like_native_ones(root: Path, fake_openai: FakeOpenAI) -> None:
    """A write outside the run written as text is refused, and the refusal reaches the model."""
    out = f"runs/{RUN}/workspace/ANALYZING/analysis.md"
    fake_openai.script(
        text(fenced("write_file", {"path": "assets/pwned.md", "content": "pwned"})),
        text("Could not write it.\n" + DONE.replace("COMPLETED", "FAILED")),
    )
    signal = executor(root, fake_openai).execute_task(assignment(root, out))
    assert signal.status == "FAILED" and not (root / "assets" / "pwned.md").exists()
    results = fake_openai.requests[1]["messages"][-1]["content"]
    assert "ERROR: writing 'assets/pwned.md' is refused" in results
