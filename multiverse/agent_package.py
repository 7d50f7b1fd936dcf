"""Agent packages (SPEC §10.1): AGENT.md, agentcard.yaml and tools.yaml of each role.

Spawning a role loads the three files afresh, resolves `{tool:name}` through tools.yaml and the
runtime mapping, and removes the tools its forbidden actions exclude. The files are only read.

Also here: what the runtime makes of a card's handoff and escalation (seed 000 ⑤). A handoff's
`on:` is one condition of a fixed vocabulary (`HandoffOn`); a card without `on:` has it read
from its `when:` text, the keyword in parentheses first (`(post_tool_required)`), else the one
condition named there as a word. Of the routes the runtime knows (`KNOWN_ROUTES`), only the
Executor's POST tool tasks are the card's to give or refuse; the others are SPEC's flow
(plans run, proposals and failures are reported, MODIFY is re-planned, §6, §9) and stay on
whatever the card says: a card that lacks one, or names a route the runtime does not know, is
said in the package's notices. An escalation retries a call once on another tier
(`tiers_to_try`), when the card asks for it and another model serves that tier.
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from collections.abc import Mapping
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from multiverse.config import (
    RuntimeMapping,
    Tier,
    TierConfig,
    ToolBinding,
    concrete_tools,
    describe_validation_error,
    excluded_tools,
    load_yaml,
    read_config_text,
)
from multiverse.errors import ConfigError

log = structlog.get_logger(__name__)

ROLES = ("planner", "executor", "communicator")
PROMPT_FILE = "AGENT.md"
CARD_FILE = "agentcard.yaml"
TOOLS_FILE = "tools.yaml"
NEXT_TIER = "next_tier"
# The one condition an escalation knows: the answer stayed invalid after the gateway's repairs.
ESCALATE_ON = "validation_failed_after_repairs"
TOOL_NAME = r"[a-z][a-z0-9_]*"
TOOL_REFERENCE = re.compile(r"\{tool:([^{}]*)\}")


class CardData(BaseModel):
    """Base of the package's data: strict, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class HandoffOn(StrEnum):
    """The conditions a handoff can name: what the runtime checks after a role's step."""

    POST_TOOL_REQUIRED = "post_tool_required"  # the Executor's result asks for POST tools
    FAILED = "failed"  # a role's step failed: the failure is reported
    MODIFY = "modify"  # the user answered MODIFY: the request is planned again
    PLAN_RECORDED = "plan_recorded"  # a plan is recorded: its tasks are handed over
    PROPOSAL_READY = "proposal_ready"  # a proposal waits for the user's decision


class Route(NamedTuple):
    """One handoff the runtime understands: `role` hands the work `to` another `on` a condition."""

    role: str
    on: HandoffOn
    to: str


# Routes SPEC makes the flow of every run (§6, §7, §9): a card cannot turn them off.
MANDATORY_ROUTES = frozenset({
    Route("planner", HandoffOn.PLAN_RECORDED, "executor"),
    Route("planner", HandoffOn.PROPOSAL_READY, "communicator"),
    Route("planner", HandoffOn.FAILED, "communicator"),
    Route("executor", HandoffOn.FAILED, "communicator"),
    Route("communicator", HandoffOn.MODIFY, "planner"),
})  # fmt: skip
POST_TOOLS = Route("executor", HandoffOn.POST_TOOL_REQUIRED, "planner")
KNOWN_ROUTES = MANDATORY_ROUTES | {POST_TOOLS}
_PARENTHESISED = re.compile(r"\(\s*([a-z_]+)\s*\)")


def condition_in(text: str) -> HandoffOn | None:
    """The condition an old card's `when:` text names: `(keyword)` first, else the one
    condition written as a word (case-insensitive); None when there is none or several."""
    known = {item.value: item for item in HandoffOn}
    for word in _PARENTHESISED.findall(text.lower()):
        if word in known:
            return known[word]
    named = {known[word] for word in re.findall(r"[a-z_]+", text.lower()) if word in known}
    return named.pop() if len(named) == 1 else None


