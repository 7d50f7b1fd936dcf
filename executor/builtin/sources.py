"""Reading references: files and folders inside the home turned into digests, confined to it, and
the one-line extractive summaries of files for the knowledge catalog.

Also here: catalog lines that say what a file holds: a table by its profile (its columns with their
units, the period it covers, its row count; never a sum of codes), a document by its first
meaningful lines as the file writes them (no front matter, no bare link, no rule or fence).
"""

from __future__ import annotations

import html
import io
import json
import os
import re
from pathlib import Path

import structlog
import yaml

from executor.builtin.charts import svgs_in
from executor.builtin.digest import digest_document, digest_note, digest_scan, digest_text
from executor.builtin.evidence import (
    Digest,
    is_builtin_document,
    merge,
    ranked_points,
    read_document,
)
from executor.builtin.tables import describe_data, scan_csv
from executor.builtin.text import shorten
from multiverse.documents import (
    MAX_TEXT_BYTES,
    Converted,
    convert,
    document_note,
    html_document,
    look,
    open_regular,
    sniff,
    source_text,
    text_encoding,
    why_unread,
)
from multiverse.documents import decode as decode
from multiverse.errors import MultiverseError
from multiverse.home import Home
from multiverse.tabular import profile

log = structlog.get_logger(__name__)

DESCRIPTION_SUFFIXES = (".md", ".markdown", ".txt")
DESCRIPTION_LIMIT = 60_000  # characters of a description read for the table's units
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_BARE_LINK = re.compile(
    r"^(?:[-*+]\s+)?(?:<?(?:https?|ftp)://\S+>?|\[[^\]]*\]\((?:https?|ftp)://[^)]+\)|www\.\S+)$",
    re.IGNORECASE,
)
_MARKUP_ONLY = re.compile(r"^(?:[-=_*~`#|:+\s]+|<!--.*-->|\|?[\s:|-]+\|?)$")
_HEADING = re.compile(r"^#{1,6}\s+")


def table_line(path: Path) -> str | None:
    """The profile summary of a table (the documents beside it that describe it read for its
    units); None when it cannot be profiled."""
    path = path.absolute()
    try:
        found = profile(path, root=path.parent, descriptions=_descriptions(path))
    except Exception as error:  # not a table after all: the caller describes it otherwise
        log.info("table_not_profiled", path=str(path), error=str(error)[:200])
        return None
    return found.summary()


def _stem(path: Path) -> str:
    return re.sub(r"[^0-9a-z가-힣]+", "", path.stem.lower())


def _descriptions(table: Path) -> list[str]:
    """The texts of the documents beside a table with its name (`tips.md` for `tips.csv`)."""
    stem = _stem(table)
    texts = []
    try:
        siblings = sorted(table.parent.iterdir())
    except OSError:
        return []
    for sibling in siblings:
        other = _stem(sibling)
        if (
            sibling == table
            or sibling.suffix.lower() not in DESCRIPTION_SUFFIXES
            or not stem
            or not other
            or not (other == stem or other.startswith(stem) or stem.startswith(other))
        ):
            continue
        text, _note = source_text(table.parent, sibling)
        if text:
            texts.append(text[:DESCRIPTION_LIMIT])
    return texts


_LOCATION = re.compile(r"^#{1,6}\s+(?:Page \d+|Slide \d+)(?::\s*|$)", re.MULTILINE)


def document_lines(markdown: str, limit: int) -> str:
    """The first meaningful lines of a converted document: the location headings the
    conversion adds (`## Page 2`, `## Slide 3: `) are not the file's words."""
    return first_lines(_LOCATION.sub("", markdown), limit)


def meaningful_lines(text: str) -> list[str]:
    """A document's lines that say something, in order, as the file writes them: without
    front matter, empty lines, bare links, rules, fences and table separators (a heading's
    `#` marks are markup, not words)."""
    body = _FRONT_MATTER.sub("", text, count=1)
    found = []
    for raw in body.splitlines():
        line = " ".join(raw.split())
        if not line or _BARE_LINK.match(line) or _MARKUP_ONLY.match(line):
            continue
        found.append(_HEADING.sub("", line))
    return found


