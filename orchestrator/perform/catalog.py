"""Keeping the knowledge catalog (SPEC §6.6 T03, §7.5.4): every known file with a summary."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from multiverse.atomic import atomic_write_text
from multiverse.documents import (
    Kind,
    Sighting,
    Unread,
    is_note,
    look,
    open_regular,
    why_unread,
)
from multiverse.models import AssetType, CatalogEntry
from multiverse.roles import Message, MessageKind, ProducedFile
from orchestrator.crew import Collaborators

HASHES_FILE = "catalog_hashes.json"
SUMMARY_LIMIT = 300
SUMMARY_WORKERS = 8  # files summarised at once by T03 (model calls are bounded per model)
NOTE_DIGEST = "note:"  # catalog_hashes.json: the hash of a note's reason, not of any content


def register(
    crew: Collaborators, run_id: str | None, task_id: str | None, produced: Iterable[ProducedFile]
) -> None:
    """Add or refresh catalog rows for produced files, written at once (idempotent).

    The step that produced the files writes their rows before it records itself as done, so a
    crash in between redoes the step, and its rows with it.
    """
    entries = [
        CatalogEntry(
            file_path=item.path,
            run_id=run_id,
            asset_type=item.asset_type,
            source_task_id=task_id,
            summary=_one_line(item.summary),
        )
        for item in produced
    ]
    if entries:
        crew.catalog_rows.write(entries)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SUMMARY_LIMIT else flat[: SUMMARY_LIMIT - 1] + "…"


def input_files(crew: Collaborators) -> list[tuple[Path, AssetType, str | None]]:
    """Every visible entry under assets/ and guidelines/ that is not a real folder, sorted.

    Linked folders are not followed (they are entries of their own, even assets/ itself); a
    folder that cannot be listed is an entry too, with the reason (strerror) as third value.
    """
    found: list[tuple[Path, AssetType, str | None]] = []
    for folder, kind in (
        (crew.home.assets, AssetType.ORIGINAL_INPUT),
        (crew.home.guidelines, AssetType.GUIDELINE_DOC),
    ):
        if folder.is_symlink():
            found.append((folder, kind, None))
        elif folder.is_dir():
            found += [(path, kind, error) for path, error in _walk(folder)]
    return sorted(found, key=lambda item: item[0])


def _walk(folder: Path) -> Iterator[tuple[Path, str | None]]:
    try:
        with os.scandir(folder) as listing:
            entries = [entry for entry in listing if not entry.name.startswith(".")]
    except OSError as error:
        yield folder, error.strerror or str(error)
        return
    for entry in entries:
        try:
            real_folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            real_folder = False
        if real_folder:
            yield from _walk(Path(entry.path))
        else:
            yield Path(entry.path), None


def refresh_inputs(crew: Collaborators, run_id: str | None = None) -> int:
    """Catalog new or changed inputs (by content hash); unchanged ones are not re-summarised.

    An input that may not be read (`multiverse.unread`) gets a row whose summary is a note
    saying why, written again only when the reason changes; its content is never read. With
    `run_id`, one NOTICE tells the run's user which files were not read and what to do.
    """
    index_path = crew.home.state / HASHES_FILE
    try:
        known: dict[str, str] = json.loads(index_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        known = {}
    catalogued = {row.file_path for row in crew.catalog.rows()}
    skipped: list[tuple[str, Unread]] = []
    todo: list[tuple[Path, str, AssetType, _Seen]] = []
    for path, kind, listing_error in input_files(crew):
        relative = path.relative_to(crew.home.root).as_posix()  # a link names its own place
        seen = _Seen.of(crew.home.root, path, listing_error)
        if seen.unread is not None:
            skipped.append((relative, seen.unread))
        if known.get(relative) != seen.digest or relative not in catalogued:
            todo.append((path, relative, kind, seen))
    summaries = _summaries(crew, [(path, seen) for path, _, _, seen in todo])
    produced: list[ProducedFile] = []
    hashes = dict(known)
    for (_, relative, kind, seen), summary in zip(todo, summaries, strict=True):
        if summary is None:  # replaced while it was summarised: the next T03 looks again
            continue
        hashes[relative] = seen.digest
        produced.append(ProducedFile(path=relative, asset_type=kind, summary=summary))
    register(crew, None, None, produced)
    if hashes != known:
        atomic_write_text(index_path, json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    if run_id is not None and skipped:
        text = unread_notice(skipped)
        notice = Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text})
        crew.speaker.tell(notice, once="unread-inputs")  # T03 redone after a crash: said once
    return len(produced)


@dataclass(frozen=True)
class _Seen:
    """One input as T03 found it: its content hash and identity, or why it is not read."""

    digest: str
    unread: Unread | None = None
    identity: tuple[int, int] | None = None

    @classmethod
    def of(cls, home: Path, path: Path, listing_error: str | None) -> _Seen:
        sighting = Sighting(Kind.FOLDER, error=listing_error) if listing_error else look(path, home)
        unread = why_unread(sighting)
        if unread is None:
            try:
                return _hashed(path)
            except OSError as error:
                unread = why_unread(replace(sighting, error=error.strerror or str(error)))
        assert unread is not None  # a sighting with an error always has a reason
        # The note's own hash: a note is written again only when its reason changes.
        return cls(NOTE_DIGEST + hashlib.sha256(unread.reason.encode()).hexdigest(), unread)


def _hashed(path: Path) -> _Seen:
    """A regular file's SHA-256 and identity, read without ever blocking."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        info = os.fstat(handle.fileno())
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return _Seen(digest.hexdigest(), identity=(info.st_dev, info.st_ino))


def _summaries(crew: Collaborators, files: list[tuple[Path, _Seen]]) -> list[str | None]:
    """Each file's catalog summary (a note for one that may not be read), in order.

    Several are summarised at once (at most SUMMARY_WORKERS): with a model each summary is a
    call, and the gateway bounds the calls in flight per model (`multiverse.gateway.limits`).
    """

    def one(item: tuple[Path, _Seen]) -> str | None:
        path, seen = item
        return seen.unread.note if seen.unread is not None else _summary(crew, path, seen)

    if len(files) < 2:
        return [one(item) for item in files]
    with ThreadPoolExecutor(SUMMARY_WORKERS, thread_name_prefix="summary") as pool:
        return list(pool.map(one, files))


def _summary(crew: Collaborators, path: Path, seen: _Seen) -> str | None:
    """The Executor's summary of a file, or None when the file was replaced meanwhile.

    The file is looked at again after the summary: had it become something else (a link
    leaving the home, say), what the summary read may not enter the catalog.
    """
    summary = crew.executor.summarize(path)
    again = look(path, crew.home.root)
    try:
        identity = os.stat(path)
    except OSError:
        return None
    if why_unread(again) is not None or (identity.st_dev, identity.st_ino) != seen.identity:
        return None
    # A file's own text never passes for a note.
    return f"{path.name}: {summary}" if is_note(summary) else summary


def unread_notice(skipped: list[tuple[str, Unread]]) -> str:
    """The user's notice of the inputs that were not read, each with why and what to do."""
    lines = [
        f"- `{path}`: {unread.reason}. To use it: {unread.advice}." for path, unread in skipped
    ]
    count = f"{len(skipped)} file{'s' if len(skipped) > 1 else ''}"
    return (
        f"{count} in assets/ or guidelines/ {'were' if len(skipped) > 1 else 'was'} not read; "
        "the run goes on without them, and the catalog notes each one:\n\n" + "\n".join(lines)
    )
