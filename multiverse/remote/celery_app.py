"""The Celery app of remote steps, as the daemon sends with it and a worker serves with it.

The settings are what long steps need (issue 28): one message at a time per worker process
(prefetch 1), the message acknowledged only once the step ended (`acks_late`) and given back
when the worker process died (`reject_on_worker_lost`), and Redis's `visibility_timeout` past the
longest step, so a step still running is never handed to a second worker. Celery is imported
here only, when a remote tier is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from celery import Celery


def celery_app(broker: str, visibility_seconds: float, time_limit: float | None = None) -> Celery:
    """A Celery app on `broker` with the settings of remote steps (no result backend: the
    outcome travels through the exchange)."""
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
