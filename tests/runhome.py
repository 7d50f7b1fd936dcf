"""A home prepared for one run's tasks, without a daemon: the fixture assets and the folders."""

from __future__ import annotations

import shutil
from pathlib import Path

from multiverse.home import PHASE_FOLDERS, Home

ASSETS = Path(__file__).resolve().parent / "fixtures" / "assets"


def prepare_run_home(home: Home, run_id: str) -> Path:
    """Copy the fixture assets in and make the run's phase and output folders; the home's root."""
    shutil.copytree(ASSETS, home.root / "assets", dirs_exist_ok=True)
    for folder in PHASE_FOLDERS:
        home.run(run_id).phase_workspace(folder).mkdir(parents=True)
    home.run(run_id).outputs.mkdir(parents=True)
    return home.root.resolve()
