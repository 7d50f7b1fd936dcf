"""The Celery app of remote steps, as the daemon sends with it and a worker serves with it.

The settings are what long steps need (issue 28): one message at a time per worker process
(prefetch 1), the message acknowledged only once the step ended (`acks_late`) and given back
when the worker process died (`reject_on_worker_lost`), and Redis's `visibility_timeout` past the
longest step, so a step still running is never handed to a second worker. Celery is imported
here only, when a remote tier is used.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from celery import Celery

INSPECT_SECONDS = 1.0  # how long live workers have to answer who they are
_IMPORT = threading.Lock()  # Celery's first import from several threads at once can fail


WORKERS_EXTRA = "pip install 'multiverse[workers]'"


def missing_packages() -> list[str]:
    """What remote steps need and this environment lacks (the `workers` extra): [] when ready."""
    return [name for name in ("celery", "redis") if importlib.util.find_spec(name) is None]


def celery_app(broker: str, visibility_seconds: float, time_limit: float | None = None) -> Celery:
    """A Celery app on `broker` with the settings of remote steps (no result backend: the
    outcome travels through the exchange)."""
    with _IMPORT:
        from celery import Celery

    app = Celery("multiverse", broker=broker, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        task_time_limit=time_limit,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": visibility_seconds,
            "socket_connect_timeout": 3,
        },
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
        worker_cancel_long_running_tasks_on_connection_loss=True,
    )
    return app


def live_queues(app: Celery) -> dict[str, list[str]]:
    """Each live worker of the app's broker → the queues it consumes (none answered: {})."""
    try:
        answer = app.control.inspect(timeout=INSPECT_SECONDS).active_queues()
    except Exception:  # the broker went away meanwhile: no worker can be reached either
        return {}
    return {
        str(name).removeprefix("celery@"): [str(queue.get("name")) for queue in queues]
        for name, queues in (answer or {}).items()
    }


def queue_served(app: Celery, queue: str) -> bool:
    """Whether a live worker consumes `queue` now (it may be busy with other steps)."""
    return any(queue in queues for queues in live_queues(app).values())
