"""The webhook signature: HMAC-SHA256 over the timestamp and the raw body.

    X-Multiverse-Timestamp: <unix seconds when the attempt was sent>
    X-Multiverse-Signature: sha256=<hex HMAC-SHA256(key, b"<timestamp>." + raw body)>

The key is the UTF-8 value of the channel's `secret_env` variable. A receiver recomputes the
HMAC over the bytes it received, compares in constant time, and may refuse an old timestamp:
signing it too means a captured request cannot be replayed later under a fresh time.
"""

from __future__ import annotations

import hashlib
import hmac

ID_HEADER = "X-Multiverse-Message-Id"
TIMESTAMP_HEADER = "X-Multiverse-Timestamp"
SIGNATURE_HEADER = "X-Multiverse-Signature"


def signature(key: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for this body sent at `timestamp`."""
    signed = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(key.encode("utf-8"), signed, hashlib.sha256).hexdigest()
