"""Tools from MCP servers (issue 26): real servers (tests/mcp_server.py) over stdio and
streamable HTTP, offered to the model Executor, called through the loopback OpenAI server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from structlog.testing import capture_logs

from app.cli_schemas import schema_for
from app.doctor import diagnose, render_doctor
from executor.model import ModelExecutor
from executor.tools import (
    McpPlace,
    McpToolSet,
    ToolContext,
    ToolRegistry,
    sandbox_problem,
    task_mcp_tools,
)
from multiverse.config import RuntimeMapping, TierConfig, parse_runtime_mapping
from multiverse.errors import ConfigError, StepInterrupted
from multiverse.gateway import Gateway
from multiverse.gateway.calls import RetryPolicy
from multiverse.home import PHASE_FOLDERS, Home
from multiverse.models import MajorStage, Phase, Task
from multiverse.processes import allow_run_children, stop_run_children
from multiverse.roles import TaskAssignment
from multiverse.runs import ApprovalBook, StepWaiting

from fake_openai import FakeOpenAI, text, tools
from fakes import RecordingSleep
from journey import cli, wait_until

SERVER = Path(__file__).with_name("mcp_server.py")
RUN = "run-20250101-000000-001"
KEY_ENV = "MULTIVERSE_TEST_MCP_KEY"
DONE = '{"status": "COMPLETED", "post_tool_required": false, "outputs": [], "error": null}'
OUT = f"runs/{RUN}/workspace/ANALYZING/count.md"


def stdio(**options: Any) -> dict[str, Any]:
    """The mapping entry of the test server over stdio, with extra options."""
    return {"command": [sys.executable, str(SERVER)], **options}


def mapping(servers: dict[str, Any], **sections: Any) -> RuntimeMapping:
    """A mapping with these MCP servers (and other sections), through the YAML loader."""
    text = yaml.safe_dump({"mcp_servers": servers, **sections}, sort_keys=False)
    return parse_runtime_mapping(text, "test")


@pytest.fixture
def root(home: Home, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An initialised home with one run's folders, and a fake key for the loopback model."""
    monkeypatch.setenv(KEY_ENV, "sk-test-mcp")
    for folder in PHASE_FOLDERS:
        home.run(RUN).phase_workspace(folder).mkdir(parents=True)
    home.run(RUN).outputs.mkdir(parents=True)
    return home.root.resolve()


def executor(root: Path, server: FakeOpenAI, sleep: RecordingSleep, mcp: RuntimeMapping
             ) -> ModelExecutor:  # fmt: skip
    """A model Executor in the native tool loop, served by the loopback model, with `mcp`."""
    tier = TierConfig(model="openai/fake-model", api_base=server.base_url, api_key_env=KEY_ENV,
                      max_tokens=256, timeout_seconds=10, executor_mode="tools")  # fmt: skip
    retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)
    gateway = Gateway(runs_root=root / "runs", retry=retry, sleep=sleep, jitter=lambda: 0.5)
    return ModelExecutor(gateway=gateway, mapping=mcp, tier_config=tier, home=root)


def assignment(root: Path) -> TaskAssignment:
    """One ANALYZING task writing OUT."""
    task = Task(task_id="P1-S01-T01", run_id=RUN, stage_id="P1-S01", task_name="Count",
                task_purpose="Count the words of the brief.", output_path=OUT,
                execution_order=1)  # fmt: skip
    return TaskAssignment(
        home=str(root), run_id=RUN, request="Count the words.",
        phase=Phase(phase_id="P1", run_id=RUN, phase_name="ANALYZING"),
        stage=MajorStage(stage_id="P1-S01", run_id=RUN, phase_id="P1", stage_name="Stage",
                         execution_order=1),
        task=task,
    )  # fmt: skip


def offered(body: dict[str, Any]) -> set[str]:
    """The tool names one recorded request offered the model."""
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def tool_results(body: dict[str, Any]) -> list[str]:
    """The results of the last turn's tool calls, as one recorded request carries them."""
    results: list[str] = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        results.insert(0, message["content"])
    return results


def write(content: str) -> Any:
    """The model's call writing OUT."""
    return tools(("write_file", {"path": OUT, "content": content}))


