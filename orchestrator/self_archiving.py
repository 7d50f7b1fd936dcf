"""What the daemon does when it archives by itself: one crash-safe archive, then the tombstones.

The policy that chooses the runs is `orchestrator.archive_policy`; the move is
`orchestrator.archiving`. Here is the daemon's side: say what was archived or kept, and keep
the tombstone file to the last hour's deletions. Failures are logged and left for the next
look: archiving is housekeeping, never a run's failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import structlog

from multiverse.errors import MultiverseError
from orchestrator.archiving import Archiver
from orchestrator.collaborators import Collaborators

log = structlog.get_logger(__name__)


def archive_runs(crew: Collaborators, due: Sequence[str], since: datetime | None) -> None:
    """One crash-safe archive of the due runs, by a daemon serving since `since`."""
    archiver = Archiver(crew.home, crew.store, lambda home: since)
    try:
        result = archiver.archive(due)
    except MultiverseError as error:  # a broken or vanished row: the next look tries again
        log.warning("runs_not_archived", error=str(error))
        return
    log.info(
        "runs_archived",
        archived=len(result.archived),
        kept=[f"{kept.run_id}: {kept.reason}" for kept in result.refused],
    )
    forget_tombstoned(crew)


def forget_tombstoned(crew: Collaborators) -> None:
    """Keep the tombstone file to the last hour's deletions (`Collaborators.forget_tombstoned`)."""
    try:
        dropped = crew.forget_tombstoned()
    except (OSError, MultiverseError) as error:  # tried again after the next archive
        log.warning("tombstones_not_compacted", error=str(error))
        return
    if dropped:
        log.info("tombstones_compacted", dropped=dropped)
