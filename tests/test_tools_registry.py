"""The tool registry: only allowed tools, OpenAI schemas, JSON arguments, and it never raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from structlog.testing import capture_logs

from executor.tools import ToolContext, ToolRegistry, ToolResult, builtin_tools
from multiverse.home import Home, init_home

RUN = "run-20260101-000000-001"
WS = f"runs/{RUN}/workspace"
ALL_TOOLS = {
    "list_directory",
    "read_file",
    "read_many_files",
    "write_file",
    "glob",
    "search_file_content",
    "replace",
    "create_directory",
    "run_shell_command",
    "web_search",
    "web_fetch",
}


class ExplodingTool:
    """A real tool whose body fails the way a bug would."""

    name = "explode"
    description = "Always fails inside."
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Raise, as a buggy tool would."""
        raise RuntimeError("boom")


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    """A context for run RUN in a fresh home."""
    home = Home(tmp_path / "home")
    init_home(home)
    home.run(RUN).workspace.mkdir(parents=True)
    return ToolContext(home=home.root, run_id=RUN)


def test_builtin_tools_are_the_concrete_tools_of_the_spec() -> None:
    """Every concrete tool of SPEC §12 is provided under its name."""
    assert set(builtin_tools()) == ALL_TOOLS


def test_schemas_only_for_allowed_tools(context: ToolContext) -> None:
    """schemas() lists the allowed tools only, in OpenAI function-tool format."""
    registry = ToolRegistry(context, ["read_file", "write_file"])
    schemas = registry.schemas()
    assert [s["function"]["name"] for s in schemas] == ["read_file", "write_file"]
    read = schemas[0]
    assert read["type"] == "function"
    assert read["function"]["description"]
    parameters = read["function"]["parameters"]
    assert parameters["type"] == "object"
    assert parameters["required"] == ["path"]
    assert set(parameters["properties"]) == {"path", "offset", "limit"}
    assert "title" not in parameters


def test_every_schema_is_an_object_schema(context: ToolContext) -> None:
    """Each tool's parameters are a JSON object schema a provider accepts."""
    for schema in ToolRegistry(context, builtin_tools()).schemas():
        parameters = schema["function"]["parameters"]
        assert parameters["type"] == "object" and "properties" in parameters


def test_unknown_names_are_ignored_with_a_log_event(context: ToolContext) -> None:
    """A mapped name no concrete tool has is skipped and logged."""
    with capture_logs() as logs:
        registry = ToolRegistry(context, ["data_visualization", "glob"])
    assert registry.names == ["glob"]
    assert {"event": "tool_not_provided", "tool": "data_visualization"}.items() <= logs[0].items()


def test_not_allowed_tool_is_an_error_value(context: ToolContext) -> None:
    """Calling a tool outside the allowed set fails as a value and does nothing."""
    registry = ToolRegistry(context, ["read_file"])
    result = registry.call("write_file", {"path": f"{WS}/x.md", "content": "x"})
    assert not result.ok and "not available" in str(result.error)
    assert not (context.home / WS / "x.md").exists()


def test_json_string_arguments_are_parsed(context: ToolContext) -> None:
    """Arguments given as a JSON string work like a dict."""
    registry = ToolRegistry(context, ["write_file"])
    arguments = json.dumps({"path": f"{WS}/j.md", "content": "json 값"}, ensure_ascii=False)
    result = registry.call("write_file", arguments)
    assert result.ok
    assert (context.home / WS / "j.md").read_text("utf-8") == "json 값"


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", '"text"'])
def test_bad_json_arguments_are_error_values(context: ToolContext, arguments: str) -> None:
    """Malformed or non-object JSON arguments fail as values."""
    result = ToolRegistry(context, ["read_file"]).call("read_file", arguments)
    assert not result.ok and "JSON" in str(result.error)


def test_invalid_arguments_name_the_field(context: ToolContext) -> None:
    """A missing or unknown argument is explained to the model."""
    registry = ToolRegistry(context, ["read_file"])
    missing = registry.call("read_file", {})
    assert not missing.ok and "path" in str(missing.error)
    extra = registry.call("read_file", {"path": "x", "mode": "rb"})
    assert not extra.ok and "mode" in str(extra.error)
    negative = registry.call("read_file", {"path": "x", "offset": -1})
    assert not negative.ok and "offset" in str(negative.error)


def test_a_tool_that_raises_becomes_an_error_value(context: ToolContext) -> None:
    """An exception inside a tool is returned as 'Type: message' and logged."""
    registry = ToolRegistry(context, ["explode"], tools={"explode": ExplodingTool()})
    with capture_logs() as logs:
        result = registry.call("explode", None)
    assert result == ToolResult(ok=False, error="RuntimeError: boom")
    assert any(entry["event"] == "tool_crashed" for entry in logs)


def test_os_errors_inside_tools_become_error_values(context: ToolContext) -> None:
    """A write under a path whose parent is a file fails as a value, not an exception."""
    registry = ToolRegistry(context, ["write_file"])
    assert registry.call("write_file", {"path": f"{WS}/f", "content": "x"}).ok
    result = registry.call("write_file", {"path": f"{WS}/f/child.md", "content": "x"})
    assert not result.ok and result.error


def test_written_files_collects_successful_writes_only(context: ToolContext) -> None:
    """written_files holds each file written or replaced, home-relative, and no failed write."""
    registry = ToolRegistry(context, builtin_tools())
    registry.call("write_file", {"path": f"{WS}/a.md", "content": "one"})
    registry.call("replace", {"path": f"{WS}/a.md", "old_string": "one", "new_string": "two"})
    registry.call("write_file", {"path": f"outputs/{RUN}/final.md", "content": "memo"})
    registry.call("write_file", {"path": "assets/x.md", "content": "no"})
    registry.call("create_directory", {"path": f"{WS}/charts"})
    assert registry.written_files == {f"{WS}/a.md", f"outputs/{RUN}/final.md"}
