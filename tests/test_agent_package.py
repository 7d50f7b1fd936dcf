"""Tests of loading agent packages (AGENT.md, agentcard.yaml, tools.yaml) through the mapping."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from multiverse.agent_package import (
    ROLES,
    AgentPackage,
    load_agent_package,
    role_package_dir,
)
from multiverse.config import RuntimeMapping, Tier, load_runtime_mapping
from multiverse.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
CARD = """\
name: tester
agent_version: "2.1"
prompt_version: 3
tier: LOW
capabilities: [test things]
forbidden_actions: [modify_files]
escalation:
  on: validation_failed_after_repairs
  to: next_tier
"""
TOOLS = """\
tools:
  - name: read_file
    description: Read a file.
  - name: write_file
    description: Write a file.
"""


def make_package(folder: Path, prompt: str, card: str = CARD, tools: str = TOOLS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "AGENT.md").write_text(prompt, encoding="utf-8")
    (folder / "agentcard.yaml").write_text(card, encoding="utf-8")
    (folder / "tools.yaml").write_text(tools, encoding="utf-8")
    return folder


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("mapping_home", [REPO, REPO / "multiverse" / "home_template", None])
def test_shipped_packages_load_with_shipped_mapping(role: str, mapping_home: Path | None) -> None:
    """Each shipped role loads with the shipped and the default mapping, all {tool:x} resolved."""
    mapping = RuntimeMapping() if mapping_home is None else load_runtime_mapping(mapping_home)
    package = load_agent_package(role_package_dir(role), mapping)
    assert package.name == role
    assert "{tool:" not in package.prompt
    assert package.prompt_version and package.agent_version
    assert set(package.tool_descriptions) == set(package.tools)
    assert package.card.escalation is not None


def test_shipped_roles_have_their_tiers_and_limits() -> None:
    """Planner HIGH, Executor MEDIUM, Communicator LOW; forbidden actions remove their tools."""
    mapping = load_runtime_mapping(REPO)
    planner, executor, communicator = (
        load_agent_package(role_package_dir(role), mapping) for role in ROLES
    )
    assert (planner.tier, executor.tier, communicator.tier) == (Tier.HIGH, Tier.MEDIUM, Tier.LOW)
    assert "write_file" not in planner.tools
    assert {"write_file", "read_file", "web_search"} <= set(executor.tools)
    assert set(communicator.tools) == {"read_file", "list_directory"}
    assert "run_shell_command" not in executor.tools  # not mapped by default
    assert executor.card.escalation_tier() is Tier.HIGH
    assert planner.card.escalation_tier() is None


def test_role_package_dir_refuses_unknown_roles() -> None:
    """Only the three roles have packages."""
    with pytest.raises(ValueError, match="unknown role"):
        role_package_dir("orchestrator")


def test_tool_references_resolve_to_concrete_names(tmp_path: Path) -> None:
    """{tool:x} becomes the concrete tool the mapping names; the card's values are read as text."""
    folder = make_package(tmp_path / "agent", "Use {tool:read_file} to read.")
    mapping = RuntimeMapping.model_validate({"tool_mapping": {"read_file": "safe_read"}})
    package = load_agent_package(folder, mapping)
    assert isinstance(package, AgentPackage)
    assert package.prompt == "Use safe_read to read."
    assert list(package.tools) == ["read_file"]
    assert (package.agent_version, package.prompt_version) == ("2.1", "3")
    assert package.card.escalation is not None
    assert package.card.escalation.on == "validation_failed_after_repairs"
    assert package.card.escalation_tier() is Tier.MEDIUM


def test_undeclared_reference_is_a_config_error(tmp_path: Path) -> None:
    """A {tool:x} that tools.yaml does not declare fails, naming AGENT.md and the reference."""
    folder = make_package(tmp_path / "agent", "Use {tool:read_file} then {tool:teleport}.")
    with pytest.raises(ConfigError) as caught:
        load_agent_package(folder, RuntimeMapping())
    message = str(caught.value)
    assert str(folder / "AGENT.md") in message
    assert "{tool:teleport} is not declared in tools.yaml" in message