def first_lines(text: str, limit: int) -> str:
    """The first meaningful lines of a text that fit in `limit` characters (the first one cut
    with "…" when it alone is longer); "" when it has none."""
    lines = meaningful_lines(text)
    if not lines:
        return ""
    kept = [lines[0]]
    for line in lines[1:]:
        if len(" ".join([*kept, line])) > limit:
            break
        kept.append(line)
    joined = " ".join(kept)
    return joined if len(joined) <= limit else joined[: limit - 1].rstrip() + "…"


class TaskError(MultiverseError):
    """A task the builtin engine cannot perform as given; becomes a FAILED result signal."""


def inside(path: Path, folder: Path) -> bool:
    """Whether `path` (resolved, symlinks followed) lies in `folder`."""
    return path.resolve().is_relative_to(folder.resolve())


def resolve_reference(home: Path, reference: str) -> Path:
    """An existing file or folder named relative to the home; refused if it leaves the home."""
    candidate = Path(reference.strip())
    path = (candidate if candidate.is_absolute() else home / candidate).resolve()
    if not inside(path, home):
        raise TaskError(f"reference {reference!r} resolves outside the home; refused")
    if not path.exists():
        raise TaskError(f"reference {reference!r} does not exist (looked for {path})")
    return path


def resolve_output(home: Path, run_id: str, output_path: str) -> Path:
    """The task's output file; it must lie in runs/<run_id>/workspace/ or outputs/<run_id>/."""
    if not output_path.strip():
        raise TaskError("the task has no output_path to write to")
    candidate = Path(output_path.strip())
    path = (candidate if candidate.is_absolute() else home / candidate).resolve()
    run = Home(home).run(run_id)
    if not (inside(path, run.workspace) or inside(path, run.outputs)):
        raise TaskError(
            f"output_path {output_path!r} is outside runs/{run_id}/workspace/ and "
            f"outputs/{run_id}/; refused"
        )
    if path.is_dir() or output_path.endswith("/"):
        path = path / "report.md"
    return path


def in_outputs(home: Path, run_id: str, path: Path) -> bool:
    """Whether a path lies in the run's outputs folder (a deliverable)."""
    return inside(path, Home(home).run(run_id).outputs)


def relative(home: Path, path: Path) -> str:
    """A path as written in the tables: relative to the home, forward slashes."""
    return Home(home).relative(path)


MAX_BYTES = MAX_TEXT_BYTES
MAX_FOLDER_FILES = 50
TABLE_SUFFIXES = (".csv", ".tsv")
_ENCODING_PROBE = 1 << 16  # bytes that tell a CSV's encoding


def entries(path: Path) -> list[Path]:
    """`path` itself unless it is a folder, else the folder's visible entries that are not real
    folders (recursively, sorted, capped): linked folders, pipes and links are entries too."""
    if not path.is_dir():
        return [path]
    found = sorted(
        p
        for p in path.rglob("*")
        if (p.is_symlink() or not p.is_dir())
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    return found[:MAX_FOLDER_FILES]


def expand(path: Path, home: Path | None = None) -> list[Path]:
    """The files of `entries(path)` that may be read (`multiverse.unread`), judged inside
    `home` (by default inside `path` itself, the strictest); the others are left out."""
    root = home if home is not None else path
    return [p for p in entries(path) if why_unread(look(p, root)) is None]


def read_references(home: Path, references: list[str]) -> tuple[list[str], list[Digest]]:
    """The files the references name (relative to home) and their merged digests."""
    files: list[str] = []
    digests: list[Digest] = []
    for reference in references:
        for path in entries(resolve_reference(home, reference)):
            files.append(relative(home, path))
            digests.extend(read_file(home, path))
    return files, merge(digests)


def read_file(home: Path, path: Path) -> list[Digest]:
    """The digests of one file: its own, or those a builtin document cites.

    A file that may not be read (a link leaving the home, a broken link, a pipe: see
    `multiverse.unread`) is a note saying why; nothing is opened that could block.
    """
    source = relative(home, path)
    unread = why_unread(look(path, home))
    if unread is not None:
        return [digest_note(source, "unreadable", path.name, unread.note)]
    if path.suffix.lower() in TABLE_SUFFIXES:
        return [read_table(source, path)]
    if sniff(path) is not None and not _drawn_chart(home, path):
        return [digest_document(source, convert(path), path.stem)]
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_BYTES)
    except OSError as error:
        return [digest_note(source, "unreadable", path.name, f"unreadable: {error.strerror}")]
    text = decode(data)
    if text is None:
        return [digest_note(source, "binary", path.name, f"binary file, {size:,} bytes")]
    return digest_content(source, path.suffix.lower(), text, path.stem)


