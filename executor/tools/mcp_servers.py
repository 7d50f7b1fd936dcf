"""One live connection to a Model Context Protocol server (issue 26), for sync, threaded code.

The `mcp` SDK is async (anyio); the Executor is sync and runs tasks in threads. Each
connection therefore owns an event loop in a thread of its own (an anyio blocking portal) and one
task in it that holds the SDK's `Client` open until `close()`: the server's session spans the
task that opened it, so a stateful server keeps its state from call to call. The sync side
waits on each request with a deadline and a stop event (the run cancelled or paused, the daemon
stopping) and never longer: past the deadline the request is cancelled and the connection closed,
which stops a stdio server (stdin closed, then SIGTERM and SIGKILL to its process group), so a
hanging tool is stopped, not merely forgotten. The next request opens the server again.

A stdio server runs below the keeper (`multiverse.processes`) where Linux allows it, so nothing
it starts outlives the connection or the daemon, with a minimal environment and its stderr
appended to a log file; with `sandbox: true`, inside the shell tool's bubblewrap sandbox.
`mcp` is imported here only, when a connection opens.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import structlog

from executor.tools.shell import SandboxUnavailable, sandboxed
from multiverse.config import GRACE_SECONDS, McpServerConfig
from multiverse.processes import kept

if TYPE_CHECKING:
    from anyio import Event
    from anyio.from_thread import BlockingPortal
    from mcp import Client
    from mcp.types import CallToolResult

log = structlog.get_logger(__name__)

POLL_SECONDS = 0.05  # how often a wait looks at the stop event
# The SDK closes a stdio server in at most ~6.5 s (2 s after stdin closes, 2 s after SIGTERM,
# then SIGKILL); the keeper adds its own grace.
CLOSE_SECONDS = 8.0 + GRACE_SECONDS
BASIC_ENV = ("LANG", "TZ", "TMPDIR")  # the SDK adds HOME, LOGNAME, PATH, SHELL, TERM, USER
MAX_LISTED_PAGES = 50
STDERR_TAIL = 600  # characters of a failed server's stderr shown in its error


class McpUnavailable(Exception):
    """The server could not be started or reached, or it did not answer in time."""


class McpStopped(Exception):
    """The request was abandoned because its run's work must stop (cancel, pause, shutdown)."""


@dataclass(frozen=True)
class ListedTool:
    """One tool a server lists: its name, description and argument schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpPlace:
    """Where a server's process runs for one task: the home, and the run if there is one."""

    home: Path
    run_id: str | None = None
    workspace: Path | None = None
    log_folder: Path | None = None  # its stderr goes to `mcp-<server>.log` here (else nowhere)

    def cwd(self, config: McpServerConfig) -> Path | None:
        """The working folder: the run's workspace when asked (or sandboxed) and there is one
        (None: a sandboxed server outside a run), else the home."""
        if (config.cwd == "workspace" or config.sandbox) and self.workspace is not None:
            self.workspace.mkdir(parents=True, exist_ok=True)
            return self.workspace
        return None if config.sandbox else self.home


def server_environment(
    config: McpServerConfig, place: McpPlace, environ: Mapping[str, str]
) -> dict[str, str]:
    """What a stdio server gets besides the SDK's basics: locale, `env`, and where it works."""
    names = [*BASIC_ENV, *config.env]
    env = {name: environ[name] for name in names if name in environ}
    env.update({name: value for name, value in environ.items() if name.startswith("LC_")})
    env["MULTIVERSE_HOME"] = str(place.home)
    if place.run_id is not None:
        env["MULTIVERSE_RUN_ID"] = place.run_id
    if place.workspace is not None:
        env["MULTIVERSE_WORKSPACE"] = str(place.workspace)
    return env


def startable(program: str, cwd: Path, path: str) -> str | None:
    """Why `program` cannot be started from `cwd` with this PATH, or None."""
    if os.sep in program:
        file = Path(program) if Path(program).is_absolute() else cwd / program
        if not file.is_file():
            return f"cannot start {program!r}: no such file (relative paths start in {cwd})"
        if not os.access(file, os.X_OK):
            return f"cannot start {program!r}: it is not executable"
    elif shutil.which(program, path=path) is None:
        return f"cannot start {program!r}: not found on PATH"
    return None


