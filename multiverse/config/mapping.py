"""runtime-mapping.yaml (SPEC §10.2): tiers, budgets, tools; and each tier's effective mode.

The effective mode (§10.4) is decided here without importing litellm: a tier whose model needs a
key that is not set degrades to `builtin`, with one warning per process, never a crash.

A tier served by an external command is described in `multiverse.config.serving`.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from multiverse.config.connections import SERVER_PREFIX, Channels, McpServers
from multiverse.config.serving import (
    Preset,
    ProcessSpec,
    RemoteConfig,
    default_concurrency,
    default_parallel_runs,
    is_remote,
    process_argv,
)
from multiverse.errors import ConfigError
from multiverse.home import Home
from multiverse.models import PlanLevel

BUILTIN = "builtin"
DEBUG_ENV = "MULTIVERSE_DEBUG"
DEFAULT_TOOLS = (
    "list_directory", "read_file", "read_many_files", "write_file", "glob", "search_file_content",
    "replace", "create_directory", "web_search", "web_fetch", "data_visualization",
)  # fmt: skip
DEFAULT_ACTION_MAPPING: dict[str, list[str]] = {
    "modify_files": ["write_file", "replace", "create_directory"],
    "run_commands": ["run_shell_command"],
    "access_network": ["web_search", "web_fetch"],
}


class Tier(StrEnum):
    """A role's capability tier; the mapping says which model serves it."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"

    def next_up(self) -> Tier | None:
        """The tier a call escalates to (LOW→MEDIUM→HIGH), None above HIGH."""
        return {Tier.LOW: Tier.MEDIUM, Tier.MEDIUM: Tier.HIGH}.get(self)


class Settings(BaseModel):
    """Base of the mapping's sections: strict, immutable, trimmed strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


Switch = Literal["auto", "on", "off"]
PLAN_LEVELS: tuple[PlanLevel, ...] = ("stages", "tasks")
ExecutorMode = Literal["auto", "tools", "single_shot"]
SAMPLING_KEYS = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "seed")


class TierConfig(Settings):
    """The model serving one tier, its per-call limits, sampling and capabilities."""

    model: str = Field(default=BUILTIN, min_length=1)
    # The ceiling of one answer; each call type asks for what it needs, at most this.
    max_tokens: int = Field(default=4096, gt=0)
    # The whole time one call may take, retries included.
    timeout_seconds: float = Field(default=120.0, gt=0)
    # Calls to this tier's model in flight at once, across every run (the smallest of the
    # tiers that share a model and server); a local server serving one request: 1. Unset: 4 for
    # a local server, 8 for a remote provider (multiverse.config.serving).
    concurrency: int | None = Field(default=None, ge=1)
    # The provider's rate limits, honoured before each call by every run together (the smallest
    # of the tiers that share a model and server); unset: no limit.
    requests_per_minute: int | None = Field(default=None, gt=0)
    tokens_per_minute: int | None = Field(default=None, gt=0)
    api_base: str | None = None
    api_key_env: str | None = Field(default=None, min_length=1)
    # Sampling; a setting left out is not sent (the provider's default applies).
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    seed: int | None = None
    # Server-specific request fields (e.g. llama.cpp's repeat_penalty), sent as they are.
    extra_body: dict[str, Any] = Field(default_factory=dict)
    # JSON-schema constrained answers: auto asks litellm (self-hosted servers: on).
    structured_output: Switch = "auto"
    # How the Executor works: a native tool loop, or one written answer per task.
    executor_mode: ExecutorMode = "auto"
    # Tokens the model reads and writes in one call; auto asks litellm, else 8192.
    context_window: int | None = Field(default=None, gt=0)
    # sdk: a model through the gateway; process: an external command (SPEC §11).
    adapter_type: Literal["sdk", "process"] = "sdk"
    command: list[str] | None = Field(default=None, min_length=1)
    preset: Preset | None = None
    args: list[str] = Field(default_factory=list)
    no_output_timeout_seconds: float | None = Field(default=None, gt=0)
    pass_env: list[str] = Field(default_factory=list)
    # The tier's Executor steps are done by `multiverse worker`s of this broker and queue.
    remote: RemoteConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_model_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            data = {"model": data}
        if not isinstance(data, dict):
            return data
        if isinstance(data.get("structured_output"), bool):
            # YAML reads `on`/`off`/`true`/`false` as booleans.
            data = {**data, "structured_output": "on" if data["structured_output"] else "off"}
        model = data.get("model")
        if isinstance(model, str) and model.strip().startswith("process:"):
            # `model: process:/path/agent.sh` is a process tier running that command.
            command = model.strip().removeprefix("process:").strip()
            data = {**data, "adapter_type": "process", "command": [command]}
            data.pop("model")
        elif data.get("preset") is not None or data.get("command") is not None:
            data = {"adapter_type": "process", **data}
        return data

    @model_validator(mode="after")
    def _process_needs_a_command(self) -> TierConfig:
        if self.adapter_type == "process" and not self.command and self.preset is None:
            raise ValueError("adapter_type: process needs a `command` (an argv list) or a `preset`")
        if self.adapter_type == "sdk" and (self.command or self.preset or self.args):
            raise ValueError("`command`, `preset` and `args` are for adapter_type: process")
        if self.command is not None and not all(part.strip() for part in self.command):
            raise ValueError("`command` holds an empty argument")
        return self

    @property
    def calls_a_model(self) -> bool:
        """Whether the tier is served by a model or a command (not the builtin engine)."""
        return self.adapter_type == "process" or self.model.lower() != BUILTIN

    @property
    def hosted(self) -> bool:
        """Whether a remote provider serves the tier (multiverse.config.serving)."""
        sdk_model = self.adapter_type == "sdk" and self.model.lower() != BUILTIN
        return sdk_model and is_remote(self.model, self.api_base)

    def calls_at_once(self) -> int:
        """Calls in flight at once to this tier's model: `concurrency`, else its default."""
        return self.concurrency or default_concurrency(self.hosted)

    def process_spec(self) -> ProcessSpec | None:
        """How to start this tier's command, or None for a model tier."""
        if self.adapter_type != "process":
            return None
        return ProcessSpec(
            argv=process_argv(self.command, self.preset, self.args),
            preset=self.preset,
            timeout_seconds=self.timeout_seconds,
            no_output_timeout_seconds=self.no_output_timeout_seconds,
            pass_env=self.pass_env,
        )

    def sampling(self) -> dict[str, float | int]:
        """The sampling settings given in the mapping, by their request names."""
        values = {key: getattr(self, key) for key in SAMPLING_KEYS}
        return {key: value for key, value in values.items() if value is not None}

    def call_fields(self) -> dict[str, Any]:
        """What every LlmCall made for this tier carries (max_tokens is the caller's)."""
        spec = self.process_spec()
        return {
            "model": spec.name if spec is not None else self.model,
            "api_base": self.api_base,
            "api_key_env": self.api_key_env,
            "timeout_seconds": self.timeout_seconds,
            "tier_max_tokens": self.max_tokens,
            "sampling": self.sampling(),
            "extra_body": dict(self.extra_body),
            "structured_output": self.structured_output,
            "process": self.process_spec(),
        }

    def answer_tokens(self, needed: int) -> int:
        """max_tokens of a call whose answer needs about `needed` tokens: never above the tier's."""
        return max(1, min(self.max_tokens, needed))


