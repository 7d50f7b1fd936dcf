"""Logging and key masking: no API key in any log, table, message or file (SPEC §10.4, §14);
logging is configured by the CLI and only there (STYLE rule 10).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

MASK = "***"
# _KEY covers _API_KEY and _ACCESS_KEY, and keys named as a mapping may name them (MY_KEY).
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET")
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


# A name per line: API_KEY itself, or a name ending in one of SECRET_SUFFIXES, in any case.
_SECRET_NAMES = re.compile(
    r"^(?:API_KEY|.*(?:" + "|".join(SECRET_SUFFIXES) + r"))$", re.IGNORECASE | re.MULTILINE
)


# The secret-looking variable names, found when os.environ last had this many variables.
_env_secret_names: tuple[tuple[str, ...], list[str]] = ((), [])


def _secret_names() -> list[str]:
    """The names of the environment's secret-looking variables.

    This runs for every log event, and matching every name costs ~10 µs, so the names are
    matched again only when the variables' names changed (comparing them costs ~1 µs): a
    variable set or removed is seen at the next event. Values are read afresh each time.
    """
    global _env_secret_names
    names = tuple(os.environ)
    if _env_secret_names[0] != names:
        _env_secret_names = (names, _SECRET_NAMES.findall("\n".join(names)))
    return _env_secret_names[1]


def _secret_values() -> list[str]:
    return _with_registered(os.environ.get(name, "") for name in _secret_names())


def secret_values_in(environ: Mapping[str, str]) -> list[str]:
    """The secrets to mask for this environment: its secret-looking values and registered keys."""
    return _with_registered(
        value for name, value in environ.items() if _SECRET_NAMES.fullmatch(name)
    )


def _with_registered(values: Iterable[str]) -> list[str]:
    found = {value for value in values if len(value) >= MIN_SECRET_LENGTH}
    with _lock:
        found |= _registered
    # Longest first, so a key that contains another is masked whole.
    return sorted(found, key=len, reverse=True)


def mask_secrets(text: str, secrets: list[str] | None = None) -> str:
    """`text` with every known secret and every key-shaped string replaced by ***.

    `secrets` are the known secrets when the caller already has them (`_secret_values`).
    """
    for value in _secret_values() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, MASK)
    return KEY_SHAPES.sub(MASK, text)


def mask_value(value: Any, secrets: list[str] | None = None) -> Any:
    """Mask strings inside a value (recursively through dicts, lists and tuples)."""
    if isinstance(value, str):
        return mask_secrets(value, secrets)
    if isinstance(value, dict):
        return {key: mask_value(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(mask_value(item, secrets) for item in value)
    if isinstance(value, BaseException):
        return mask_secrets(f"{type(value).__name__}: {value}", secrets)
    return value


def mask_processor(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: mask secrets in every value of the event."""
    secrets = _secret_values()  # once per event, not once per value
    for key, value in list(event_dict.items()):
        if key == "exc_info":
            # Left for format_exc_info; its rendered "exception" text is masked on the next pass.
            continue
        event_dict[key] = mask_value(value, secrets)
    return event_dict


class LazyLogger:
    """A module's structlog logger, structlog imported at its first event: a command that logs
    nothing (`--help`, `status`) does not pay that import (about 60 ms, rich's tracebacks with
    it). Bound to the configuration of the moment, as `structlog.get_logger` is."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, method)


def lazy_logger(name: str) -> LazyLogger:
    """The logger of module `name`, importing structlog only when it first logs."""
    return LazyLogger(name)


_installed: list[logging.Handler] = []  # the handlers the last configure_logging added
_previous_level: list[int] = []  # the root logger's level before it


def configure_logging(log_file: Path | None, console_level: int = logging.WARNING) -> None:
    """structlog through stdlib: JSON lines to `log_file` (INFO), short lines to stderr.

    Configuring again (a second command run in the same process, as the tests do) replaces the
    handlers of the first call, closing its log file; `close_logging` removes them when the
    command is done, so no home's log file stays open after it.
    """
    import structlog
    import structlog.tracebacks

    close_logging()
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        mask_processor,
    ]
    # The configured list is changed in place: loggers cached by an earlier configuration hold
    # that very list, and so follow this one (and structlog.testing.capture_logs).
    processors = structlog.get_config()["processors"]
    processors[:] = [*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter]
    structlog.configure(
        processors=processors,
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    _previous_level.append(root.level)
    root.setLevel(logging.INFO)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(console_level)
    console.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.dev.ConsoleRenderer(
                    colors=False, exception_formatter=structlog.dev.plain_traceback
                ),
            ],
            foreign_pre_chain=shared,
        )
    )
    _install(console)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = LogFile(log_file, encoding="utf-8")
        handler.setLevel(logging.INFO)
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    # The frames without their local variables: a local may hold a key or a
                    # whole assignment, and the log is for the failing line, not the data.
                    structlog.processors.ExceptionRenderer(
                        structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
                    ),
                    structlog.processors.JSONRenderer(ensure_ascii=False),
                ],
                foreign_pre_chain=shared,
            )
        )
        _install(handler)


class LogFile(logging.FileHandler):
    """The log file; a line it cannot write (a full disk) is said once on stderr, in a plain
    sentence, never as logging's own traceback, and said again only after a line went in."""

    failing = False  # the last line could not be written
    _failed_now = False

    def emit(self, record: logging.LogRecord) -> None:
        """Write the line; a line that went in ends a run of failures."""
        self._failed_now = False
        super().emit(record)
        if not self._failed_now:
            self.failing = False

    def handleError(self, record: logging.LogRecord) -> None:
        """Say once that lines are lost, with the reason and what to do."""
        self._failed_now = True
        self._say(sys.exc_info()[1])

    def close(self) -> None:
        """Close the file; the last lines that cannot be flushed are said lost, not raised."""
        try:
            super().close()
        except OSError as error:  # the stream is let go of before the error reaches here
            self._say(error)

    def _say(self, error: BaseException | None) -> None:
        if self.failing:
            return
        self.failing = True
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"multiverse: could not write the log file {self.baseFilename} ({error}); "
                "its lines are lost until it can be written: free some disk space\n"
            )


def _install(handler: logging.Handler) -> None:
    logging.getLogger().addHandler(handler)
    _installed.append(handler)


def logging_configured() -> bool:
    """Whether `configure_logging` has handlers in place (a daemon or command of this process)."""
    return bool(_installed)


def close_logging() -> None:
    """Remove and close the handlers `configure_logging` added (its log file is closed)."""
    root = logging.getLogger()
    while _installed:
        handler = _installed.pop()
        root.removeHandler(handler)
        handler.close()
    if _previous_level:
        root.setLevel(_previous_level.pop())
