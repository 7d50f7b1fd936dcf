"""Agent packages (SPEC §10.1): AGENT.md, agentcard.yaml and tools.yaml of each role.

Spawning a role loads the three files afresh, resolves `{tool:name}` through tools.yaml and the
runtime mapping, and removes the tools its forbidden actions exclude. The files are only read.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from multiverse.config import (
    RuntimeMapping,
    Tier,
    ToolBinding,
    concrete_tools,
    describe_validation_error,
    excluded_tools,
    load_yaml,
    read_config_text,
)
from multiverse.errors import ConfigError

ROLES = ("planner", "executor", "communicator")
PROMPT_FILE = "AGENT.md"
CARD_FILE = "agentcard.yaml"
TOOLS_FILE = "tools.yaml"
NEXT_TIER = "next_tier"
TOOL_NAME = r"[a-z][a-z0-9_]*"
TOOL_REFERENCE = re.compile(r"\{tool:([^{}]*)\}")


class CardData(BaseModel):
    """Base of the package's data: strict, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Handoff(CardData):
    """When the work passes to another role."""

    to: str = Field(min_length=1)
    when: str = Field(min_length=1)


class Escalation(CardData):
    """When a call is retried once on a higher tier before failing (SPEC §10.2)."""

    on: str = Field(min_length=1)
    to: str = NEXT_TIER

    @model_validator(mode="before")
    @classmethod
    def _unquoted_on(cls, data: Any) -> Any:
        # YAML 1.1 reads a bare `on:` key as the boolean true.
        if isinstance(data, dict) and True in data:
            data = {("on" if key is True else key): value for key, value in data.items()}
        return data

    @field_validator("to")
    @classmethod
    def _known_target(cls, value: str) -> str:
        if value != NEXT_TIER and value not in Tier.__members__:
            raise ValueError(f"must be {NEXT_TIER} or a tier (HIGH, MEDIUM, LOW), not {value!r}")
        return value


