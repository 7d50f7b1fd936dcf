"""Moving final runs out of the live tables and folders (`multiverse archive`), crash-safe.

Where archived runs live and how they are read is `multiverse.runs`. A batch is moved in
steps that are each idempotent, after its intent is on disk, so that a crash at any point is
finished by the next archive or the daemon's start (`finish_archive`):
1. the intent, `db/archive/.intent.json`: the run_ids;
2. their rows are upserted into their shards' tables (a catalog path under runs/<id>/ becomes
   runs/archive/<id>/…, where the file now is);
3. each folder runs/<id> is renamed to runs/archive/<id>;
4. their rows leave the live tables, each key tombstoned first, so that no writer's journal puts
   them back (the daemon restores rows a stale save erased, not rows removed on purpose);
5. the intent is removed.
Steps 2 and 4 read the live tables under each table's lock, merging, as every writer does.
Only final runs are moved: never a PENDING or waiting run, one with a step in flight, or a
FAILED run whose retry or answer is under way.

Also here: which final runs the daemon archives by itself (issue "flat cost with history"); what
the daemon does when it archives by itself.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import structlog

from multiverse.atomic import atomic_write_text, fsync_folder
from multiverse.errors import MultiverseError, RunStateError, UnknownRun
from multiverse.home import LOCK_FILE, Home, lock_held, read_beat
from multiverse.models import FINAL_STATUSES, CatalogEntry, ProcessRun, Row, Status
from multiverse.runs import (
    STEP_FINISHED,
    STEP_STARTED,
    ArchiveResult,
    Moved,
    Refused,
    archived_path,
    archived_run,
    created_from_id,
    parse_stamp,
    read_ends,
    shard_of,
    timeline_path,
)
from multiverse.store import (
    GLOBAL_TABLES,
    PROCESS_RUNS,
    FileFlock,
    LockTimeout,
    TableSpec,
    TableStore,
    add_tombstones,
)
from orchestrator.crew import Collaborators
from orchestrator.perform import wants_a_look

INTENT = ".intent.json"
LOCK = ".archive.lock"
LOCK_WAIT = 60.0  # seconds another archive of the home may hold the lock


def choose(
    rows: Sequence[ProcessRun],
    wanted: Sequence[str] | None,
    before: datetime | None,
    busy: Callable[[ProcessRun], str | None],
) -> tuple[list[str], list[Refused]]:
    """The run_ids to archive and the refusals (pure but for `busy`, which looks at a run).

    `wanted`: these runs (each must be final); else every final run created before `before`.
    Runs that are not final are refused by name only when asked for by name or in the range.
    """
    by_id = {row.run_id: row for row in rows}
    if wanted is not None:
        candidates = [by_id[run_id] for run_id in dict.fromkeys(wanted) if run_id in by_id]
    else:
        candidates = [
            row
            for row in rows
            if before is None or ((made := created_from_id(row.run_id)) and made < before)
        ]
    chosen: list[str] = []
    refused: list[Refused] = []
    for row in candidates:
        reason = _not_final(row) or busy(row)
        if reason is None:
            chosen.append(row.run_id)
        else:
            refused.append(Refused(run_id=row.run_id, status=row.status.value, reason=reason))
    return chosen, refused


def _not_final(row: ProcessRun) -> str | None:
    if row.status in FINAL_STATUSES:
        return None
    if row.status is Status.AWAITING_CONFIRMATION:
        return "it waits for your answer: confirm or cancel it first"
    return "it is not final: only COMPLETED, FAILED and CANCELLED runs are archived"


def busy_reason(home: Home, row: ProcessRun, daemon_since: datetime | None) -> str | None:
    """Why a final run cannot move now: a step still in flight, a retry or answer under way.

    `daemon_since`: when the daemon serving the home started (None: no daemon lives). A step
    that started before it, and never finished, was cut by a crash: it is not in flight.
    """
    paths = home.run(row.run_id)
    if not paths.root.is_dir():
        if (home.archive_runs / row.run_id).is_dir():
            return None  # moved already (a live row a save put back): its row follows
        return f"its folder runs/{row.run_id} is missing"
    if daemon_since is not None:
        _, last = read_ends(timeline_path(paths.root))
        steps = [event for event in last if event.get("event") in (STEP_STARTED, STEP_FINISHED)]
        if steps and steps[-1].get("event") == STEP_STARTED:
            started = parse_stamp(steps[-1].get("at"))
            if started is None or started >= daemon_since:
                return "a step of it is still in flight: try again in a moment"
    if row.status is Status.FAILED and wants_a_look(paths):
        return "a retry or an answer to it is under way"
    return None


def daemon_since(home: Home) -> datetime | None:
    """When the living daemon of the home started; None if none lives (its lock is free)."""
    if not lock_held(home.state / LOCK_FILE):
        return None
    beat = read_beat(home.state)
    return beat.started_at if beat is not None else datetime.min.replace(tzinfo=UTC)


class Archiver:
    """Moves runs of one home into its archive; one archive at a time per home (a flock)."""

    def __init__(
        self,
        home: Home,
        store: TableStore,
        started: Callable[[Home], datetime | None] | None = None,
    ) -> None:
        self.home = home
        self.store = store
        # When the serving daemon started: the daemon archiving itself knows; others ask.
        self.started = started or daemon_since

    def archive(
        self,
        wanted: Sequence[str] | None = None,
        before: datetime | None = None,
        dry_run: bool = False,
    ) -> ArchiveResult:
        """Archive the runs asked for (by id, or every final run created before a time)."""
        self.home.archive_db.mkdir(parents=True, exist_ok=True)
        lock = self._lock()
        try:
            self._finish()
            rows = self.store.table(PROCESS_RUNS, self._live(PROCESS_RUNS)).rows()
            since = self.started(self.home)
            chosen, refused = choose(
                rows, wanted, before, lambda row: busy_reason(self.home, row, since)
            )
            refused = self._not_live(rows, wanted or []) + refused
            taken = self._taken(rows, chosen)
            chosen = [run_id for run_id in chosen if run_id not in {r.run_id for r in taken}]
            result = ArchiveResult(refused=refused + taken, dry_run=dry_run)
            result.archived = [self._moved(run_id) for run_id in chosen]
            if chosen and not dry_run:
                atomic_write_text(self._intent, json.dumps({"runs": chosen}) + "\n")
                self._move(chosen)
            return result
        finally:
            lock.release()

    def finish(self) -> list[str]:
        """Finish an archive a crash interrupted; the run_ids it moved (none: nothing to do)."""
        if not self._intent.exists():
            return []
        lock = self._lock()
        try:
            return self._finish()
        finally:
            lock.release()

    def _not_live(self, rows: Sequence[ProcessRun], wanted: Sequence[str]) -> list[Refused]:
        """The runs asked for that are archived already; UnknownRun for one the home lacks."""
        live = {row.run_id for row in rows}
        refused = []
        for run_id in (run_id for run_id in wanted if run_id not in live):
            row = archived_run(self.store, self.home, run_id)
            if row is None:
                raise UnknownRun(run_id)
            reason = f"it is archived already (runs/archive/{run_id})"
            refused.append(Refused(run_id=run_id, status=row.status.value, reason=reason))
        return refused

    def _taken(self, rows: Sequence[ProcessRun], chosen: Sequence[str]) -> list[Refused]:
        """Runs whose id an archived run holds already (made before ids were checked against
        the archive): archiving would replace that run's row and mix their files, so never."""
        statuses = {row.run_id: row.status.value for row in rows}
        return [
            Refused(run_id=run_id, status=statuses[run_id],
                    reason=f"an archived run has the same id (runs/archive/{run_id}): archiving "
                           "it would replace that run's record; keep it, or delete one of them")
            for run_id in chosen
            if (self.home.archive_runs / run_id).exists()
            or archived_run(self.store, self.home, run_id) is not None
        ]  # fmt: skip

    def _lock(self) -> FileFlock:
        """The home's archive lock, taken (another archive holds it: a RunStateError)."""
        lock = FileFlock(self.home.archive_db / LOCK)
        try:
            lock.acquire(LOCK_WAIT)
        except LockTimeout:
            raise RunStateError(
                "another archive of this home is under way (the daemon's, or a command's): "
                "try again when it has finished"
            ) from None
        return lock

    @property
    def _intent(self) -> Path:
        return self.home.archive_db / INTENT

    def _live(self, spec: TableSpec[Any]) -> Path:
        return self.home.db / spec.filename

    def _moved(self, run_id: str) -> Moved:
        folder = self.home.relative(self.home.archive_runs / run_id)
        return Moved(run_id=run_id, shard=f"db/archive/{shard_of(run_id)}", folder=folder)

    def _finish(self) -> list[str]:
        try:
            runs = [str(run) for run in json.loads(self._intent.read_text("utf-8"))["runs"]]
        except FileNotFoundError:
            return []
        except (ValueError, KeyError, TypeError):
            runs = []  # torn before its replace completed: nothing was moved yet
        if runs:
            self._move(runs)
        else:
            self._intent.unlink(missing_ok=True)
        return runs

    def _move(self, runs: Sequence[str]) -> None:
        wanted = set(runs)
        shards: dict[str, set[str]] = defaultdict(set)
        for run_id in runs:
            shards[shard_of(run_id)].add(run_id)
        for spec in GLOBAL_TABLES:
            live = self.store.table(spec, self._live(spec)).rows_with("run_id", wanted)
            for shard, owners in shards.items():
                rows = [_archived(row) for row in live if getattr(row, "run_id", None) in owners]
                if rows:
                    self._upsert(spec, self.home.archive_db / shard / spec.filename, rows)
        self.home.archive_runs.mkdir(parents=True, exist_ok=True)
        for run_id in runs:
            source, target = self.home.runs / run_id, self.home.archive_runs / run_id
            if source.is_dir() and not target.exists():
                os.rename(source, target)
        fsync_folder(self.home.archive_runs)
        fsync_folder(self.home.runs)
        for spec in GLOBAL_TABLES:
            self._drop(spec, wanted)
        self._intent.unlink(missing_ok=True)

    def _upsert(self, spec: TableSpec[Any], path: Path, rows: Iterable[Row]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = {row.key: row for row in rows}

        def put(current: list[Row], index: Mapping[str, int]) -> list[Row]:
            kept = [new.pop(row.key, row) for row in current]
            return kept + list(new.values())

        # A store of its own: a shard grows with history, and the daemon's store keeps what it
        # writes cached; history reads go through `history_index.py` instead.
        TableStore().modify_indexed(spec, path, put)

    def _drop(self, spec: TableSpec[Any], runs: set[str]) -> None:
        path = self._live(spec)
        if not path.exists():
            return
        keys = [row.key for row in self.store.table(spec, path).rows_with("run_id", runs)]
        if not keys:
            return
        add_tombstones(self.home.deleted_rows, path, keys)
        gone = set(keys)
        self.store.modify(spec, path, lambda rows: [row for row in rows if row.key not in gone])


def _archived(row: Row) -> Row:
    """The row as its shard holds it: a catalog path follows the run's folder."""
    if isinstance(row, CatalogEntry) and row.run_id is not None:
        moved = archived_path(row.file_path, row.run_id)
        if moved != row.file_path:
            return row.model_copy(update={"file_path": moved})
    return row


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
