"""The home (SPEC §2): init never overwrites; the repository root is itself a ready home."""

from __future__ import annotations

from pathlib import Path

import pytest

from multiverse.errors import HomeError
from multiverse.home import SHIPPED_FILES, Home, init_home, require_home, resolve_home

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "multiverse" / "home_template"


def test_init_creates_the_layout_and_never_overwrites(tmp_path: Path) -> None:
    """`init` makes every folder and shipped file, and keeps a file a person changed."""
    home = Home(tmp_path / "h")
    created = init_home(home)
    for folder in ("inbox", "db/templates", "runs", "outputs", "assets", "guidelines"):
        assert (home.root / folder).is_dir()
    assert {home.relative(p) for p in created} >= set(SHIPPED_FILES)
    mine = home.root / "runtime-mapping.yaml"
    mine.write_text("tier_mapping: {}\n", encoding="utf-8")
    assert init_home(home) == []
    assert mine.read_text(encoding="utf-8") == "tier_mapping: {}\n"


def test_the_repository_root_ships_the_same_files_as_init() -> None:
    """The repo root is a home: its shipped files are byte-identical to what `init` writes."""
    for relative in SHIPPED_FILES:
        assert (REPO / relative).read_bytes() == (TEMPLATE / relative).read_bytes(), relative
    for folder in ("inbox", "runs", "outputs", "assets"):
        assert (REPO / folder / ".gitkeep").exists()


def test_home_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--home wins over MULTIVERSE_HOME, which wins over the current folder."""
    monkeypatch.setenv("MULTIVERSE_HOME", str(tmp_path / "env"))
    assert resolve_home(str(tmp_path / "opt")).root == (tmp_path / "opt").resolve()
    assert resolve_home(None).root == (tmp_path / "env").resolve()
    monkeypatch.delenv("MULTIVERSE_HOME")
    monkeypatch.chdir(tmp_path)
    assert resolve_home(None).root == tmp_path.resolve()


def test_an_uninitialised_folder_is_a_clear_error(tmp_path: Path) -> None:
    """Commands on a folder that is not a home say to run `multiverse init`."""
    with pytest.raises(HomeError, match="multiverse init"):
        require_home(Home(tmp_path))
