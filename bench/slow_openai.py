"""A 1-second model: a loopback HTTP server speaking OpenAI chat-completions (bench/workers.py).

Run: `python bench/slow_openai.py [--host 127.0.0.1] [--port 0] [--delay 1.0]`; it prints
`listening http://HOST:PORT/v1` once it serves and answers until SIGTERM or SIGINT. Standalone
(the standard library only), in the spirit of tests/fake_openai.py: every
`POST …/chat/completions` is answered after `--delay` seconds, each in a thread of its own, so
calls in flight overlap as a provider's do. The answer follows the Executor's single-shot
prompt: a short markdown document for a writing call, and the JSON of a `MemoVerdict` for the
verdict call of a deliverable (asked by `response_format` or, without it, in the prompt). Any
other JSON schema is refused with a 400 naming it, so a bench that starts asking for something
else fails loudly instead of timing a wrong answer. `GET /count` returns how many
chat-completion requests arrived, as JSON.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DOCUMENT = (
    "## Findings\n\n"
    "The European e-bike market reached €18.5 billion in 2023 (source: "
    "`assets/market_report_2024.md`), growing about 9 % a year. Revenue by region is led by "
    "the north, then the south (source: `assets/quarterly_revenue.csv`).\n\n"
    "## What it means\n\n"
    "Entry through one mid-price line in the largest region carries the least risk; the "
    "competitors reviewed price above it (source: `assets/competitor_review.txt`).\n"
)
VERDICT = {
    "executive_summary": "The e-bike market reached €18.5 billion in 2023 and still grows.",
    "recommendation": "Enter the largest region first with one mid-price line.",
    "reasons": [
        "The market reached €18.5 billion in 2023.",
        "Competitors price above a mid-price line.",
    ],
}


def answer_for(body: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
    """The status and content of the answer to one chat-completion request (pure)."""
    shape = body.get("response_format") or {}
    name = (shape.get("json_schema") or {}).get("name")
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
    if name == "MemoVerdict" or (name is None and "`executive_summary`" in prompt):
        return 200, json.dumps(VERDICT)
    if name is not None or shape.get("type") == "json_object":
        return 400, {
            "error": {
                "message": f"the slow model knows no schema {name!r}",
                "type": "invalid_request_error",
                "code": None,
            }
        }
    return 200, DOCUMENT


def completion(content: str, model: str) -> dict[str, Any]:
    """An OpenAI chat.completion object carrying `content`."""
    return {
        "id": "chatcmpl-slow",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020},
    }


class SlowModel(ThreadingHTTPServer):
    """The server: its delay and how many chat completions it was asked."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], delay: float) -> None:
        super().__init__(address, Handler)
        self.delay = delay
        self.count = 0
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """One connection: chat completions after the delay, and the count."""

    protocol_version = "HTTP/1.1"
    server: SlowModel

    def setup(self) -> None:
        super().setup()
        # Without it every answer waits ~40 ms on delayed ACKs (DEPENDENCY_NOTES).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/count"):
            self._send(200, {"count": self.server.count})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(size) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with self.server.lock:
            self.server.count += 1
        time.sleep(self.server.delay)  # the model thinking
        status, content = answer_for(body)
        if isinstance(content, str):
            self._send(status, completion(content, str(body.get("model", "bench-model"))))
        else:
            self._send(status, content)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    """Serve until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds before each answer")
    args = parser.parse_args()
    server = SlowModel((args.host, args.port), args.delay)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"listening http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