def test_a_tool_left_out_of_the_mapping_takes_its_default_and_says_so(tmp_path: Path) -> None:
    """A declared tool that tool_mapping leaves out takes its runtime default (the tool of its
    name) with a notice; one turned off (`read_file:` left empty) stays named in the prompt, is
    not given, and is said too; neither is an error."""
    folder = make_package(tmp_path / "agent", "Use {tool:read_file}.")
    only_glob = RuntimeMapping.model_validate({"tool_mapping": {"glob": "glob"}})
    left_out = load_agent_package(folder, only_glob)
    assert left_out.prompt == "Use read_file." and left_out.tools["read_file"].tool == "read_file"
    assert [
        notice.split(": ", 1)[1] for notice in left_out.notices
    ] == ["{tool:read_file} is not in tool_mapping: its runtime default `read_file` is used"]
    off = RuntimeMapping.model_validate({"tool_mapping": {"glob": "glob", "read_file": None}})
    turned_off = load_agent_package(folder, off)
    assert "read_file" not in turned_off.tools and turned_off.prompt == "Use read_file."
    assert "is turned off in tool_mapping" in turned_off.notices[0]
    assert load_agent_package(folder, RuntimeMapping()).notices == []


def test_reference_to_forbidden_tool_is_a_config_error(tmp_path: Path) -> None:
    """A prompt naming a tool that a forbidden action removes fails and names the action."""
    folder = make_package(tmp_path / "agent", "Save with {tool:write_file}.")
    with pytest.raises(ConfigError) as caught:
        load_agent_package(folder, RuntimeMapping())
    assert "{tool:write_file} maps to 'write_file'" in str(caught.value)
    assert "'modify_files'" in str(caught.value)


def test_forbidden_tools_are_not_given(tmp_path: Path) -> None:
    """A declared tool removed by a forbidden action is simply not given when unreferenced."""
    folder = make_package(tmp_path / "agent", "Read with {tool:read_file}.")
    package = load_agent_package(folder, RuntimeMapping())
    assert list(package.tools) == ["read_file"]
    assert list(package.tool_descriptions) == ["read_file"]


def test_files_are_never_modified(tmp_path: Path) -> None:
    """Loading a package leaves its three files byte-identical and untouched."""
    folder = tmp_path / "planner"
    shutil.copytree(role_package_dir("planner"), folder)
    before = snapshot(folder)
    load_agent_package(folder, RuntimeMapping())
    load_agent_package(folder, RuntimeMapping())
    assert snapshot(folder) == before


def test_files_are_read_on_every_load(tmp_path: Path) -> None:
    """An edit of AGENT.md is seen by the next load: nothing is cached."""
    folder = make_package(tmp_path / "agent", "First {tool:read_file}.")
    assert load_agent_package(folder, RuntimeMapping()).prompt == "First read_file."
    (folder / "AGENT.md").write_text("Second {tool:read_file}.", encoding="utf-8")
    assert load_agent_package(folder, RuntimeMapping()).prompt == "Second read_file."


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A package without one of its three files is refused, naming what is missing."""
    folder = make_package(tmp_path / "agent", "Hello.")
    (folder / "tools.yaml").unlink()
    with pytest.raises(ConfigError, match=r"missing tools\.yaml"):
        load_agent_package(folder, RuntimeMapping())


@pytest.mark.parametrize(
    ("card", "tools", "expected"),
    [
        (CARD.replace("tier: LOW", "tier: TOP"), TOOLS, "agentcard.yaml: tier: must be"),
        (CARD.replace("to: next_tier", "to: sideways"), TOOLS, "escalation.to"),
        (CARD + "colour: blue\n", TOOLS, "agentcard.yaml: colour: unknown key"),
        (CARD.replace("[modify_files]", "[fly]"), TOOLS, "agentcard.yaml: forbidden action 'fly'"),
        (CARD, TOOLS + "  - name: read_file\n    description: again\n", "more than once"),
        (CARD, "tools: [\n", "tools.yaml:2: invalid YAML"),
    ],
)
def test_bad_card_or_tools_file_is_named(
    tmp_path: Path, card: str, tools: str, expected: str
) -> None:
    """A bad value in agentcard.yaml or tools.yaml is a ConfigError naming the file and the key."""
    folder = make_package(tmp_path / "agent", "Hello.", card=card, tools=tools)
    with pytest.raises(ConfigError) as caught:
        load_agent_package(folder, RuntimeMapping())
    assert expected in str(caught.value)
