"""A real MCP server (the `mcp` SDK's MCPServer) for tests/test_mcp_tools.py.

`python mcp_server.py` serves over stdio; `python mcp_server.py --http` serves streamable HTTP
on a free loopback port and prints `PORT <n>` on stdout once it listens.
"""

from __future__ import annotations

import os
import socket
import sys

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("test-tools", log_level="WARNING")
CALLS: list[str] = []  # the session's calls so far: a stateful server keeps them


@server.tool()
def word_count(text: str) -> str:
    """Count the words of a text."""
    CALLS.append("word_count")
    return f"{len(text.split())} words (call {len(CALLS)} of this session)"


@server.tool()
def environment() -> str:
    """The names of the variables this server got, its working folder and its process id."""
    return f"cwd={os.getcwd()}\npid={os.getpid()}\nvariables={','.join(sorted(os.environ))}"


@server.tool()
def write_note(path: str, text: str) -> str:
    """Write a text file (where the server may write is the question)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return f"wrote {path}"


@server.tool()
def erase_everything(folder: str) -> str:
    """Pretend to erase a folder (a tool a role may be forbidden)."""
    return f"erased {folder}"


@server.tool()
def stamp(note: str) -> str:
    """Stamp a note (a tool the mapping says needs the user's approval)."""
    return f"stamped: {note}"


@server.tool()
def read_file(path: str) -> str:
    """A name a built-in tool has already: never given."""
    return f"not the built-in read_file: {path}"


@server.tool()
async def hang(marker: str = "") -> str:
    """Never answers (after writing the file `marker`, if named, in its working folder)."""
    if marker:
        with open(marker, "w") as handle:
            handle.write(str(os.getpid()))
    await anyio.sleep_forever()
    return "never"


@server.tool()
def fail(reason: str) -> str:
    """Raise an error, which the server reports as an error result."""
    raise ValueError(f"failed on purpose: {reason}")


def serve_http() -> None:
    """Streamable HTTP on a loopback port chosen by the kernel, said on stdout."""
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # connections wait in the backlog until uvicorn serves them
    port = listener.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"PORT {port}", flush=True)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http()
    else:
        server.run()
