"""The file tools of SPEC §12: list, read, read many, write, glob, search, replace, mkdir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from executor.tools import ToolContext, ToolLimits, ToolRegistry, builtin_tools
from executor.tools.reading import glob_regex, split_glob
from multiverse.home import Home, init_home

RUN = "run-20260101-000000-001"
REPORT = "# 보고서\nRevenue 4.1 bn\nCosts 2.0 bn\n"
WS = f"runs/{RUN}/workspace"


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """An initialised home with a few assets and the run's folders."""
    home = Home(tmp_path / "home")
    init_home(home)
    (home.assets / "report.md").write_text(REPORT, "utf-8")
    (home.assets / "data").mkdir()
    (home.assets / "data" / "sales.csv").write_text("year,revenue\n2024,10\n2025,12\n", "utf-8")
    (home.assets / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    home.state.mkdir()
    home.run(RUN).workspace.mkdir(parents=True)
    return home


def make_registry(home: Home, limits: ToolLimits | None = None) -> ToolRegistry:
    """A registry with every tool for run RUN."""
    context = ToolContext(home=home.root, run_id=RUN, limits=limits or ToolLimits())
    return ToolRegistry(context, builtin_tools())


@pytest.fixture
def registry(home: Home) -> ToolRegistry:
    """A registry with default limits."""
    return make_registry(home)


def test_list_directory_shows_folders_first_and_hides_private_state(registry: ToolRegistry) -> None:
    """list_directory lists folders (with /) before files (with sizes) and hides .multiverse."""
    result = registry.call("list_directory", {"path": "assets"})
    assert result.ok
    assert result.output.splitlines() == [
        "assets/",
        "data/",
        "logo.png (17 bytes)",
        f"report.md ({len(REPORT.encode())} bytes)",
    ]
    top = registry.call("list_directory", {})
    assert "assets/" in top.output and ".multiverse" not in top.output


def test_list_directory_of_a_file_is_an_error_value(registry: ToolRegistry) -> None:
    """Listing a file is a failed result, not an exception."""
    assert not registry.call("list_directory", {"path": "assets/report.md"}).ok


def test_read_file_returns_utf8_text(registry: ToolRegistry) -> None:
    """read_file gives the whole text of a small file, Korean included."""
    result = registry.call("read_file", {"path": "assets/report.md"})
    assert result.ok
    assert result.output == REPORT
    assert result.data["truncated"] is False


def test_read_file_window_by_offset_and_limit(registry: ToolRegistry) -> None:
    """offset/limit select lines and the note says where to continue."""
    result = registry.call("read_file", {"path": "assets/report.md", "offset": 1, "limit": 1})
    assert result.ok
    assert result.output.startswith("Revenue 4.1 bn\n")
    assert "continue with offset=2" in result.output
    assert result.data["first_line"] == 2


def test_read_file_is_capped_in_size(home: Home) -> None:
    """A file over the size cap is cut at a line boundary with a truncation note."""
    (home.assets / "big.txt").write_text("".join(f"line {i}\n" for i in range(1000)), "utf-8")
    registry = make_registry(home, ToolLimits(read_max_bytes=100))
    result = registry.call("read_file", {"path": "assets/big.txt"})
    assert result.ok and result.data["truncated"] is True
    body = result.output.split("\n[truncated")[0]
    assert len(body.encode()) <= 100 and body.endswith("\n")
    assert "[truncated: showed lines 1-" in result.output


def test_read_file_of_one_huge_line_shows_its_beginning(home: Home) -> None:
    """A single line longer than the cap is cut, never read whole past the cap."""
    (home.assets / "line.txt").write_text("가" * 1000, "utf-8")
    registry = make_registry(home, ToolLimits(read_max_bytes=100))
    result = registry.call("read_file", {"path": "assets/line.txt"})
    assert result.ok
    assert result.output.startswith("가" * 33) and "�" not in result.output


def test_read_file_of_binary_is_an_error_value(registry: ToolRegistry) -> None:
    """A binary file is refused as a value."""
    result = registry.call("read_file", {"path": "assets/logo.png"})
    assert not result.ok and result.error is not None and "binary" in result.error


def test_read_file_missing_and_folder_are_error_values(registry: ToolRegistry) -> None:
    """A missing file or a folder is a failed result with a clear message."""
    assert "no such file" in str(registry.call("read_file", {"path": "assets/nope.md"}).error)
    assert "folder" in str(registry.call("read_file", {"path": "assets/data"}).error)


def test_read_file_of_non_utf8_text_says_so(home: Home, registry: ToolRegistry) -> None:
    """Latin-1 text is shown with replacement characters and a note."""
    (home.assets / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = registry.call("read_file", {"path": "assets/latin.txt"})
    assert result.ok and "caf�" in result.output and "not valid UTF-8" in result.output


def test_read_many_files_by_paths_and_globs(registry: ToolRegistry) -> None:
    """read_many_files expands globs, heads each file, skips binary ones and reports them."""
    result = registry.call("read_many_files", {"paths": ["assets/report.md", "assets/**/*"]})
    assert result.ok
    assert result.data["files"] == 2
    assert "--- assets/report.md ---\n# 보고서" in result.output
    assert "--- assets/data/sales.csv ---\nyear,revenue" in result.output
    assert "binary" in result.output


def test_read_many_files_respects_the_file_cap(home: Home) -> None:
    """No more files are read than the cap allows; the rest are named as skipped."""
    registry = make_registry(home, ToolLimits(read_many_max_files=1))
    result = registry.call("read_many_files", {"paths": ["assets/report.md", "assets/data/*.csv"]})
    assert result.ok and result.data["files"] == 1
    assert "over the cap" in result.output


def test_write_file_creates_folders_and_records_the_file(
    home: Home, registry: ToolRegistry
) -> None:
    """write_file writes UTF-8 atomically, creating parents, and the registry remembers it."""
    path = f"{WS}/ANALYZING/deep/notes.md"
    result = registry.call("write_file", {"path": path, "content": "분석 🙂\n"})
    assert result.ok
    assert (home.root / path).read_text("utf-8") == "분석 🙂\n"
    out = registry.call("write_file", {"path": f"outputs/{RUN}/memo.md", "content": "memo"})
    assert out.ok
    assert registry.written_files == {path, f"outputs/{RUN}/memo.md"}
    assert not [p for p in (home.root / path).parent.iterdir() if p.name.endswith(".tmp")]


def test_write_file_onto_a_folder_is_an_error_value(registry: ToolRegistry) -> None:
    """Writing a path that is a folder fails as a value."""
    assert not registry.call("write_file", {"path": WS, "content": "x"}).ok


def test_replace_exact_string(home: Home, registry: ToolRegistry) -> None:
    """replace swaps an exact string occurring the expected number of times."""
    target = home.root / WS / "a.md"
    target.write_text("a.b a.b c\n", "utf-8")
    result = registry.call(
        "replace",
        {"path": f"{WS}/a.md", "old_string": "a.b", "new_string": "x", "expected_replacements": 2},
    )
    assert result.ok
    assert target.read_text("utf-8") == "x x c\n"
    assert f"{WS}/a.md" in registry.written_files


@pytest.mark.parametrize(("old", "expected"), [("a.b", 1), ("a.b", 3), ("zzz", 1)])
def test_replace_with_wrong_count_leaves_file_identical(
    home: Home, registry: ToolRegistry, old: str, expected: int
) -> None:
    """A count mismatch is an error value and the file stays byte-identical."""
    target = home.root / WS / "a.md"
    original = "a.b a.b c\r\n\u00e9".encode()
    target.write_bytes(original)
    result = registry.call(
        "replace",
        {
            "path": f"{WS}/a.md",
            "old_string": old,
            "new_string": "x",
            "expected_replacements": expected,
        },
    )
    assert not result.ok and "not changed" in str(result.error)
    assert target.read_bytes() == original
    assert registry.written_files == frozenset()


def test_create_directory(home: Home, registry: ToolRegistry) -> None:
    """create_directory makes nested folders and accepts an existing one."""
    for _ in range(2):
        assert registry.call("create_directory", {"path": f"{WS}/charts/2025"}).ok
    assert (home.root / WS / "charts" / "2025").is_dir()
    (home.root / WS / "file").write_text("x", "utf-8")
    assert not registry.call("create_directory", {"path": f"{WS}/file"}).ok


def test_glob_newest_first(home: Home, registry: ToolRegistry) -> None:
    """glob lists matches newest first, recursing only through '**'."""
    for index, name in enumerate(["old.md", "mid.md", "new.md"]):
        path = home.assets / name
        path.write_text(name, "utf-8")
        os.utime(path, (1_000_000 + index, 1_000_000 + index))
    os.utime(home.assets / "report.md", (10, 10))
    (home.assets / "data" / "nested.md").write_text("x", "utf-8")
    os.utime(home.assets / "data" / "nested.md", (2_000_000, 2_000_000))
    top = registry.call("glob", {"pattern": "*.md", "path": "assets"})
    assert top.data["paths"] == [
        "assets/new.md",
        "assets/mid.md",
        "assets/old.md",
        "assets/report.md",
    ]
    deep = registry.call("glob", {"pattern": "assets/**/*.md"})
    assert deep.data["paths"][0] == "assets/data/nested.md"
    assert len(deep.data["paths"]) == 5


def test_glob_without_match_is_not_an_error(registry: ToolRegistry) -> None:
    """No match is a successful, empty answer."""
    result = registry.call("glob", {"pattern": "**/*.xlsx"})
    assert result.ok and result.data["paths"] == []


def test_search_file_content_by_regex(registry: ToolRegistry) -> None:
    """search_file_content answers file:line: text for each regex match, filtered by include."""
    result = registry.call("search_file_content", {"pattern": r"\d+\.\d bn", "path": "assets"})
    assert result.ok
    assert result.output.splitlines() == [
        "assets/report.md:2: Revenue 4.1 bn",
        "assets/report.md:3: Costs 2.0 bn",
    ]
    only_csv = registry.call("search_file_content", {"pattern": "^20", "include": "*.csv"})
    assert only_csv.output.splitlines() == [
        "assets/data/sales.csv:2: 2024,10",
        "assets/data/sales.csv:3: 2025,12",
    ]


def test_search_file_content_is_capped(home: Home) -> None:
    """Matches beyond the cap are cut with a note."""
    registry = make_registry(home, ToolLimits(search_max_matches=1))
    result = registry.call("search_file_content", {"pattern": "bn", "path": "assets/report.md"})
    assert result.ok and result.data["matches"] == 1 and result.data["truncated"] is True


def test_search_with_a_bad_regex_is_an_error_value(registry: ToolRegistry) -> None:
    """An invalid regular expression is reported, not raised."""
    result = registry.call("search_file_content", {"pattern": "("})
    assert not result.ok and "invalid regular expression" in str(result.error)


def test_glob_pattern_translation() -> None:
    """'**/' spans zero or more folders, '*' and '?' stay within one name, classes work."""
    assert glob_regex("**/*.md").fullmatch("a.md")
    assert glob_regex("**/*.md").fullmatch("x/y/a.md")
    assert not glob_regex("*.md").fullmatch("x/a.md")
    assert glob_regex("data/?.csv").fullmatch("data/a.csv")
    assert glob_regex("[!a]*.txt").fullmatch("b.txt")
    assert not glob_regex("[!a]*.txt").fullmatch("a.txt")
    assert glob_regex("a+b(1).md").fullmatch("a+b(1).md")
    assert split_glob("assets/data/**/*.csv") == ("assets/data", "**/*.csv")
    assert split_glob("*.md") == (".", "*.md")