class Handoff(CardData):
    """When the work passes to another role: `on` for the runtime, `when` for people."""

    to: str = Field(min_length=1)
    when: str = Field(min_length=1)
    on: HandoffOn | None = None

    @model_validator(mode="before")
    @classmethod
    def _condition(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # YAML 1.1 reads a bare `on:` key as the boolean true.
        data = {("on" if key is True else key): value for key, value in data.items()}
        if isinstance(data.get("on"), str):
            data["on"] = data["on"].strip().lower()  # `FAILED` as the signal writes it
        if data.get("on") is None and isinstance(data.get("when"), str):
            # A card written before `on:` existed says its condition in `when:` only.
            data["on"] = condition_in(data["when"])
        return data


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

    def escalation_tier(self, start: Tier | None = None) -> Tier | None:
        """The tier a call that started on `start` (the card's tier) is retried on after its
        answer stayed invalid through the repairs, or None when the card does not escalate."""
        escalation, start = self.escalation, start or self.tier
        if escalation is None or escalation.on != ESCALATE_ON:
            return None
        if escalation.to == NEXT_TIER:
            return start.next_up()
        target = Tier(escalation.to)
        return None if target is start else target

    def routes(self, role: str | None = None) -> frozenset[Route]:
        """The routes of this card's handoffs that the runtime understands, as the card of
        `role` (default: the card's name)."""
        role = role or self.name
        made = {Route(role, item.on, item.to) for item in self.handoff if item.on is not None}
        return frozenset(made & KNOWN_ROUTES)

    def notices(self, source: str) -> list[str]:
        """What the card's handoff and escalation leave to the runtime: a route it lacks that
        SPEC makes mandatory (taken anyway), a handoff or an escalation condition the runtime
        does not understand (not consulted)."""
        said = []
        if self.escalation is not None and self.escalation.on != ESCALATE_ON:
            said.append(
                f"{source}: escalation on {self.escalation.on!r} is no condition the runtime "
                f"knows ({ESCALATE_ON}): the role never escalates"
            )
        for item in self.handoff:
            route = Route(self.name, item.on, item.to) if item.on is not None else None
            if route is None or route not in KNOWN_ROUTES:
                why = "names no condition it knows" if route is None else "is no route it takes"
                said.append(
                    f"{source}: the handoff to {item.to} when {item.when!r} {why} "
                    f"(on: one of {', '.join(HandoffOn)}): the runtime does not consult it"
                )
        for route in sorted(MANDATORY_ROUTES - self.routes()):
            if route.role == self.name:
                said.append(
                    f"{source}: no handoff to {route.to} on {route.on.value}: SPEC makes it "
                    "the flow of every run, so the runtime hands the work over regardless"
                )
        return said


def tiers_to_try(card: AgentCard, start: Tier, served: Mapping[Tier, TierConfig]) -> list[Tier]:
    """The tier a call starts on, then the card's escalation tier when a model serves it that
    is not the start's own model on the same server (which would only repeat the failure)."""
    up = card.escalation_tier(start)
    if up is None or up not in served or start not in served:
        return [start]
    if same_server(served[start], served[up]):
        return [start]
    return [start, up]


def same_server(first: TierConfig, second: TierConfig) -> bool:
    """Whether two tiers are the same model on the same server."""
    return (first.model, first.api_base) == (second.model, second.api_base)


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

    def on_tier(self, tier: Tier) -> AgentPackage:
        """The same package served on another tier (an escalation): only its tier changes."""
        card = self.card.model_copy(update={"tier": tier})
        return self.model_copy(update={"card": card})


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


def load_card(folder: Path) -> AgentCard:
    """A package's agentcard.yaml alone, read afresh (what the Orchestrator consults)."""
    card: AgentCard = _read_model(folder / CARD_FILE, AgentCard)
    return card


def handoff_routes(folders: Mapping[str, Path] | None = None) -> frozenset[Route]:
    """The routes the roles' cards give now, each card read afresh (`folders`: a role's
    package where it is not the shipped one), with the mandatory ones; a card that cannot be
    read gives only those (logged: spawning the role fails and says why)."""
    routes = set(MANDATORY_ROUTES)
    for role in ROLES:
        folder = (folders or {}).get(role) or role_package_dir(role)
        try:
            routes |= load_card(folder).routes(role)
        except ConfigError as error:
            log.warning("agent_card_unreadable", role=role, error=str(error))
    return frozenset(routes)


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
    notices += card.notices(str(folder / CARD_FILE))
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
