"""A real loopback HTTP server speaking OpenAI chat-completions from a script of replies.

Register the fixture for every test file with one line in tests/conftest.py:
`from fake_openai import fake_openai  # noqa: F401` (pytest puts tests/ on sys.path).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jsonschema
import pytest


@dataclass(frozen=True)
class Reply:
    """One scripted reply: kind is text, tools, error, hang, drop or length."""

    kind: str
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 11
    completion_tokens: int = 7
    # The provider's prompt-cache report: OpenAI-style usage.prompt_tokens_details.cached_tokens
    # (None: not sent), and llama-server's top-level `timings` object (None: not sent).
    cached_tokens: int | None = None
    timings: dict[str, Any] | None = None


def text(
    content: str,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    cached_tokens: int | None = None,
    timings: dict[str, Any] | None = None,
) -> Reply:
    """A plain assistant answer, with the provider's cache report when given."""
    return Reply(
        "text",
        text=content,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cached_tokens=cached_tokens,
        timings=timings,
    )


def llama_timings(cache_n: int, prompt_n: int, predicted_n: int = 7) -> dict[str, Any]:
    """llama-server's `timings` object: cache_n prompt tokens reused, prompt_n evaluated."""
    return {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": 12.5,
        "prompt_per_token_ms": 0.5,
        "prompt_per_second": 2000.0,
        "predicted_n": predicted_n,
        "predicted_ms": 70.0,
        "predicted_per_token_ms": 10.0,
        "predicted_per_second": 100.0,
    }


def tools(*calls: tuple[str, dict[str, Any]]) -> Reply:
    """An answer calling tools: each call is (provider-side name, arguments)."""
    made = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for n, (name, args) in enumerate(calls)
    ]
    return Reply("tools", tool_calls=made)


def error(
    status: int, message: str = "scripted error", headers: dict[str, str] | None = None
) -> Reply:
    """An HTTP error with an OpenAI-style error body."""
    return Reply("error", text=message, status=status, headers=dict(headers or {}))


def hang() -> Reply:
    """Block until the server is released or the client gives up."""
    return Reply("hang")


def drop() -> Reply:
    """Close the connection without answering."""
    return Reply("drop")


def length_cut(
    content: str = "", completion_tokens: int = 0, cached_tokens: int | None = None
) -> Reply:
    """An answer stopped by the length limit: empty, or the text written before the cut."""
    return Reply(
        "length", text=content, completion_tokens=completion_tokens, cached_tokens=cached_tokens
    )