def read_table(source: str, path: Path) -> Digest:
    """A CSV (or TSV) file's digest over all its rows, read as a stream (`tablescan`)."""
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            encoding = text_encoding(handle.read(_ENCODING_PROBE))
            if encoding is None:
                return digest_note(source, "binary", path.name, f"binary file, {size:,} bytes")
            handle.seek(0)
            # errors="replace": a stray byte deep in a large file does not lose the table.
            with io.TextIOWrapper(handle, encoding, errors="replace", newline="") as lines:
                return digest_scan(source, scan_csv(lines), path.stem)
    except OSError as error:
        return digest_note(source, "unreadable", path.name, f"unreadable: {error.strerror}")


def is_chart_page(text: str, in_run_folders: bool) -> bool:
    """Whether an HTML text is a chart page a run drew (an `<svg` in runs/ or outputs/, or the
    engine's banner): it stays a chart to link, not a page to read."""
    return "<svg" in text and (in_run_folders or is_builtin_document(text))


def _drawn_chart(home: Path, path: Path) -> bool:
    if path.suffix.lower() not in (".html", ".htm"):
        return False
    try:
        with open_regular(path) as handle:
            text = decode(handle.read(MAX_BYTES)) or ""
    except OSError:
        return False
    return is_chart_page(text, inside(path, Home(home).runs) or inside(path, Home(home).outputs))


def digest_content(source: str, suffix: str, text: str, stem: str) -> list[Digest]:
    """The digests of decoded content, chosen by the file's suffix."""
    if suffix in TABLE_SUFFIXES:
        return [digest_scan(source, scan_csv(io.StringIO(text, newline="")), stem)]
    if suffix in (".json", ".yaml", ".yml"):
        try:
            shape = describe_data(text, suffix != ".json")
        except (json.JSONDecodeError, yaml.YAMLError) as error:
            shape = f"not valid {suffix[1:].upper()}: {str(error).splitlines()[0]}"
        return [digest_note(source, "data", stem, f"{suffix[1:].upper()} {shape}")]
    if suffix == ".svg" or (suffix in (".html", ".htm") and "<svg" in text):
        return [digest_note(source, "markup", stem, "chart (HTML with an SVG image)")]
    if suffix in (".html", ".htm"):
        return [digest_document(source, html_document(text), stem)]
    if is_builtin_document(text):
        return read_document(text)
    kind = "markdown" if suffix in (".md", ".markdown") else "text"
    return [digest_text(source, text, kind, stem)]


LIMIT = 300
PROFILED_SUFFIXES = (".csv", ".tsv", ".tab", ".xlsx", ".xlsm", ".json")  # tables profiled first
_H1 = re.compile(r"^# (.+)$", re.MULTILINE)
_HTML_H1 = re.compile(r"<h1>(.*?)</h1>", re.DOTALL)
_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


def _line(text: str) -> str:
    return shorten(" ".join(text.split()), LIMIT)