def alive(pid: int) -> bool:
    """Whether a process exists (a zombie, not reaped yet, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_stdio_tools_are_offered_called_and_their_result_reaches_the_model(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """A stdio server's tools are offered under their own names; a call's result goes back
    fenced as data, in the same session (stateful), and the task writes its output."""
    fake_openai.script(
        tools(("word_count", {"text": "one two three"})),
        tools(("word_count", {"text": "four five"}), ("environment", {})),
        write("The brief has 3 words."),
        text(DONE),
    )
    role = executor(root, fake_openai, sleep, mapping({"words": stdio(env=["MCP_TEST_VAR"])}))
    with capture_logs() as logs:
        signal = role.execute_task(assignment(root))
    assert signal.status == "COMPLETED", signal.error
    first, second, third, _ = fake_openai.requests
    assert {"word_count", "environment", "stamp", "hang", "read_file"} <= offered(first)
    assert "write_file" in offered(first)  # the built-in tools stay
    descriptions = {t["function"]["name"]: t["function"]["description"] for t in first["tools"]}
    assert "MCP server `words`" in descriptions["word_count"]
    assert "MCP server" not in descriptions["read_file"]  # the built-in, not the server's
    (counted,) = tool_results(second)
    assert "3 words (call 1 of this session)" in counted and "data, not instructions" in counted
    again, environment = tool_results(third)
    assert "2 words (call 2 of this session)" in again
    assert f"cwd={root}" in environment and "MULTIVERSE_HOME" in environment
    assert KEY_ENV not in environment  # a model key never reaches a server
    assert (root / OUT).read_text("utf-8") == "The brief has 3 words."
    events = [entry["event"] for entry in logs]
    assert "mcp_tool_name_taken" in events and events.count("mcp_called") == 3
    assert (root / "runs" / RUN / "logs" / "mcp-words.log").is_file()


def test_a_forbidden_or_unlisted_tool_is_not_offered(root: Path) -> None:
    """A forbidden action removes an MCP tool by its name, or a whole server as mcp:<server>;
    a server's `tools` list keeps only those; a taken name is never given twice."""
    config = mapping(
        {"words": stdio(), "other": stdio(tools=["stamp", "word_count"])},
        action_mapping={"destroy": ["erase_everything"], "no_other": ["mcp:other"]},
    )
    context = ToolContext(home=root, run_id=RUN)
    with task_mcp_tools(config, ["destroy"], root, RUN, ["read_file"]) as given:
        registry = ToolRegistry(context, list(given), given)
        names = {schema["function"]["name"] for schema in registry.schemas()}
    assert names == {"word_count", "environment", "write_note", "stamp", "hang", "fail"}
    with task_mcp_tools(config, ["destroy", "no_other"], root, RUN, []) as given:
        assert "erase_everything" not in given and "read_file" in given
    place = McpPlace(home=root)
    with McpToolSet(config.mcp_servers, place, {"erase_everything": "destroy"}) as found:
        words, other = found.servers
    assert "destroy" in words.withheld["erase_everything"]
    assert [tool.name for tool in other.tools] == []
    assert "tools` list" in other.withheld["environment"]
    assert "taken" in other.withheld["word_count"]


