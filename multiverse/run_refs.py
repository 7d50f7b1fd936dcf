"""Short forms of a run id on the command line: `latest`, or any unique prefix or suffix.

`run-20261123-101500-001` may be written whole, as `latest` (the newest run), or as any part
that starts or ends only one run's id (`20261123-1015`, `-001` when only one run ends so, the
id without `run-`). The runs are the folders of runs/ and runs/archive/ (listings, no table read);
an ambiguous part names the runs it fits, and a part that fits none is the same unknown-run
error every command gives.
"""

from __future__ import annotations

import re

from multiverse.errors import UnknownRun, UserError
from multiverse.home import Home, run_folder_ids
from multiverse.models import RUN_ID

LATEST = "latest"
SHOWN = 5  # candidates named in an ambiguity message


def run_ids(home: Home) -> list[str]:
    """The run ids of the home's runs/ and runs/archive/ folders, oldest first (ids sort by
    time)."""
    try:
        return sorted({*run_folder_ids(home.runs), *run_folder_ids(home.archive_runs)})
    except OSError:
        return []


def pick(reference: str, known: list[str]) -> str:
    """The one run id `reference` names among `known` (pure); UnknownRun or UserError if none
    or several do."""
    if reference in known or (re.fullmatch(RUN_ID, reference) and not known):
        return reference
    if reference.casefold() == LATEST:
        if not known:
            raise UnknownRun(reference)
        return known[-1]
    bare = reference.removeprefix("run-")
    if not bare or not re.fullmatch(r"[0-9-]+", bare):
        raise UnknownRun(reference)
    fits = [run for run in known if run.startswith(f"run-{bare}") or run.endswith(bare)]
    if len(fits) == 1:
        return fits[0]
    if not fits:
        raise UnknownRun(reference)
    shown = ", ".join(fits[-SHOWN:])
    more = f" and {len(fits) - SHOWN} more" if len(fits) > SHOWN else ""
    raise UserError(f"{reference!r} fits {len(fits)} runs ({shown}{more}): give more of the id")


def resolve_run(home: Home, reference: str) -> str:
    """The run id a command-line reference names in this home."""
    if re.fullmatch(RUN_ID, reference):
        return reference  # whole: the command itself says if the home holds it
    return pick(reference, run_ids(home))
