"""Remote steps (issue 28): what travels between the daemon and `multiverse worker`s, and the
Redis and Celery they travel over.

The public face of remote steps; its modules are private to it. Celery and redis are imported
only when a remote tier is used.
"""

from __future__ import annotations

from multiverse.remote.celery_app import (
    WORKERS_EXTRA,
    celery_app,
    live_queues,
    missing_packages,
    queue_served,
)
from multiverse.remote.desk import DeskLimits, DeskRates, RateDesk
from multiverse.remote.exchange import (
    BlobCache,
    BrokerUnreachable,
    Exchange,
    inside_root,
    sha256_of,
    shown_url,
)
from multiverse.remote.wire import (
    TASK_NAME,
    StepJob,
    StepOutcome,
    step_key,
    step_of,
    task_id_of,
    writable,
)

__all__ = [
    "TASK_NAME",
    "WORKERS_EXTRA",
    "BlobCache",
    "BrokerUnreachable",
    "DeskLimits",
    "DeskRates",
    "Exchange",
    "RateDesk",
    "StepJob",
    "StepOutcome",
    "celery_app",
    "inside_root",
    "live_queues",
    "missing_packages",
    "queue_served",
    "sha256_of",
    "shown_url",
    "step_key",
    "step_of",
    "task_id_of",
    "writable",
]