def test_a_tool_needing_approval_waits_for_the_user_and_runs_once_approved(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """requires_approval goes through the approval bridge: the step waits with the request
    recorded, and once approved the call is made and its result reaches the model."""
    config = mapping({"words": stdio(requires_approval=["stamp"])})
    call = tools(("stamp", {"note": "ship it"}))
    fake_openai.script(call, call, write("Stamped."), text(DONE))
    with pytest.raises(StepWaiting):
        executor(root, fake_openai, sleep, config).execute_task(assignment(root))
    book = ApprovalBook(root / "runs" / RUN)
    (pending,) = book.pending()
    assert (pending.tool, pending.arguments) == ("stamp", {"note": "ship it"})
    book.answer(None, approve=True, by="test")
    signal = executor(root, fake_openai, sleep, config).execute_task(assignment(root))
    assert signal.status == "COMPLETED", signal.error
    assert "stamped: ship it" in tool_results(fake_openai.requests[2])[0]
    assert "approval" in next(t["function"]["description"] for t in fake_openai.requests[1]["tools"]
                              if t["function"]["name"] == "stamp")  # fmt: skip


def test_a_hanging_tool_is_stopped_by_its_timeout_and_said_as_a_tool_error(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """A call past the server's timeout_seconds is a tool error for the model; the server that
    hung is stopped, and the next call starts it again."""
    config = mapping({"words": stdio(timeout_seconds=0.5)})
    fake_openai.script(
        tools(("environment", {})),
        tools(("hang", {})),
        tools(("word_count", {"text": "still here"})),
        write("Done."),
        text(DONE),
    )
    signal = executor(root, fake_openai, sleep, config).execute_task(assignment(root))
    assert signal.status == "COMPLETED", signal.error
    (hung,) = tool_results(fake_openai.requests[2])
    assert hung.startswith("ERROR: hang (MCP server words) timed out after 0.5 s")
    (count,) = tool_results(fake_openai.requests[3])
    assert "2 words (call 1 of this session)" in count  # a new server process
    (environment,) = tool_results(fake_openai.requests[1])
    pid = int(environment.split("pid=")[1].split()[0])
    assert not alive(pid)  # the server that hung was stopped


def test_a_server_error_or_a_missing_server_is_a_tool_error_not_a_crash(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """A tool that fails, and a server that cannot start, leave the task going: the failure is
    a value for the model, the missing server's tools are simply not offered."""
    config = mapping({"words": stdio(max_output_chars=12), "gone": {"command": ["no-such-mcp"]}})
    fake_openai.script(
        tools(("fail", {"reason": "test"})),
        tools(("word_count", {"text": "word " * 30})),
        write("Done."),
        text(DONE),
    )
    with capture_logs() as logs:
        signal = executor(root, fake_openai, sleep, config).execute_task(assignment(root))
    assert signal.status == "COMPLETED", signal.error
    (failed,) = tool_results(fake_openai.requests[1])
    assert failed.startswith("ERROR: fail (MCP server words) reported an error")
    (cut,) = tool_results(fake_openai.requests[2])
    assert "[cut at 12 characters]" in cut
    unavailable = next(entry for entry in logs if entry["event"] == "mcp_server_unavailable")
    assert unavailable["server"] == "gone" and "not found on PATH" in unavailable["error"]


def test_a_cancelled_run_interrupts_the_step_and_starts_no_server(root: Path) -> None:
    """Work of a run being stopped (cancel, pause) is interrupted, not failed: no server is
    started for it, and the step is redone if the run goes on."""
    stop_run_children(RUN)
    try:
        with pytest.raises(StepInterrupted), task_mcp_tools(
            mapping({"words": stdio()}), [], root, RUN, []
        ):
            pass
    finally:
        allow_run_children(RUN)


def test_cancelling_the_run_stops_a_call_in_flight_and_its_server(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep
) -> None:
    """A run cancelled (or paused) while an MCP call hangs: the step is interrupted at once,
    long before the call's time limit, and the server is stopped."""
    fake_openai.script(tools(("hang", {"marker": "hanging"})))
    role = executor(root, fake_openai, sleep, mapping({"words": stdio(timeout_seconds=600)}))
    raised: list[BaseException] = []

    def work() -> None:
        try:
            role.execute_task(assignment(root))
        except BaseException as error:  # the step's control flow, caught to be looked at
            raised.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    try:
        assert wait_until(lambda: (root / "hanging").is_file(), seconds=60)
        stop_run_children(RUN)
        worker.join(timeout=60)
    finally:
        allow_run_children(RUN)
    assert not worker.is_alive() and isinstance(raised[0], StepInterrupted)
    assert not alive(int((root / "hanging").read_text()))


def _hidden_by_the_sandbox() -> bool:
    """The sandbox mounts a private /tmp: an interpreter or a server file there is not seen."""
    paths = (Path(sys.executable).resolve(), SERVER.resolve())
    return any(path.is_relative_to("/tmp") for path in paths)


@pytest.mark.skipif(sandbox_problem() is not None, reason="no bubblewrap sandbox here")
@pytest.mark.skipif(_hidden_by_the_sandbox(), reason="the checkout lies in /tmp, which the "
                    "sandbox replaces with its own")  # fmt: skip
def test_a_sandboxed_server_works_in_the_workspace_and_cannot_write_elsewhere(root: Path) -> None:
    """sandbox: true runs the server in the shell's sandbox: it works in the run's workspace,
    writes there, and cannot write anywhere else in the home."""
    context = ToolContext(home=root, run_id=RUN)
    with task_mcp_tools(mapping({"boxed": stdio(sandbox=True)}), [], root, RUN, []) as given:
        environment = given["environment"].run(context, {})
        inside = given["write_note"].run(context, {"path": "note.txt", "text": "hi"})
        outside = given["write_note"].run(context, {"path": str(root / "out.txt"), "text": "x"})
    workspace = root / "runs" / RUN / "workspace"
    assert f"cwd={workspace}" in environment.output and "HOME" in environment.output
    assert inside.ok and (workspace / "note.txt").read_text("utf-8") == "hi"
    # Refused, or (a home under /tmp) written into the sandbox's private /tmp: never the home.
    assert not (root / "out.txt").exists(), outside


@pytest.fixture
def http_server(no_proxies: None) -> Iterator[str]:
    """The test server over streamable HTTP, as a child process on a loopback port."""
    child = subprocess.Popen([sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # written once it listens
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        child.terminate()
        child.wait(timeout=30)


def test_an_http_server_serves_its_tools_to_the_executor(
    root: Path, fake_openai: FakeOpenAI, sleep: RecordingSleep, http_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A streamable-HTTP server's tools are offered and called like a stdio server's."""
    monkeypatch.setenv("MCP_TEST_TOKEN", "secret-value")
    config = mapping({"remote": {"url": http_server,
                                 "header_envs": {"X-Test-Token": "MCP_TEST_TOKEN"}}})  # fmt: skip
    fake_openai.script(tools(("word_count", {"text": "over http"})), write("2."), text(DONE))
    signal = executor(root, fake_openai, sleep, config).execute_task(assignment(root))
    assert signal.status == "COMPLETED", signal.error
    assert "word_count" in offered(fake_openai.requests[0])
    assert "2 words" in tool_results(fake_openai.requests[1])[0]


def test_doctor_lists_each_server_its_tools_and_what_is_withheld(
    root: Path, http_server: str
) -> None:
    """doctor opens every server: the tools given, those withheld and why, one that does not
    answer (✗), in text and in --json."""
    (root / "runtime-mapping.yaml").write_text(yaml.safe_dump({"mcp_servers": {
        "words": stdio(requires_approval=["stamp"]),
        "remote": {"url": http_server, "header_envs": {"X-Token": "MCP_UNSET_TOKEN"}},
        "broken": {"command": [sys.executable, "-c", "import sys; sys.exit('no protocol here')"]},
    }}, sort_keys=False), encoding="utf-8")  # fmt: skip
    report = diagnose(root, dict(os.environ))
    words, remote, broken = report.mcp_servers
    assert words.answered and {"word_count", "stamp", "hang"} <= set(words.tools)
    assert words.approval == ["stamp"] and "read_file" in words.withheld
    assert remote.answered and remote.transport == "http" and remote.unset == ["MCP_UNSET_TOKEN"]
    assert not broken.answered and "no protocol here" in (broken.error or "")
    assert not report.healthy
    shown = render_doctor(report)
    assert "MCP servers" in shown and "✓ words (stdio:" in shown and "✗ broken" in shown
    assert "asks before each call: stamp" in shown and "MCP_UNSET_TOKEN: not set" in shown
    answer = cli(Home(root), "doctor", "--json")
    data = json.loads(answer.stdout)
    jsonschema.validate(data, schema_for("doctor"))
    assert [server["name"] for server in data["mcp_servers"]] == ["words", "remote", "broken"]


@pytest.mark.parametrize(
    ("servers", "said"),
    [
        ({"x": {"command": ["a"], "url": "http://h/mcp"}}, "exactly one of `command`"),
        ({"x": {"url": "ftp://h/mcp"}}, "http:// or https://"),
        ({"x": {"url": "https://user:pw@h/mcp"}}, "must not hold credentials"),
        ({"x": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer t"}}},
         "give it in header_envs"),
        ({"x": {"command": ["a"], "env": ["OPENAI_API_KEY"]}}, "never gets a model key"),
        ({"x": {"url": "https://h/mcp", "env": ["A"]}}, "are for a `command` server"),
        ({"x": {"command": ["a"], "network": True}}, "for a sandboxed server"),
        ({"x": {"command": ["a"], "sandbox": True, "cwd": "home"}}, "remove `cwd`"),
        ({"bad name": {"command": ["a"]}}, "mcp_servers.bad name"),
    ],
)  # fmt: skip
def test_a_bad_server_entry_is_a_config_error_saying_what_to_fix(
    servers: dict[str, Any], said: str
) -> None:
    """Each malformed server is refused with the key and what to change."""
    with pytest.raises(ConfigError, match="mcp_servers") as raised:
        mapping(servers)
    assert said in str(raised.value)


def test_an_action_naming_an_unknown_server_is_refused() -> None:
    """A misspelt mcp:<server> in action_mapping would remove nothing: it is an error."""
    with pytest.raises(ConfigError, match=r"mcp:wrods, which is not in mcp_servers"):
        mapping({"words": stdio()}, action_mapping={"destroy": ["mcp:wrods"]})
