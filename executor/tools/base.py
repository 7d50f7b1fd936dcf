"""What every Executor tool shares: its result value, its context and its interface (SPEC §12).

Also here: path confinement (SPEC §12), and the fence around text shown to a model as data.
"""

from __future__ import annotations

import fnmatch
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from multiverse.home import Home
from multiverse.models import RUN_ID

_RUN_ID = re.compile(RUN_ID)


class ToolResult(BaseModel):
    """The outcome of one tool call; a failure is a value handed back to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    output: str = ""
    error: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def success(cls, output: str, **data: Any) -> ToolResult:
        """A successful result with its text for the model and structured data."""
        return cls(ok=True, output=output, data=data)

    @classmethod
    def failure(cls, error: str, **data: Any) -> ToolResult:
        """A failed result; `error` is shown to the model."""
        return cls(ok=False, error=error, data=data)


class ToolRefused(Exception):
    """A call that confinement or policy forbids; the registry turns it into a failed result."""


class SearchHit(BaseModel):
    """One web search result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    url: str
    snippet: str = ""
    published: str | None = None  # the publication date the provider gives, as it gives it


class SearchError(Exception):
    """A search the provider could not answer (unreachable, refused, a bad answer)."""


class WebSearchProvider(Protocol):
    """A pluggable web search backend (configured in the mapping)."""

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The best `limit` hits for `query`, best first; SearchError when it cannot answer."""
        ...


# Asked before an action that needs a person's yes: (tool name, arguments) → allowed.
Approver = Callable[[str, dict[str, Any]], bool]


class ToolLimits(BaseModel):
    """Caps and timeouts that keep every tool bounded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_max_bytes: int = Field(default=256 * 1024, gt=0)
    read_many_max_files: int = Field(default=50, gt=0)
    read_many_max_bytes: int = Field(default=1024 * 1024, gt=0)
    list_max_entries: int = Field(default=1000, gt=0)
    glob_max_results: int = Field(default=500, gt=0)
    walk_max_entries: int = Field(default=50_000, gt=0)
    search_max_matches: int = Field(default=200, gt=0)
    search_max_file_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    search_max_line_chars: int = Field(default=300, gt=0)
    shell_timeout_seconds: float = Field(default=120.0, gt=0)
    shell_max_output_bytes: int = Field(default=64 * 1024, gt=0)
    web_timeout_seconds: float = Field(default=20.0, gt=0)
    web_max_bytes: int = Field(default=2 * 1024 * 1024, gt=0)
    web_max_output_chars: int = Field(default=100_000, gt=0)
    web_search_max_hits: int = Field(default=10, gt=0)


@dataclass(frozen=True)
class ToolContext:
    """Where a tool acts: one home, one run, the run's policy and limits."""

    home: Path
    run_id: str
    shell_allow: tuple[str, ...] = ()
    shell_gated: bool = False  # requires_approval: each call was asked before it runs
    shell_network: bool = False  # the sandbox keeps the network (options.network)
    limits: ToolLimits = field(default_factory=ToolLimits)
    approver: Approver | None = None
    web_search_provider: WebSearchProvider | None = None
    # Hosts web_fetch may reach although they resolve to a loopback/private address.
    web_allow_hosts: tuple[str, ...] = ()
    # Home-relative files the confirmed request spec leaves out: never read, listed or found.
    left_out: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # A malformed run_id (say "../x") would move the writable roots: that is our bug.
        if not _RUN_ID.fullmatch(self.run_id):
            raise ValueError(f"{self.run_id!r} is not a valid run_id")
        object.__setattr__(self, "home", Path(self.home).resolve())

    @property
    def workspace(self) -> Path:
        """The run's workspace: writable, and the shell's working directory."""
        return Home(self.home).run(self.run_id).workspace

    @property
    def outputs(self) -> Path:
        """The run's deliverables folder: writable."""
        return Home(self.home).run(self.run_id).outputs

    def relative(self, path: Path) -> str:
        """`path` as the tables write it: relative to the home, forward slashes."""
        if path == self.home:
            return "."
        return path.relative_to(self.home).as_posix()


