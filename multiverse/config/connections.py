"""The mapping's connections outside the home: `channels:` and `mcp_servers:` (a leaf of plain
data: it imports `Settings`' rules by value, not `multiverse.config`, which imports this module).

`channels:` says where the Communicator's messages also go. Besides the console and
`runs/<run_id>/messages.md` (SPEC §10.7), each message is sent to every configured channel: a
`webhook` (an HTTP POST of the message as JSON, optionally signed with an HMAC key) or a
`command` (a program that gets the message on standard input). Keys and secret URLs are read
from the environment only, by the variable's name; the file never holds them.

`mcp_servers:` names Model Context Protocol servers whose tools join the Executor's (issue 26).
A server is a command spoken to over its standard streams (`command`, run in the home or the
run's workspace, with a minimal environment) or a streamable-HTTP endpoint (`url`). Its tools
are offered to the Executor's tool loop under their own names. Secrets are never written here:
a stdio server gets the variables `env` names, an HTTP server the headers `header_envs` names.
Not to be confused with the Planner's "MCP recipes" (guidelines/mcp_list.md, SPEC §10.3).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from multiverse.roles import MessageKind

CHANNEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # also part of the outbox's file names
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _model_keys(names: list[str]) -> list[str]:
    """The variables among `names` that hold a model provider's key (`*API_KEY`)."""
    return [name for name in names if name.upper().endswith("API_KEY")]


MAX_ATTEMPTS_CEILING = 10


class ChannelSettings(BaseModel):
    """What every channel has: a name, which messages it takes, and its bounded retries."""

    # The same rules as multiverse.config.Settings (which cannot be imported here: a cycle).
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str = Field(pattern=CHANNEL_NAME)
    # The message kinds sent to this channel; empty means every kind.
    kinds: list[MessageKind] = Field(default_factory=list)
    # One attempt's time limit: a webhook's connect, send and answer each; a command's run.
    timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    # Attempts per message, the first included; then the delivery is given up (and logged).
    max_attempts: int = Field(default=3, ge=1, le=MAX_ATTEMPTS_CEILING)
    # The wait before the second attempt; it doubles before each later one.
    retry_delay_seconds: float = Field(default=1.0, ge=0, le=60)

    def takes(self, kind: MessageKind) -> bool:
        """Whether messages of this kind go to the channel."""
        return not self.kinds or kind in self.kinds

    def secret_envs(self) -> list[str]:
        """The environment variables whose values are secrets of this channel."""
        return []

    @abstractmethod
    def target(self) -> str:
        """Where the channel sends, in words safe to show (no secret); each type says."""


class WebhookChannel(ChannelSettings):
    """An HTTP POST of each message as JSON; signed when `secret_env` names the key."""

    type: Literal["webhook"]
    # The address, written here; or `url_env`, the variable holding it (a URL that is itself a
    # secret, as a Slack or Discord hook's).
    url: str | None = None
    url_env: str | None = Field(default=None, pattern=ENV_NAME)
    # The variable holding the HMAC-SHA256 key of the X-Multiverse-Signature header.
    secret_env: str | None = Field(default=None, pattern=ENV_NAME)
    # Extra headers with fixed, non-secret values, and headers whose value a variable holds.
    headers: dict[str, str] = Field(default_factory=dict)
    header_envs: dict[str, Annotated[str, Field(pattern=ENV_NAME)]] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            check_http_url(value)
        return value

    @model_validator(mode="after")
    def _one_address(self) -> WebhookChannel:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("a webhook needs exactly one of url or url_env")
        return self

    def secret_envs(self) -> list[str]:
        """The variables holding this webhook's secrets (key, secret URL, header values)."""
        names = [self.secret_env, self.url_env, *self.header_envs.values()]
        return [name for name in names if name is not None]

    def target(self) -> str:
        """The URL without credentials, query or fragment; for url_env, the variable's name."""
        if self.url is None:
            return f"${self.url_env}"
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"

    def resolve_url(self, environ: Mapping[str, str]) -> str | None:
        """The address to post to, None when its variable is not set."""
        if self.url is not None:
            return self.url
        value = environ.get(self.url_env or "", "").strip()
        return value or None


class CommandChannel(ChannelSettings):
    """A program run once per message, the message on its standard input."""

    type: Literal["command"]
    command: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    # What the program reads: the message as one JSON object, or only its markdown text (then
    # MULTIVERSE_MESSAGE_ID, _RUN_ID and _KIND in its environment say the rest).
    input: Literal["json", "text"] = "json"
    # Variables the program gets besides PATH, HOME and LANG (and the MULTIVERSE_* of its
    # message): nothing else of the daemon's environment reaches it, never a key.
    env: list[Annotated[str, Field(pattern=ENV_NAME)]] = Field(default_factory=list)

    @field_validator("env")
    @classmethod
    def _no_keys(cls, names: list[str]) -> list[str]:
        keys = _model_keys(names)
        if keys:
            raise ValueError(f"a command channel's program never gets a model key: "
                             f"remove {', '.join(keys)} from env")  # fmt: skip
        return names

    def target(self) -> str:
        """The program's name (its arguments may hold anything)."""
        return self.command[0]


ChannelConfig = Annotated[WebhookChannel | CommandChannel, Field(discriminator="type")]


