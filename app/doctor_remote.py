"""`multiverse doctor`'s look at remote tiers (issue 28): is each broker reachable, and which
live workers serve each queue the tiers send steps to."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from multiverse.config import RuntimeMapping, Tier, worker_visibility_seconds
from multiverse.errors import MultiverseError


class WorkersCheck(BaseModel):
    """One queue remote tiers send to: its broker, whether it answers, who serves it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tiers: list[Tier]
    broker: str  # shown without its password
    queue: str
    reachable: bool
    workers: list[str] = []
    error: str | None = None

    @property
    def ok(self) -> bool:
        """The broker answers and at least one live worker serves the queue."""
        return self.reachable and bool(self.workers)


def check_workers(mapping: RuntimeMapping) -> list[WorkersCheck]:
    """Each (broker, queue) of the remote tiers: reachable, and the live workers serving it."""
    places: dict[tuple[str, str], list[Tier]] = {}
    for tier, config in mapping.tier_mapping.items():
        if config.remote is not None:
            places.setdefault((config.remote.broker, config.remote.queue), []).append(tier)
    if not places:
        return []
    from multiverse.remote import (
        WORKERS_EXTRA,
        Exchange,
        celery_app,
        live_queues,
        missing_packages,
        shown_url,
    )

    missing = missing_packages()
    if missing:
        why = f"{' and '.join(missing)} missing: {WORKERS_EXTRA}"
        return [WorkersCheck(tiers=tiers, broker=shown_url(broker), queue=queue, reachable=False,
                             error=why) for (broker, queue), tiers in places.items()]  # fmt: skip
    checks = []
    serving: dict[str, dict[str, list[str]]] = {}
    for (broker, queue), tiers in places.items():
        shown = shown_url(broker)
        try:
            Exchange(broker).ping()
        except MultiverseError as error:
            checks.append(WorkersCheck(tiers=tiers, broker=shown, queue=queue, reachable=False,
                                       error=str(error)))  # fmt: skip
            continue
        if broker not in serving:
            serving[broker] = live_queues(celery_app(broker, worker_visibility_seconds([])))
        names = sorted(name for name, queues in serving[broker].items() if queue in queues)
        checks.append(WorkersCheck(tiers=tiers, broker=shown, queue=queue, reachable=True,
                                   workers=names))  # fmt: skip
    return checks


def workers_lines(checks: list[WorkersCheck]) -> list[str]:
    """The doctor's lines about remote tiers (none without one)."""
    if not checks:
        return []
    lines = ["", "Remote workers"]
    for check in checks:
        tiers = ", ".join(tier.value for tier in check.tiers)
        where = f"queue {check.queue!r} of {check.broker} ({tiers})"
        if not check.reachable:
            lines.append(f"✗ {where}: {check.error}")
        elif not check.workers:
            lines.append(f"✗ {where}: no live worker serves it; start one: "
                         f"multiverse worker --queue {check.queue}")  # fmt: skip
        else:
            lines.append(f"✓ {where}: served by {', '.join(check.workers)}")
    return lines