def described(error: BaseException) -> str:
    """An exception (an exception group's first leaf) as one line for the model or doctor."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, McpUnavailable | McpStopped):
        return str(error)
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class McpConnection:
    """A connection to one MCP server, opened on first use and held until `close()`."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        place: McpPlace,
        stop: threading.Event | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.name = name
        self.config = config
        self._place = place
        self._stop = stop or threading.Event()
        self._environ = environ
        self._guard = threading.Lock()  # one request at a time: the tool loop is sequential
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._holder: Future[None] | None = None
        self._release: Event | None = None
        self._client: Client | None = None
        self._errlog: TextIO | None = None
        self._scratch_dir: tempfile.TemporaryDirectory[str] | None = None

    def tools(self) -> list[ListedTool]:
        """Open the connection (if it is not) and list the server's tools."""
        with self._guard:
            return self._open()

    def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call one tool within the server's time limit; McpUnavailable, TimeoutError or
        McpStopped when it does not answer."""
        with self._guard:
            if self._client is None:
                self._open()
            assert self._portal is not None and self._client is not None
            future = self._portal.start_task_soon(self._client.call_tool, tool, arguments)
            try:
                result: CallToolResult = self._wait(future, self.config.timeout_seconds)
                return result
            except (TimeoutError, McpStopped):
                # Abandoned: the server goes with the request, so a hanging tool is stopped.
                future.cancel()
                self._shut()
                raise
            except BaseException:
                if self._holder is None or self._holder.done():
                    self._shut()  # the connection itself broke: the next call opens it again
                raise

    def close(self) -> None:
        """End the session and stop a stdio server; safe to call twice."""
        with self._guard:
            self._shut()

    def _open(self) -> list[ListedTool]:
        import anyio
        from anyio.from_thread import start_blocking_portal

        if self._stop.is_set():  # the run is stopping: nothing is started for it
            raise McpStopped(f"MCP server {self.name}: the run's work was stopped")
        self._portal_cm = start_blocking_portal(name=f"mcp-{self.name}")
        self._portal = self._portal_cm.__enter__()
        opened: Future[list[ListedTool]] = Future()
        self._release = self._portal.call(anyio.Event)
        self._holder = self._portal.start_task_soon(self._hold, opened)
        try:
            done = self._wait_first(opened, self._holder, self.config.connect_timeout_seconds)
        except BaseException:
            self._shut()
            raise
        if done is self._holder:
            error = self._holder.exception()
            said = self._stderr_tail()
            self._shut()
            why = described(error) if error else "it closed the connection"
            raise McpUnavailable(f"{why}; its stderr ends: {said}" if said else why)
        return opened.result()

    async def _hold(self, opened: Future[list[ListedTool]]) -> None:
        """The connection's one task: open the client, list, wait for the release, close."""
        from mcp import Client

        async with self._transport() as transport, Client(
            transport, client_info=_client_info()
        ) as client:
            self._client = client
            listed = await _list_all(client)
            opened.set_result(listed)
            assert self._release is not None
            await self._release.wait()

    def _transport(self) -> Any:
        """The SDK transport of the server, in an async context that also owns its resources."""
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def transport() -> Any:
            if self.config.command is not None:
                yield self._stdio()
                return
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {**self.config.headers, **{
                header: self._environ[variable]
                for header, variable in self.config.header_envs.items()
                if self._environ.get(variable)  # unset: not sent (doctor says so)
            }}  # fmt: skip
            timeout = httpx2.Timeout(self.config.connect_timeout_seconds,
                                     read=self.config.timeout_seconds)  # fmt: skip
            async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
                yield streamable_http_client(self.config.url or "", http_client=http)

        return transport()

    def _stdio(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert self.config.command is not None
        cwd = self._place.cwd(self.config) or self._scratch()
        env = server_environment(self.config, self._place, self._environ)
        path = self._environ.get("PATH", os.defpath)
        problem = startable(self.config.command[0], cwd, path)
        if problem is not None:
            raise McpUnavailable(problem)
        argv = self.config.command
        if self.config.sandbox:
            env["HOME"] = str(cwd)  # as the shell's: caches and dotfiles where it may write
            try:
                argv = sandboxed(argv, cwd, self.config.network)
            except SandboxUnavailable as error:
                raise McpUnavailable(f"no sandbox can be made here: {error}") from None
        argv = kept(argv)
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
        return stdio_client(params, errlog=self._error_log())

    def _scratch(self) -> Path:
        """A temporary working folder (a sandboxed server outside a run), removed on close."""
        self._scratch_dir = tempfile.TemporaryDirectory(prefix="multiverse-mcp-")
        return Path(self._scratch_dir.name)

    def _error_log(self) -> TextIO:
        """Where the server's stderr goes: the run's log folder, else a temporary file (its
        tail explains a server that fails to start)."""
        folder = self._place.log_folder
        if folder is None:
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        else:
            folder.mkdir(parents=True, exist_ok=True)
            log_file = folder / f"mcp-{self.name}.log"
            self._errlog = log_file.open("a+", encoding="utf-8")  # closed by _shut
        return self._errlog

    def _stderr_tail(self) -> str:
        """The last lines the server wrote on stderr (from this connection's log)."""
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(max(0, self._errlog.seek(0, os.SEEK_END) - STDERR_TAIL))
            return " ".join(self._errlog.read().split())[-STDERR_TAIL // 2 :]
        except (OSError, ValueError):
            return ""

    def _wait(self, future: Future[Any], seconds: float) -> Any:
        """The future's result within `seconds`; TimeoutError past them, McpStopped on a stop."""
        deadline = time.monotonic() + seconds
        while not future.done():
            if self._stop.is_set():
                raise McpStopped(f"MCP server {self.name}: the run's work was stopped")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer in {seconds:g} s")
            wait([future], timeout=min(POLL_SECONDS, left))
        return future.result()

    def _wait_first(self, opened: Future[Any], holder: Future[Any], seconds: float) -> Future[Any]:
        """Whichever ends first: the listing, or the holder (which ends only by failing)."""
        deadline = time.monotonic() + seconds
        while True:
            if opened.done():
                return opened
            if holder.done():
                return holder
            if self._stop.is_set():
                raise McpStopped(f"MCP server {self.name}: the run's work was stopped")
            left = deadline - time.monotonic()
            if left <= 0:
                raise McpUnavailable(f"it did not answer in {seconds:g} s")
            wait([opened, holder], timeout=min(POLL_SECONDS, left), return_when=FIRST_COMPLETED)

    def _shut(self) -> None:
        """Release the holder (it closes the client and the server), then end the loop."""
        portal, holder, release = self._portal, self._holder, self._release
        self._portal = self._holder = self._release = self._client = None
        if portal is not None and holder is not None and not holder.done():
            if release is not None:
                portal.call(release.set)
            wait([holder], timeout=CLOSE_SECONDS)
            if not holder.done():
                holder.cancel()  # the SDK's shutdown is shielded and bounded: it still runs
                wait([holder], timeout=CLOSE_SECONDS)
        if self._portal_cm is not None:
            cm, self._portal_cm = self._portal_cm, None
            try:
                cm.__exit__(None, None, None)
            except Exception as error:  # the holder's own failure, said already or moot
                log.info("mcp_connection_closed_with_error", server=self.name,
                         error=described(error))  # fmt: skip
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None
        if self._scratch_dir is not None:
            self._scratch_dir.cleanup()
            self._scratch_dir = None


async def _list_all(client: Client) -> list[ListedTool]:
    """Every tool the server lists, page after page (bounded)."""
    found: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(MAX_LISTED_PAGES):
        page = await client.list_tools(cursor=cursor)
        found += [ListedTool(tool.name, tool.description or "", dict(tool.input_schema))
                  for tool in page.tools]  # fmt: skip
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def _client_info() -> Any:
    from mcp.types import Implementation

    return Implementation(name="multiverse", version="1")
