"""`multiverse delete-row`: the one way to remove a row the daemon would otherwise put back."""

from __future__ import annotations

from multiverse.home import Home
from multiverse.models import AssetType, CatalogEntry

from journey import cli
from stepping import builtin_collaborators


def _entry(name: str) -> CatalogEntry:
    return CatalogEntry(file_path=name, asset_type=AssetType.ORIGINAL_INPUT, summary="s")


def test_a_row_deleted_with_the_command_stays_deleted_a_row_erased_by_a_save_comes_back(
    home: Home,
) -> None:
    """The daemon restores what a save erased, but not what a person deleted on purpose."""
    crew = builtin_collaborators(home)
    crew.catalog.insert(_entry("assets/a.md"), _entry("assets/b.md"), _entry("assets/c.md"))
    result = cli(home, "delete-row", "db/knowledge_base_catalog.md", "assets/b.md")
    assert result.returncode == 0, result.stderr
    lines = crew.catalog.path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if "assets/c.md" not in line]  # erased by an editor's save
    crew.catalog.path.write_text("".join(kept), encoding="utf-8")
    assert [row.file_path for row in crew.catalog.rows()] == ["assets/a.md", "assets/c.md"]


def test_delete_row_says_clearly_what_is_wrong(home: Home) -> None:
    """Not a table, no such row, outside the home: one line each, exit 2, no traceback."""
    for args, expected in (
        (("README.md", "x"), "is not a table"),
        (("db/knowledge_base_catalog.md", "assets/none.md"), "has no row"),
        (("../elsewhere/db/process_runs.md", "x"), "not inside the home"),
    ):
        result = cli(home, "delete-row", *args)
        assert result.returncode == 2 and expected in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
