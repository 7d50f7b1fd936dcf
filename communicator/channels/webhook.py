"""The webhook channel: one JSON POST per message, signed when the channel has a key."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import httpx

from communicator.channels.envelope import Envelope
from communicator.channels.sender import DeliveryFailed
from communicator.channels.signing import (
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signature,
)
from multiverse.channel_config import WebhookChannel
from multiverse.secrets import register_secret

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