class Tool(Protocol):
    """A concrete tool the Executor may be given."""

    @property
    def name(self) -> str:
        """The tool's name as the model calls it."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        ...

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments."""
        ...

    def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Do the call; may raise ToolRefused or pydantic.ValidationError."""
        ...


class Arguments(BaseModel):
    """Base of a tool's arguments: unknown fields are an error the model sees."""

    model_config = ConfigDict(extra="forbid", frozen=True)


A = TypeVar("A", bound=Arguments)


class ModelTool(ABC, Generic[A]):
    """A tool whose arguments are a pydantic model, which also gives its JSON schema."""

    name: ClassVar[str]
    description: ClassVar[str]
    arguments_model: ClassVar[type[Arguments]]

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments, without pydantic's titles."""
        schema: dict[str, Any] = _strip_titles(self.arguments_model.model_json_schema())
        return schema

    def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        """Validate the arguments, then execute."""
        parsed = cast(A, self.arguments_model.model_validate(arguments))
        return self.execute(context, parsed)

    @abstractmethod
    def execute(self, context: ToolContext, args: A) -> ToolResult:
        """Do the call with validated arguments."""


def fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`."""
    longest, run = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            key: _strip_titles(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema


# Folders a tool never enters: the daemon's private state and version-control internals
# (a remote URL there may carry a token).
PRIVATE_DIRS = frozenset({".multiverse", ".git"})
# Names that usually hold secrets; a tool neither reads nor writes them.
KEY_FILE_PATTERNS = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
)


def is_private_name(name: str) -> bool:
    """Whether one path component names private state or a key file."""
    return name in PRIVATE_DIRS or any(fnmatch.fnmatchcase(name, p) for p in KEY_FILE_PATTERNS)


def split_relative(raw: str) -> list[str]:
    """The components of a home-relative path; refuses what could leave the home."""
    if "\x00" in raw:
        raise ToolRefused("a path with a NUL byte is refused")
    if raw.startswith("/"):
        raise ToolRefused(f"absolute path {raw!r} is refused: give a path relative to the home")
    if raw.startswith("~"):
        raise ToolRefused(f"path {raw!r} is refused: '~' is not expanded; paths are home-relative")
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ToolRefused(f"path {raw!r} is refused: '..' may not appear in a path")
    for part in parts:
        if is_private_name(part):
            raise ToolRefused(f"path {raw!r} is refused: {part!r} is private")
    return parts


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def readable_in_home(home: Path, raw: str) -> Path:
    """The real path that may be read for `raw` in a resolved `home`; raises ToolRefused otherwise.

    The read tools' rule, usable where there is no run (a SIMPLE_TASK reads, never writes).
    """
    logical = home.joinpath(*split_relative(raw))
    # realpath resolves every existing component, so a symlink anywhere on the way is followed
    # to its real target before the target is judged.
    real = Path(os.path.realpath(logical))
    if not _inside(real, home):
        raise ToolRefused(f"path {raw!r} is refused: it leads outside the home")
    for part in real.relative_to(home).parts:
        if is_private_name(part):
            raise ToolRefused(f"path {raw!r} is refused: it leads to private {part!r}")
    return real


def resolve_readable(context: ToolContext, raw: str) -> Path:
    """The real path a tool may read for `raw`; raises ToolRefused otherwise (a file the
    confirmed request leaves out included)."""
    real = readable_in_home(context.home, raw)
    if context.left_out and context.relative(real) in context.left_out:
        raise ToolRefused(f"path {raw!r} is refused: the confirmed request leaves it out")
    return real


def writable_roots(context: ToolContext) -> tuple[Path, Path]:
    """The only folders a tool may write into: the run's workspace and outputs/<run_id>/."""
    return (
        Path(os.path.realpath(context.workspace)),
        Path(os.path.realpath(context.outputs)),
    )


def resolve_writable(context: ToolContext, raw: str) -> Path:
    """The real path a tool may write for `raw`; raises ToolRefused otherwise."""
    real = resolve_readable(context, raw)
    logical = context.home.joinpath(*split_relative(raw))
    roots = writable_roots(context)
    logical_roots = (context.workspace, context.outputs)
    if not any(_inside(real, root) for root in roots) or not any(
        _inside(logical, root) for root in logical_roots
    ):
        allowed = ", ".join(context.relative(root) + "/" for root in logical_roots)
        raise ToolRefused(f"writing {raw!r} is refused: writes go only into {allowed}")
    return real
