"""The channels' senders: one message as they receive it (stable id, run, kind, text, time), and one
attempt to hand it over, to a webhook (a signed JSON POST) or to a command (on its stdin).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import httpx
from pydantic import BaseModel, ConfigDict

from multiverse.config import CommandChannel, WebhookChannel
from multiverse.errors import MultiverseError
from multiverse.logs import register_secret
from multiverse.roles import Message, MessageKind

SCHEMA = "multiverse.message/1"


class Envelope(BaseModel):
    """What every channel gets for one message; `id` lets a receiver drop a repeat."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    run_id: str | None
    kind: MessageKind
    text: str
    created_at: str

    def body(self) -> bytes:
        """The JSON object sent to webhooks and (by default) to commands, as UTF-8 bytes."""
        data = {"schema": SCHEMA, **self.model_dump(mode="json")}
        return json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")


def message_id(run_id: str | None, once: str | None) -> str:
    """A message's id: derived from its `once` key (the same after a redo), else random."""
    if once is None:
        return uuid.uuid4().hex
    return hashlib.sha256(f"{run_id or ''}\0{once}".encode()).hexdigest()[:32]


def envelope_of(message: Message, text: str, once: str | None = None) -> Envelope:
    """The envelope of a message composed as `text`."""
    return Envelope(
        id=message_id(message.run_id, once),
        run_id=message.run_id,
        kind=message.kind,
        text=text.rstrip("\n"),
        created_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    )


class DeliveryFailed(MultiverseError):
    """One attempt did not deliver; `retryable` says whether another attempt may succeed."""

    def __init__(self, reason: str, retryable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable


class Sender(Protocol):
    """Delivers envelopes to one channel."""

    def send(self, envelope: Envelope) -> None:
        """Make one attempt; raise DeliveryFailed when it did not deliver."""

    def close(self) -> None:
        """Release what the sender holds (connections)."""


ID_HEADER = "X-Multiverse-Message-Id"
TIMESTAMP_HEADER = "X-Multiverse-Timestamp"
SIGNATURE_HEADER = "X-Multiverse-Signature"


def signature(key: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for this body sent at `timestamp`."""
    signed = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(key.encode("utf-8"), signed, hashlib.sha256).hexdigest()


USER_AGENT = "multiverse-channels/1"


def retryable_status(status: int) -> bool:
    """Whether an HTTP status may go away on another attempt (timeouts, throttling, 5xx)."""
    return status in (408, 425, 429) or status >= 500


class WebhookSender:
    """Posts envelopes to one webhook over a kept-alive connection."""

    def __init__(
        self,
        channel: WebhookChannel,
        environ: Mapping[str, str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.channel = channel
        self.environ = environ
        self.clock = clock
        # Redirects are not followed: a signed body goes only where the mapping says.
        self._client = httpx.Client(timeout=channel.timeout_seconds, follow_redirects=False)

    def send(self, envelope: Envelope) -> None:
        """POST the envelope once; DeliveryFailed on a transport error or a non-2xx answer."""
        url = self.channel.resolve_url(self.environ)
        if url is None:
            raise DeliveryFailed(f"{self.channel.url_env} is not set", retryable=False)
        if self.channel.url_env is not None:
            register_secret(url)  # a hook URL kept in the environment is a secret: masked in logs
        body = envelope.body()
        headers = self._headers(envelope, body)
        try:
            response = self._client.post(url, content=body, headers=headers)
        except httpx.TimeoutException:
            raise DeliveryFailed(f"timed out after {self.channel.timeout_seconds:g}s") from None
        except httpx.HTTPError as error:
            # The error's text, never the URL (which may be a secret from url_env).
            raise DeliveryFailed(f"{type(error).__name__}: {error}") from None
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(
                f"HTTP {response.status_code}", retryable=retryable_status(response.status_code)
            )

    def _headers(self, envelope: Envelope, body: bytes) -> dict[str, str]:
        headers = dict(self.channel.headers)
        for header, name in self.channel.header_envs.items():
            headers[header] = self._secret(name, f"header {header}")
        headers.update(
            {"Content-Type": "application/json", "User-Agent": USER_AGENT, ID_HEADER: envelope.id}
        )
        if self.channel.secret_env is not None:
            key = self._secret(self.channel.secret_env, "the signing key")
            timestamp = int(self.clock())
            headers[TIMESTAMP_HEADER] = str(timestamp)
            headers[SIGNATURE_HEADER] = signature(key, timestamp, body)
        return headers

    def _secret(self, name: str, what: str) -> str:
        """A variable's value, registered for masking; unset → a delivery that is not retried."""
        value = self.environ.get(name, "")
        if not value:
            # Never send unsigned (or without its credentials) what the receiver must trust.
            raise DeliveryFailed(f"{name} ({what}) is not set", retryable=False)
        register_secret(value)
        return value

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


STDERR_SHOWN = 300  # characters of the program's stderr kept in the failure's log event


PASSED_ENV = ("PATH", "HOME", "LANG")  # what every command channel's program gets


class CommandSender:
    """Runs the channel's command for each envelope."""

    def __init__(self, channel: CommandChannel, home_root: Path, environ: Mapping[str, str]):
        self.channel = channel
        self.home_root = home_root
        self.environ = environ

    def send(self, envelope: Envelope) -> None:
        """Run the command once with the message on stdin; DeliveryFailed unless it exits 0."""
        data = envelope.body() if self.channel.input == "json" else envelope.text.encode() + b"\n"
        try:
            process = subprocess.Popen(
                self.channel.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.home_root,
                env=self._environment(envelope),
                start_new_session=True,  # so a timeout kills its children too
            )
        except OSError as error:
            reason = f"cannot start: {error.strerror or error}"
            raise DeliveryFailed(reason, retryable=False) from None
        try:
            _, stderr = process.communicate(data, timeout=self.channel.timeout_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise DeliveryFailed(f"timed out after {self.channel.timeout_seconds:g}s") from None
        if process.returncode != 0:
            said = stderr.decode("utf-8", "replace").strip()[-STDERR_SHOWN:]
            raise DeliveryFailed(f"exit {process.returncode}" + (f": {said}" if said else ""))

    def _environment(self, envelope: Envelope) -> dict[str, str]:
        """PATH, HOME, LANG and the variables the channel names; no key, no secret."""
        kept = [*PASSED_ENV, *self.channel.env]
        return {
            **{name: self.environ[name] for name in kept if name in self.environ},
            "MULTIVERSE_MESSAGE_ID": envelope.id,
            "MULTIVERSE_RUN_ID": envelope.run_id or "",
            "MULTIVERSE_MESSAGE_KIND": envelope.kind.value,
            "MULTIVERSE_HOME": str(self.home_root),
        }

    def close(self) -> None:
        """Nothing is held between messages."""


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