class Budget(Settings):
    """Per-run limits over all calls; null means no limit."""

    max_tokens_per_run: int | None = Field(default=2_000_000, gt=0)
    max_cost_per_run_usd: float | None = Field(default=10.0, gt=0)


# Programs that run any code or any other program they are given: on a shell allow-list that
# asks no one, they would turn it into "anything, unasked" (issue 25).
COMMAND_RUNNERS = frozenset({
    "python", "node", "nodejs", "deno", "bun", "sh", "bash", "zsh", "dash", "ksh", "fish",
    "csh", "tcsh", "perl", "ruby", "php", "lua", "luajit", "r", "rscript", "julia", "tclsh",
    "expect", "env", "xargs", "find", "awk", "gawk", "mawk", "nawk", "nohup", "timeout", "nice",
    "ionice", "setsid", "sudo", "su", "doas", "busybox", "make", "npx", "npm", "pip", "uv",
    "java", "pwsh", "powershell", "watch", "strace", "gdb", "git", "ssh", "script", "chroot",
})


def command_runner(program: str) -> bool:
    """Whether a program runs code or commands it is given (`python3.11`, `/usr/bin/env`)."""
    name = program.rsplit("/", 1)[-1].lower()
    return name in COMMAND_RUNNERS or name.rstrip("0123456789.-") in COMMAND_RUNNERS