class FakeOpenAI:
    """The server's state: the script, the recorded requests, the default reply.

    With `check_schemas` on, each text reply is checked against the request's
    `response_format` json_schema (as a decoding server would enforce it): an answer that does
    not validate is recorded in `schema_violations`, and the number of a request that carried no
    json_schema in `unstructured`, so a test can assert that there are none.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.default: Reply = text("default answer")
        # When set, answers each request the script does not (a model that follows the prompt).
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.check_schemas = False
        self.schema_violations: list[str] = []
        self.unstructured: list[int] = []
        self.release = threading.Event()
        # When set: every answer waits until this event is set (requests held in flight).
        self.hold: threading.Event | None = None
        # Seconds every answer takes, as a model's latency (bench/overlap.py); 0: at once.
        self.delay = 0.0
        self.streams_stopped = 0  # streamed answers the client stopped reading before the end
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval makes shutdown quick (the default waits up to 0.5 s).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The OpenAI base URL to pass as api_base."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        """How many chat-completion requests arrived."""
        with self._lock:
            return len(self.requests)

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order; the default serves when the queue is empty."""
        with self._lock:
            self._script.extend(replies)

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        """Record one request and pick its reply."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._script:
                reply = self._script.popleft()
            elif self.responder is not None:
                reply = self.responder(body)
            else:
                reply = self.default
            if self.check_schemas and reply.kind == "text":
                self._check_schema(len(self.requests) - 1, body, reply.text)
            return reply

    def _check_schema(self, number: int, body: dict[str, Any], answer: str) -> None:
        """Record whether the answer to request `number` fits the schema the request sent."""
        shape = body.get("response_format") or {}
        schema = (shape.get("json_schema") or {}).get("schema")
        if shape.get("type") != "json_schema" or not isinstance(schema, dict):
            self.unstructured.append(number)
            return
        try:
            data = json.loads(answer)
        except ValueError as exc:
            self.schema_violations.append(f"request {number}: not JSON: {exc}")
            return
        validator = jsonschema.Draft202012Validator(schema)
        self.schema_violations.extend(
            f"request {number}: {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in validator.iter_errors(data)
        )

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Release hung handlers and shut down."""
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    finish = "stop"
    if reply.kind == "tools":
        message["tool_calls"] = reply.tool_calls
        finish = "tool_calls"
    elif reply.kind == "length":
        # Cut by the token limit: whatever text was written before the cut (often none).
        message["content"] = reply.text
        finish = "length"
    tokens: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    if reply.cached_tokens is not None:
        tokens["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    completion: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": tokens,
    }
    if reply.timings is not None:
        completion["timings"] = reply.timings  # llama-server's own, beside the standard fields
    return completion


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Without it every response waits ~40 ms on delayed ACKs (DEPENDENCY_NOTES).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(size) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            # Header names are case-insensitive (RFC 9110): recorded lower-cased, as HTTP/2
            # sends them and as newer OpenAI clients write them.
            reply = fake.record(body, {k.lower(): v for k, v in self.headers.items()})
            if fake.hold is not None:
                fake.hold.wait(60)
            if fake.delay:
                time.sleep(fake.delay)  # the simulated model thinking, not a test waiting
            if reply.kind == "hang":
                self._hang()
            elif reply.kind == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            elif reply.kind == "error":
                payload = {"error": {"message": reply.text, "type": "scripted", "code": None}}
                self._send(reply.status, payload, reply.headers)
            elif body.get("stream") and reply.kind in ("text", "length"):
                self._stream(_completion(reply, str(body.get("model", "fake"))),
                             per_chunk=bool(body.get("timings_per_token")))  # fmt: skip
            else:
                self._send(200, _completion(reply, str(body.get("model", "fake"))))

        def _stream(self, completion: dict[str, Any], per_chunk: bool = False) -> None:
            # Server-sent events as llama-server and OpenAI send them: the text in small
            # deltas, the finish, then usage (and llama-server's timings), then [DONE]. A client
            # that stops reading early closes the connection: counted, not an error. Asked for
            # `timings_per_token`, llama-server puts its timings (so far) in every chunk.
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            choice = completion["choices"][0]
            content = choice["message"]["content"] or ""
            base = {key: completion[key] for key in ("id", "created", "model")}
            base["object"] = "chat.completion.chunk"
            events = [{**base, "choices": [{"index": 0, "delta": {"content": content[at:at + 24]},
                                            "finish_reason": None}]}
                      for at in range(0, len(content), 24)]  # fmt: skip
            if per_chunk and "timings" in completion:
                for number, event in enumerate(events, start=1):
                    event["timings"] = {**completion["timings"], "predicted_n": number}
            finish = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
            events.append({**base, "choices": [finish]})
            last = {**base, "choices": [], "usage": completion["usage"]}
            if "timings" in completion:
                last["timings"] = completion["timings"]
            events.append(last)
            try:
                for event in events:
                    self.wfile.write(b"data: " + json.dumps(event).encode("utf-8") + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                fake.streams_stopped += 1

        def _hang(self) -> None:
            # Waits for the release event, or for the client to close its end.
            self.close_connection = True
            while not fake.release.wait(0.02):
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    return

        def _send(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def running_server() -> Iterator[FakeOpenAI]:
    """A started fake server, stopped on exit."""
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake OpenAI server, stopped after the test."""
    with running_server() as server:
        yield server
