"""Child processes (SPEC §11): one external command run bounded and never orphaned, and the
sessions of a process tier.

The public face of child processes; its modules are private to it.
"""

from __future__ import annotations

from multiverse.processes.child import (
    RECORDS,
    allow_children,
    allow_run_children,
    kept,
    stop_all_children,
    stop_leftover_children,
    stop_run_children,
    stop_signal,
)
from multiverse.processes.keeper import pid_alive
from multiverse.processes.session import (
    INTERACTION_REQUEST,
    INTERACTION_RESPONSE,
    INTERACTION_TIMEOUT,
    Place,
    ProcessSession,
    append_event,
)

__all__ = [
    "INTERACTION_REQUEST",
    "INTERACTION_RESPONSE",
    "INTERACTION_TIMEOUT",
    "RECORDS",
    "Place",
    "ProcessSession",
    "allow_children",
    "allow_run_children",
    "append_event",
    "kept",
    "pid_alive",
    "stop_all_children",
    "stop_leftover_children",
    "stop_run_children",
    "stop_signal",
]