class ToolBinding(Settings):
    """The concrete tool an abstract tool maps to; a plain string in YAML means `tool`."""

    tool: str = Field(min_length=1)
    requires_approval: bool = False
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_tool_name(cls, data: Any) -> Any:
        return {"tool": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _no_runner_unasked(self) -> ToolBinding:
        allow = self.options.get("allow", [])
        programs = [allow] if isinstance(allow, str) else allow
        if self.tool == "run_shell_command" and not self.requires_approval and isinstance(
                programs, list | tuple):  # fmt: skip
            runners = [p for p in programs if isinstance(p, str) and command_runner(p)]
            if runners:
                raise ValueError(
                    f"the shell's allow-list holds {', '.join(runners)}, which run any code or "
                    "command they are given: remove them, or set requires_approval: true so "
                    "every call is asked"
                )
        return self


class DaemonConfig(Settings):
    """How the daemon serves the home."""

    # Runs advanced at once; unset: derived from the tiers (multiverse.config.serving), which the
    # loaded mapping fills in.
    max_parallel_runs: int | None = Field(default=None, ge=1)
    inbox_max_bytes: int = Field(default=1024 * 1024, gt=0)
    debounce_ms: int = Field(default=75, ge=0)
    # An inbox file is taken once closed by its writer and unchanged (size, times) this long.
    inbox_settle_ms: int = Field(default=1000, ge=0)
    # An action asked for approval and not answered this long is denied (SPEC §11).
    approval_timeout_seconds: float = Field(default=600.0, gt=0)
    # After the Planner writes a plan of these levels, the run holds until `multiverse resume`:
    # `stages` (a phase's stage plan), `tasks` (a stage's task plan), or a list of both.
    pause_before: frozenset[PlanLevel] = frozenset()
    # The daemon archives final runs by itself (`orchestrator.archiving`): those beyond the
    # newest `live_final_runs`, and those created more than `archive_after_days` ago (0: off).
    live_final_runs: int = Field(default=100, ge=0)
    archive_after_days: int = Field(default=0, ge=0)

    @field_validator("pause_before", mode="before")
    @classmethod
    def _one_or_several(cls, value: Any) -> Any:
        items = [] if value is None else [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple | set | frozenset) or not all(
            isinstance(item, str) and item.strip().lower() in PLAN_LEVELS for item in items
        ):
            raise ValueError(f"must be stages, tasks or a list of them, not {value!r}")
        return frozenset(item.strip().lower() for item in items)


class RuntimeMapping(Settings):
    """The whole runtime-mapping.yaml; every missing entry takes its documented default."""

    tier_mapping: dict[Tier, TierConfig] = Field(
        default_factory=lambda: {tier: TierConfig() for tier in Tier}
    )
    budget: Budget = Field(default_factory=Budget)
    tool_mapping: dict[str, ToolBinding] = Field(
        default_factory=lambda: {name: ToolBinding(tool=name) for name in DEFAULT_TOOLS}
    )
    action_mapping: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_ACTION_MAPPING.items()}
    )
    daemon: DaemonConfig = Field(default_factory=DaemonConfig, validate_default=True)
    # Where messages also go besides the console and messages.md (multiverse.config.connections).
    channels: Channels = Field(default_factory=list)
    # Model Context Protocol servers whose tools join the Executor's, under their own names
    # (multiverse.config.connections); action_mapping removes one by its name, or a whole
    # server as `mcp:<server>`.
    mcp_servers: McpServers = Field(default_factory=dict)
    # Abstract tools turned off: written in tool_mapping with nothing after the colon
    # (`web_search:`); a tool merely left out of tool_mapping keeps its runtime default.
    disabled_tools: frozenset[str] = frozenset()

    def binding(self, name: str) -> ToolBinding | None:
        """The concrete tool of an abstract one: as mapped; left out, the runtime default (a
        default tool is itself; any other, run_shell_command among them, is given only when
        mapped); None when turned off or without a default."""
        if name in self.tool_mapping:
            return self.tool_mapping[name]
        default = name in DEFAULT_TOOLS and name not in self.disabled_tools
        return ToolBinding(tool=name) if default else None

    @model_validator(mode="before")
    @classmethod
    def _tolerate(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # An empty section (`budget:`) is a missing one.
        data = {key: value for key, value in data.items() if value is not None}
        tiers = data.get("tier_mapping")
        if isinstance(tiers, dict):
            data["tier_mapping"] = {
                k.upper() if isinstance(k, str) else k: v for k, v in tiers.items()
            }
        tools = data.get("tool_mapping")
        if isinstance(tools, dict):
            # `web_search:` left empty disables the tool; a mapping without `tool` keeps the name.
            off = [name for name, value in tools.items() if value is None]
            data["disabled_tools"] = [*data.get("disabled_tools", []), *off]
            data["tool_mapping"] = {
                name: {"tool": name, **value} if isinstance(value, dict) else value
                for name, value in tools.items()
                if value is not None
            }
        actions = data.get("action_mapping")
        if isinstance(actions, dict):
            # Missing actions keep their default exclusions: forgetting one never widens a role.
            given = {k: [v] if isinstance(v, str) else v or [] for k, v in actions.items()}
            data["action_mapping"] = {**DEFAULT_ACTION_MAPPING, **given}
        return data

    @model_validator(mode="after")
    def _known_servers(self) -> RuntimeMapping:
        # A misspelt server in action_mapping would remove nothing: a role widened silently.
        named = {tool for tools in self.action_mapping.values() for tool in tools}
        unknown = sorted(tool for tool in named if tool.startswith(SERVER_PREFIX)
                         and tool.removeprefix(SERVER_PREFIX) not in self.mcp_servers)  # fmt: skip
        if unknown:
            known = ", ".join(sorted(self.mcp_servers)) or "none"
            raise ValueError(f"action_mapping names {', '.join(unknown)}, which is not in "
                             f"mcp_servers (configured: {known})")  # fmt: skip
        return self

    @field_validator("tier_mapping")
    @classmethod
    def _every_tier(cls, value: dict[Tier, TierConfig]) -> dict[Tier, TierConfig]:
        return {tier: value.get(tier, TierConfig()) for tier in Tier}

    @field_validator("daemon")
    @classmethod
    def _parallel_runs(cls, value: DaemonConfig, info: ValidationInfo) -> DaemonConfig:
        """An unset `max_parallel_runs` is derived from the tiers; a set one always wins."""
        tiers = info.data.get("tier_mapping")
        if value.max_parallel_runs is not None or tiers is None:
            return value
        served = [(t.hosted, t.calls_at_once()) for t in tiers.values() if t.calls_a_model]
        return value.model_copy(update={"max_parallel_runs": default_parallel_runs(served)})


# libyaml's parser where PyYAML was built with it (its wheels are): the same safe documents, read
# about nine times faster than in pure Python; every CLI command and daemon start reads the mapping
# and the agent packages.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """Parse YAML text as `yaml.safe_load` does (plain data only); raises yaml.YAMLError."""
    return yaml.load(text, Loader=_SAFE_LOADER)


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML text; a syntax error becomes a ConfigError naming `source` and the line."""
    try:
        return parse_yaml(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = error.problem or error.context or "syntax error"
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: invalid YAML: {error}") from None


def describe_validation_error(source: str, error: ValidationError) -> str:
    """One line per problem: `source: key.path: what is wrong`."""
    lines = []
    for detail in error.errors():
        path = ".".join(str(part) for part in detail["loc"] if part != "[key]") or "(top level)"
        message = detail["msg"]
        for raw, plain in (
            ("Input should be ", "must be "),
            ("Value error, ", ""),
            ("Extra inputs are not permitted", "unknown key"),
            ("Field required", "is required"),
        ):
            message = message.replace(raw, plain)
        lines.append(f"{source}: {path}: {message}")
    return "; ".join(lines)


def read_config_text(path: Path) -> str:
    """A configuration file's UTF-8 text; unreadable → ConfigError naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: is not UTF-8 text") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read ({error.strerror or error})") from None


def parse_runtime_mapping(text: str, source: str) -> RuntimeMapping:
    """The mapping from YAML text; empty text gives the defaults."""
    data = load_yaml(text, source)
    if data is None:
        return RuntimeMapping()
    if not isinstance(data, dict):
        sections = ", ".join(RuntimeMapping.model_fields)
        raise ConfigError(f"{source}: must be a mapping with the sections {sections}")
    try:
        return RuntimeMapping.model_validate(data)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(source, error)) from None