class AgentCard(CardData):
    """agentcard.yaml: who the role is, its tier, limits, handoff and escalation."""

    name: str = Field(min_length=1)
    description: str = ""
    agent_version: str = Field(min_length=1)
    prompt_version: str = Field(min_length=1)
    tier: Tier
    capabilities: list[str] = Field(min_length=1)
    constraints: list[str] = Field(default_factory=list)
    forbidden_actions: list[str] = Field(default_factory=list)
    handoff: list[Handoff] = Field(default_factory=list)
    escalation: Escalation | None = None

    @field_validator("agent_version", "prompt_version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        # `prompt_version: 1.0` is a float in YAML; the version is its text.
        return str(value) if isinstance(value, int | float) else value

    def escalation_tier(self) -> Tier | None:
        """The tier a failing call escalates to, or None when it cannot escalate."""
        if self.escalation is None:
            return None
        if self.escalation.to == NEXT_TIER:
            return self.tier.next_up()
        return Tier(self.escalation.to)


class ToolDeclaration(CardData):
    """One abstract tool a role may use."""

    name: str = Field(pattern=f"^{TOOL_NAME}$")
    description: str = Field(min_length=1)


class ToolsFile(CardData):
    """tools.yaml: the abstract tools of a role."""

    tools: list[ToolDeclaration] = Field(default_factory=list)

    @field_validator("tools")
    @classmethod
    def _unique(cls, value: list[ToolDeclaration]) -> list[ToolDeclaration]:
        twice = sorted(name for name, n in Counter(t.name for t in value).items() if n > 1)
        if twice:
            raise ValueError(f"tools declared more than once: {', '.join(twice)}")
        return value


class AgentPackage(CardData):
    """A role ready to spawn: its card, its resolved prompt and the tools it is given."""

    name: str
    folder: Path
    card: AgentCard
    prompt: str
    tools: dict[str, ToolBinding]
    tool_descriptions: dict[str, str]
    prompt_version: str
    agent_version: str
    notices: list[str] = []  # what the mapping left to a default or turned off, to be said

    @property
    def tier(self) -> Tier:
        """The tier the role's calls start on."""
        return self.card.tier


def role_package_dir(role: str) -> Path:
    """The shipped `<role>/agent/` folder of one role."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    try:
        folder = resources.files(role).joinpath("agent")
    except NotADirectoryError:
        # A stale editable install serves the role as a namespace package whose path holds a
        # finder hook next to the real folder; importlib.resources cannot read those.
        folder = None
    if isinstance(folder, Path):
        return folder
    spec = importlib.util.find_spec(role)
    for entry in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(entry) / "agent"
        if candidate.is_dir():
            return candidate
    raise ConfigError(f"the agent package of {role} is not a folder on disk")


def _read_model(path: Path, model: type[CardData]) -> Any:
    data = load_yaml(read_config_text(path), str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of keys, not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(str(path), error)) from None


def resolve_prompt(
    text: str,
    source: str,
    declared: set[str],
    mapping: RuntimeMapping,
    excluded: dict[str, str],
    notices: list[str] | None = None,
) -> str:
    """AGENT.md with each `{tool:name}` replaced by its concrete tool; a bad reference fails.

    A tool that tool_mapping leaves out takes its runtime default, and one turned off there
    stays named but is not given: each is said in `notices` (a notice, not a failure)."""
    notices = [] if notices is None else notices
    problems: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1).strip()
        binding = mapping.binding(name)
        if not re.fullmatch(TOOL_NAME, name) or name not in declared:
            problems.append(f"{match.group(0)} is not declared in {TOOLS_FILE}")
        elif binding is None:
            why = "is turned off" if name in mapping.disabled_tools else "has no default and is not"
            given = "the prompt names it, the role is not given it"
            notices.append(f"{source}: {match.group(0)} {why} in tool_mapping: {given}")
            return name
        elif name not in mapping.tool_mapping:
            left = f"is not in tool_mapping: its runtime default `{binding.tool}` is used"
            notices.append(f"{source}: {match.group(0)} {left}")
            return binding.tool
        elif binding.tool in excluded:
            problems.append(
                f"{match.group(0)} maps to {binding.tool!r}, which the forbidden action "
                f"{excluded[binding.tool]!r} removes"
            )
        else:
            return binding.tool
        return match.group(0)

    resolved = TOOL_REFERENCE.sub(substitute, text)
    if problems:
        raise ConfigError("; ".join(f"{source}: {problem}" for problem in problems))
    return resolved


def load_agent_package(folder: Path, mapping: RuntimeMapping) -> AgentPackage:
    """Load a role's three files (afresh on every call) and resolve them through the mapping."""
    missing = [
        name for name in (PROMPT_FILE, CARD_FILE, TOOLS_FILE) if not (folder / name).is_file()
    ]
    if missing:
        raise ConfigError(f"{folder}: agent package is missing {', '.join(missing)}")
    card: AgentCard = _read_model(folder / CARD_FILE, AgentCard)
    declared: ToolsFile = _read_model(folder / TOOLS_FILE, ToolsFile)
    try:
        excluded = excluded_tools(mapping, card.forbidden_actions)
    except ConfigError as error:
        raise ConfigError(f"{folder / CARD_FILE}: {error}") from None
    names = [tool.name for tool in declared.tools]
    prompt_path = folder / PROMPT_FILE
    notices: list[str] = []
    prompt = resolve_prompt(
        read_config_text(prompt_path), str(prompt_path), set(names), mapping, excluded, notices
    )
    tools = concrete_tools(mapping, names, card.forbidden_actions)
    descriptions = {tool.name: tool.description for tool in declared.tools if tool.name in tools}
    return AgentPackage(
        name=card.name,
        folder=folder,
        card=card,
        prompt=prompt,
        tools=tools,
        tool_descriptions=descriptions,
        prompt_version=card.prompt_version,
        agent_version=card.agent_version,
        notices=notices,
    )