def summarize_text(text: str, suffix: str, name: str) -> str:
    """The summary of decoded content: its title and one or two key sentences."""
    if suffix in (".html", ".htm", ".svg"):
        return _summarize_html(text, suffix, name, in_run_folders=False)
    if suffix not in TABLE_SUFFIXES and is_builtin_document(text):
        title = _H1.search(text)
        points = ranked_points(read_document(text), 2)
        head = title.group(1) if title else name
        return _line(f"{head}. " + " ".join(p.text for p in points))
    digest = digest_content(name, suffix, text, Path(name).stem)[0]
    if digest.kind == "csv":
        return _table_line(digest)
    if digest.note:
        return _line(f"{digest.title}: {digest.note}")
    return first_lines(text, LIMIT) or _line(digest.title)


def _table_line(digest: Digest) -> str:
    if digest.kind != "csv":  # the file could not be read as a table: say why
        return _line(digest.note)
    if digest.table is not None and not digest.table.columns:
        return "empty file"
    lead = digest.points[0].text if digest.points else ""
    shape = "; ".join(fact for fact in digest.facts if not fact.startswith("labels: "))
    return _line(f"{digest.title}: {shape}. {lead}")


def summarize_document(converted: Converted, name: str) -> str:
    """A document's summary: its kind and size, title and key sentences ("PDF, 3 pages: …"),
    or, when it cannot be read, why."""
    if converted.markdown is None:
        return _line(document_note(converted))
    digest = digest_document(name, converted, Path(name).stem)
    head = converted.label
    if converted.note:
        head += f" ({shorten(converted.note, 80)})"
    if converted.kind == "xlsx":  # a workbook has no prose: its sheets, then its first column
        sheets = [h.text.removeprefix("Sheet: ") for h in digest.headings if h.level == 2]
        sentences = [f"Sheets: {', '.join(sheets)}.", *[p.text for p in digest.points[:1]]]
        return _line(f"{head}: {digest.title}. " + " ".join(sentences))
    lines = document_lines(converted.markdown, LIMIT - len(head) - 2)
    return _line(f"{head}: {lines or digest.title}")


def _summarize_html(text: str, suffix: str, name: str, in_run_folders: bool) -> str:
    """A page by its main text; a chart page (`sources.is_chart_page`) by its charts."""
    if suffix == ".svg" or is_chart_page(text, in_run_folders):
        return _summarize_markup(text, name)
    page = html_document(text)
    if page.markdown is None and svgs_in(text):  # charts and no prose: a chart page after all
        return _summarize_markup(text, name)
    return summarize_document(page, name)


def _summarize_markup(text: str, name: str) -> str:
    heading = _HTML_H1.search(text)
    titles = [html.unescape(t) for svg in svgs_in(text) for t in _SVG_TITLE.findall(svg)[:1]]
    head = html.unescape(heading.group(1)) if heading else name
    if titles:
        return _line(f"{head}: {len(titles)} chart(s): " + "; ".join(titles))
    if "No figures were found" in text:
        return _line(f"{head}: no figures were found, no chart drawn")
    return _line(f"{head}: HTML document")


def summarize_path(path: Path) -> str:
    """The summary of a file on disk; binary or unreadable files are described, not read."""
    suffix = path.suffix.lower()
    if suffix in PROFILED_SUFFIXES and why_unread(look(path, path.parent)) is None:
        profiled = table_line(path)
        if profiled is not None:
            return _line(profiled)
    if suffix in TABLE_SUFFIXES:
        return _table_line(read_table(path.name, path))
    if suffix not in (".html", ".htm") and sniff(path) is not None:
        return summarize_document(convert(path), path.name)
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_BYTES)
    except OSError as error:
        return f"unreadable file ({error.strerror})"
    text = decode(data)
    if text is None:
        return f"binary file, {size:,} bytes"
    if not text.strip():
        return "empty file"
    if suffix in (".html", ".htm"):
        # No home is known here: a run's folders are told by their names.
        in_run_folders = bool({"runs", "outputs"}.intersection(path.parent.parts))
        return _summarize_html(text, suffix, path.name, in_run_folders)
    return summarize_text(text, suffix, path.name)