def load_runtime_mapping(home_root: Path) -> RuntimeMapping:
    """The home's runtime-mapping.yaml; a missing file gives the defaults (all builtin)."""
    path = Home(home_root).mapping_file
    if not path.exists():
        return RuntimeMapping()
    return parse_runtime_mapping(read_config_text(path), str(path))


def excluded_tools(mapping: RuntimeMapping, forbidden_actions: Iterable[str]) -> dict[str, str]:
    """Concrete tool → the forbidden action that removes it; an unknown action is a ConfigError."""
    excluded: dict[str, str] = {}
    for action in forbidden_actions:
        if action not in mapping.action_mapping:
            known = ", ".join(sorted(mapping.action_mapping))
            raise ConfigError(
                f"forbidden action {action!r} has no entry in runtime-mapping.yaml action_mapping"
                f" (known: {known})"
            )
        for tool in mapping.action_mapping[action]:
            excluded.setdefault(tool, action)
    return excluded


def concrete_tools(
    mapping: RuntimeMapping, abstract: list[str], forbidden_actions: list[str]
) -> dict[str, ToolBinding]:
    """Abstract tool → its binding, for the mapped tools no forbidden action removes."""
    excluded = excluded_tools(mapping, forbidden_actions)
    bindings = {name: mapping.binding(name) for name in abstract}
    return {
        name: binding
        for name, binding in bindings.items()
        if binding is not None and binding.tool not in excluded
    }
