"""Key masking: no API key in any log, table, message or file (SPEC §10.4, §14).

`mask_secrets` hides the values of secret-looking environment variables, keys registered by the
gateway, and common key shapes. `mask_processor` applies it to every structlog event; put it
after `format_exc_info` and right before the renderer so rendered tracebacks are masked too.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import MutableMapping
from typing import Any

MASK = "***"
SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_ACCESS_KEY")
# Shorter values would mask ordinary words; no real key is that short.
MIN_SECRET_LENGTH = 6
KEY_SHAPES = re.compile(
    # A shape must start a word: "task-skeleton" holds "sk-skeleton" and is no key.
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-[A-Za-z0-9_\-]{8,}"  # OpenAI, Anthropic (sk-ant-…), most OpenAI-compatible hosts
    r"|AIza[0-9A-Za-z_\-]{20,}"  # Google
    r"|gh[pousr]_[A-Za-z0-9]{20,}"  # GitHub
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r")|(?<=Bearer )[A-Za-z0-9._~+/\-]{12,}=*"
)

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a secret (e.g. a key read from a custom-named variable) so it is masked too."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    upper = name.upper()
    return upper == "API_KEY" or upper.endswith(SECRET_SUFFIXES)


def _secret_values() -> list[str]:
    values = {
        value
        for name, value in os.environ.items()
        if is_secret_name(name) and len(value) >= MIN_SECRET_LENGTH
    }
    with _lock:
        values |= _registered
    # Longest first, so a key that contains another is masked whole.
    return sorted(values, key=len, reverse=True)


def mask_secrets(text: str) -> str:
    """`text` with every known secret and every key-shaped string replaced by ***."""
    for value in _secret_values():
        if value in text:
            text = text.replace(value, MASK)
    return KEY_SHAPES.sub(MASK, text)


def mask_value(value: Any) -> Any:
    """Mask strings inside a value (recursively through dicts, lists and tuples)."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {key: mask_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(mask_value(item) for item in value)
    if isinstance(value, BaseException):
        return mask_secrets(f"{type(value).__name__}: {value}")
    return value


def mask_processor(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: mask secrets in every value of the event."""
    for key, value in list(event_dict.items()):
        if key == "exc_info":
            # Left for format_exc_info; its rendered "exception" text is masked on the next pass.
            continue
        event_dict[key] = mask_value(value)
    return event_dict