def check_http_url(value: str) -> str:
    """`value` if it is an http(s) URL with a host; else ValueError."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value


def _unique_names(
    channels: list[WebhookChannel | CommandChannel],
) -> list[WebhookChannel | CommandChannel]:
    names = [channel.name for channel in channels]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"channel names must be unique: {', '.join(twice)}")
    signing = {name for c in channels if isinstance(c, WebhookChannel) for name in c.secret_envs()}
    passed = {name for c in channels if isinstance(c, CommandChannel) for name in c.env}
    if passed & signing:
        raise ValueError(f"a command channel's program never gets a webhook's secret: remove "
                         f"{', '.join(sorted(passed & signing))} from its env")  # fmt: skip
    return channels


Channels = Annotated[list[ChannelConfig], AfterValidator(_unique_names)]


SERVER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
# How an action_mapping entry names every tool of one server: `mcp:<server>`.
SERVER_PREFIX = "mcp:"
# Header names whose value is a secret: they belong in header_envs, never in the file.
SECRET_HEADERS = ("authorization", "cookie", "proxy-authorization")
SECRET_WORDS = ("key", "token", "secret", "password", "auth")

EnvName = Annotated[str, Field(pattern=ENV_NAME)]


class McpServerConfig(BaseModel):
    """One MCP server: how to reach it, which of its tools are given, and their bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    # A stdio server: the argv that starts it, run in `cwd` (relative paths start there).
    command: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, min_length=1)
    # Where a stdio server runs: the home, or the run's workspace (doctor: the home).
    cwd: Literal["home", "workspace"] = "home"
    # Run a stdio server in the shell's sandbox (bubblewrap): everything read-only but the run's
    # workspace (its working folder; doctor: a temporary one) and a private /tmp.
    sandbox: bool = False
    # The sandbox keeps the network (a server calling an API needs it).
    network: bool = False
    # Variables a stdio server gets besides PATH, HOME, USER, SHELL, TERM, LANG and
    # MULTIVERSE_HOME/_RUN_ID/_WORKSPACE: nothing else of the daemon's environment reaches it.
    env: list[EnvName] = Field(default_factory=list)
    # A streamable-HTTP server: its endpoint (http:// or https://, no credentials in it).
    url: str | None = None
    # Extra HTTP headers with fixed, non-secret values (a secret-looking name is refused).
    headers: dict[str, str] = Field(default_factory=dict)
    # Headers whose value a variable holds (header -> variable); an unset one is not sent.
    header_envs: dict[str, EnvName] = Field(default_factory=dict)
    # Only these of the server's tools are given (default: every tool it lists).
    tools: list[Annotated[str, Field(min_length=1)]] | None = None
    # Ask the user before each call: true for every tool, or a list of tool names.
    requires_approval: bool | list[Annotated[str, Field(min_length=1)]] = False
    # One call's time limit; past it the call is cancelled and a stdio server stopped.
    timeout_seconds: float = Field(default=60.0, gt=0)
    # Starting (or reaching) the server and listing its tools, together.
    connect_timeout_seconds: float = Field(default=30.0, gt=0)
    # A call's result is cut to this many characters for the model.
    max_output_chars: int = Field(default=100_000, gt=0)

    @field_validator("url")
    @classmethod
    def _plain_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("must not hold credentials: name a variable in header_envs instead")
        return value

    @field_validator("headers")
    @classmethod
    def _no_secret_headers(cls, value: dict[str, str]) -> dict[str, str]:
        secret = [name for name in value if name.lower() in SECRET_HEADERS
                  or any(word in name.lower() for word in SECRET_WORDS)]  # fmt: skip
        if secret:
            raise ValueError(f"{', '.join(secret)} may hold a secret: give it in header_envs "
                             "(header -> its variable), never in this file")  # fmt: skip
        return value

    @field_validator("env")
    @classmethod
    def _no_model_keys(cls, names: list[str]) -> list[str]:
        keys = _model_keys(names)
        if keys:
            raise ValueError(f"an MCP server never gets a model key: remove {', '.join(keys)}, "
                             "or give the server its own variable")  # fmt: skip
        return names

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of `command` (stdio) or `url` "
                             "(streamable HTTP)")  # fmt: skip
        if self.command is not None and (self.headers or self.header_envs):
            raise ValueError("`headers` and `header_envs` are for a `url` server")
        if self.url is not None and (self.env or self.cwd != "home" or self.sandbox):
            raise ValueError("`env`, `cwd` and `sandbox` are for a `command` server")
        if self.sandbox and self.cwd == "home" and "cwd" in self.model_fields_set:
            raise ValueError("a sandboxed server works in the run's workspace: remove `cwd`")
        if self.network and not self.sandbox:
            raise ValueError("`network` is for a sandboxed server (sandbox: true)")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """How the server is spoken to."""
        return "stdio" if self.command is not None else "http"

    def target(self) -> str:
        """Where the server is, in words safe to show: the program, or the URL without query."""
        if self.command is not None:
            return self.command[0]
        parts = urlsplit(self.url or "")
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"

    def gives(self, tool: str) -> bool:
        """Whether a tool the server lists is given (the `tools` filter)."""
        return self.tools is None or tool in self.tools

    def asks(self, tool: str) -> bool:
        """Whether each call of this tool needs the user's approval."""
        if isinstance(self.requires_approval, bool):
            return self.requires_approval
        return tool in self.requires_approval


McpServers = dict[Annotated[str, Field(pattern=SERVER_NAME)], McpServerConfig]


def server_reference(name: str) -> str:
    """How action_mapping names every tool of the server `name`."""
    return f"{SERVER_PREFIX}{name}"


def excluding_action(excluded: Mapping[str, str], server: str, tool: str) -> str | None:
    """The forbidden action that removes a server's tool (by its name, or the whole server as
    `mcp:<server>`), from `excluded_tools`' answer; None when none does."""
    return excluded.get(tool) or excluded.get(server_reference(server))
