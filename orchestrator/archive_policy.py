"""Which final runs the daemon archives by itself (issue "flat cost with history").

The live tables hold the runs people work with; the rest of the history is archived
(`orchestrator.archiving`) so that a run's work costs the same with 10 or 100,000 past runs.
A final run (COMPLETED, FAILED, CANCELLED) is due when it was created more than
`archive_after_days` days ago, or when it is older than the newest `live_final_runs` final
runs. 0 turns either rule off; both 0: the daemon never archives by itself.

The count rule works in batches: nothing is due until the final runs exceed `live_final_runs`
by a quarter of it, then the oldest go down to `live_final_runs`. An archive rewrites its
shard tables whole, so a batch of 25 pays that once where one run at a time would pay it 25
times (measured in BENCHMARKS.md, "History at scale").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from multiverse.models import FINAL_STATUSES, ProcessRun
from multiverse.status_times import created_from_id


def due_for_archive(
    rows: Sequence[ProcessRun], now: datetime, after_days: int, live_final: int
) -> list[str]:
    """The run_ids the policy archives now, oldest first (pure)."""
    final = sorted(row.run_id for row in rows if row.status in FINAL_STATUSES)
    due: set[str] = set()
    if after_days > 0:
        cut = now - timedelta(days=after_days)
        due |= {run_id for run_id in final if (made := created_from_id(run_id)) and made < cut}
    if live_final > 0 and len(final) > live_final + live_final // 4:
        due |= set(final[: len(final) - live_final])
    return sorted(due)
