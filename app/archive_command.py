"""`multiverse archive`: which runs, the move itself (`orchestrator.archiving`), what is said."""

from __future__ import annotations

from app.when import parse_when
from multiverse.archive import ArchiveResult
from multiverse.home import require_home, resolve_home
from multiverse.store import TableStore


def archive_runs(
    home_option: str | None, run_ids: list[str] | None, before: str | None, dry_run: bool
) -> ArchiveResult:
    """Archive these runs, or every final run created before a date; what moved and what not."""
    from orchestrator.archiving import Archiver

    home = require_home(resolve_home(home_option))
    moment = parse_when(before) if before is not None else None
    return Archiver(home, TableStore()).archive(run_ids, moment, dry_run)


def render_archive(result: ArchiveResult) -> str:
    """What moved (or would), and each run kept live with its reason."""
    count = len(result.archived)
    verb = "would archive" if result.dry_run else "archived"
    if count:
        lines = [
            f"{verb} {count} run{'s' if count != 1 else ''} into db/archive/ and runs/archive/ "
            "(still readable and ranked by the learning context; outputs stay in outputs/):"
        ]
        lines += [f"  {moved.run_id} → {moved.shard}, {moved.folder}" for moved in result.archived]
    else:
        lines = ["nothing to archive"]
    if result.refused:
        lines.append(f"not archived ({len(result.refused)}):")
        lines += [f"  {kept.run_id} {kept.status}: {kept.reason}" for kept in result.refused]
    return "\n".join(lines)
