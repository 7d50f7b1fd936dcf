"""The options of the web tools in runtime-mapping.yaml, validated (SPEC §10.2, §12).

`tool_mapping.web_search.options` chooses the search provider:

    web_search: {tool: web_search, options: {provider: searxng, base_url: "http://127.0.0.1:8888"}}
    web_search: {tool: web_search, options: {provider: tavily, api_key_env: TAVILY_API_KEY}}

`tool_mapping.web_fetch.options.allow_hosts` lists the hosts (`name` or `name:port`) web_fetch may
reach although they resolve to a loopback, private or link-local address. A wrong option is a
ConfigError naming its key.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from executor.tools.netguard import parse_rule
from multiverse.config import ToolBinding, describe_validation_error
from multiverse.errors import ConfigError

SOURCE = "runtime-mapping.yaml tool_mapping"
WEB_SEARCH = "web_search"
WEB_FETCH = "web_fetch"
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _base_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http(s) URL with a host")
    return value.strip().rstrip("/")


class Options(BaseModel):
    """Base of the options: strict, immutable, trimmed strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class ProviderOptions(Options):
    """What every provider shares: its time limit and how much a web_search tool task reads."""

    timeout_seconds: float = Field(default=15.0, gt=0, le=120)
    max_results: int = Field(default=5, ge=1, le=20)  # hits asked for per query
    fetch_top: int = Field(default=3, ge=1, le=10)  # pages fetched and cited per tool task


class SearxngOptions(ProviderOptions):
    """A self-hosted SearXNG instance (keyless; its JSON format must be enabled)."""

    provider: Literal["searxng"]
    base_url: str
    language: str | None = None
    categories: str | None = None

    _check_url = field_validator("base_url")(_base_url)


class TavilyOptions(ProviderOptions):
    """Tavily's search API; the key is read from the environment variable named here."""

    provider: Literal["tavily"]
    api_key_env: str = Field(default="TAVILY_API_KEY", pattern=_ENV_NAME)
    base_url: str | None = None  # the API's own endpoint unless given (tests, a gateway)
    search_depth: Literal["basic", "advanced"] = "basic"

    _check_url = field_validator("base_url")(_base_url)


SearchOptions = SearxngOptions | TavilyOptions
PROVIDERS: dict[str, type[SearchOptions]] = {"searxng": SearxngOptions, "tavily": TavilyOptions}


class FetchOptions(Options):
    """web_fetch's exemptions from the network guard."""

    allow_hosts: tuple[str, ...] = ()

    @field_validator("allow_hosts", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_rule(entry)
        return tuple(entry.strip() for entry in value)


def search_options(binding: ToolBinding | None) -> SearchOptions | None:
    """The provider the web_search binding configures; None when it names none."""
    if binding is None or binding.tool != WEB_SEARCH or not binding.options:
        return None
    where = f"{SOURCE}.{WEB_SEARCH}.options"
    name = binding.options.get("provider")
    known = ", ".join(PROVIDERS)
    if name is None:
        raise ConfigError(f"{where}: provider: is required (one of {known})")
    if not isinstance(name, str) or name not in PROVIDERS:
        raise ConfigError(f"{where}: provider: {name!r} is not a known provider (one of {known})")
    try:
        return PROVIDERS[name].model_validate(binding.options)
    except ValidationError as error:
        raise ConfigError(describe_validation_error(where, error)) from None


def fetch_options(binding: ToolBinding | None) -> FetchOptions:
    """The web_fetch binding's options (none when it is not mapped)."""
    if binding is None or binding.tool != WEB_FETCH:
        return FetchOptions()
    try:
        return FetchOptions.model_validate(binding.options)
    except ValidationError as error:
        raise ConfigError(
            describe_validation_error(f"{SOURCE}.{WEB_FETCH}.options", error)
        ) from None
