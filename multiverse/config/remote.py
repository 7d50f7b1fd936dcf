"""Where a tier's steps run when not in the daemon's process: `remote:` of a tier (issue 28).

A tier that says `remote: {broker: redis://host:6379/0, queue: NAME}` has its Executor steps
done by a `multiverse worker` serving that queue, on this machine or another. Redis is the
broker and also carries the files and the results (content-addressed), so it is the only
service both sides need; RabbitMQ is not supported (the files would need a second store).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

REDIS_SCHEMES = ("redis://", "rediss://")
MIB = 1 << 20


class RemoteConfig(BaseModel):
    """The broker and queue a tier's steps are sent to, and the bounds of one remote step."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    # The Redis broker's URL (redis:// or rediss://): it carries the steps, files and results.
    broker: str = Field(min_length=1)
    # The Celery queue the tier's steps go to; `multiverse worker --queue NAME` serves it.
    queue: str = Field(default="multiverse", min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    # No worker took the step from the queue in this time: the step fails (retry redoes it).
    pickup_timeout_seconds: float = Field(default=120.0, gt=0)
    # A worker that has not said it is alive for this long is lost: the step is sent again.
    lost_after_seconds: float = Field(default=30.0, gt=0)
    # The whole time one step may take on a worker; the worker's broker settings derive from it.
    step_timeout_seconds: float = Field(default=3600.0, gt=0)
    # What may travel with one step: the files its role may read, together.
    max_context_bytes: int = Field(default=64 * MIB, gt=0)
    # What may come back from one step: the files its role wrote, together.
    max_result_bytes: int = Field(default=64 * MIB, gt=0)

    @field_validator("broker")
    @classmethod
    def _redis_only(cls, value: str) -> str:
        if not value.startswith(REDIS_SCHEMES):
            raise ValueError(
                "must be a Redis URL (redis://host:6379/0 or rediss://…): Redis carries the "
                "steps, their files and their results"
            )
        return value


def worker_visibility_seconds(step_timeouts: list[float]) -> float:
    """Redis's `visibility_timeout` for a worker serving steps that may take this long: past
    the longest, with a margin, so a step still running is never handed to a second worker."""
    return max(step_timeouts, default=3600.0) * 1.5 + 60


def worker_time_limit(step_timeouts: list[float]) -> float:
    """The hard time limit of one task on the worker: the longest step, and a grace to end."""
    return max(step_timeouts, default=3600.0) + 30
