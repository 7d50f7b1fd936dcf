"""The `mcp_servers:` section of runtime-mapping.yaml: Model Context Protocol servers whose
tools join the Executor's (issue 26).

A server is a command spoken to over its standard streams (`command`, run in the home or the
run's workspace, with a minimal environment) or a streamable-HTTP endpoint (`url`). Its tools
are offered to the Executor's tool loop under their own names. Secrets are never written here:
a stdio server gets the variables `env` names, an HTTP server the headers `header_envs` names.

Not to be confused with the Planner's "MCP recipes" (guidelines/mcp_list.md, SPEC §10.3).

A leaf of plain data: it does not import `multiverse.config`, which imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SERVER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
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
        keys = [name for name in names if name.upper().endswith("API_KEY")]
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
