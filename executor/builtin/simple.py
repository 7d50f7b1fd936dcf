"""SIMPLE_TASK requests answered offline, or declined so that they become a run (SPEC §5).

What the offline engine can do as a simple task, in this order of precedence:
- count words in a file;
- a measure summed per label as a table ("show revenue by country as a table");
- a CSV as a markdown table ("convert the revenue CSV to a table");
- summarise a document, named by its path or by its topic ("the Nordic charging brief");
- list the assets, each with its size and one-line summary;
- say which files are about something ("which file talks about Korea?");
- answer a question over a table, a lookup or a computation, with its figure and citation in
  the requester's language (`quick`: the offline rules and the spec's validator);
- quote a figure asked for by name where the assets state it ("Norway's revenue in 2023?").
A file is named by its path or resolved by its topic (`simple_resolve`). Anything else, or a
topic that names no file clearly, is declined: `answer` returns a `Declined` (with why, when
there is a reason to give) and the request becomes a run. A path the person named that cannot
be used (outside the home, missing, not a CSV) is answered with the reason. Every reply opens
with the offline banner (in Korean for a Korean question answered from a table) and cites its
files.

Also here: a document summarised for a person who asked for it.

Also here: questions over the home's tables answered at once (SPEC §5): a lookup or a
computation asked as a SIMPLE_TASK is read by the offline rules into a request spec, checked
against the tables by the one validator, and answered with each figure and its citation, in the
requester's language.

A request that asks more than its questions (a chart, a memo, a length), or a question the
tables cannot answer now, is declined with why: it becomes a run, and the user is told the
reason at `submit` and in the proposal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.evidence import BANNER, Digest, Point, figures_table, key_figures, point_line
from executor.builtin.simple_lookup import (
    TABLE_SUFFIXES,
    Resolved,
    asked_terms,
    asset_files,
    convert_csv,
    named_target,
    profile,
    quote_figures,
    ranked,
    read_text,
    resolve,
    table_by,
)
from executor.builtin.sources import (
    MAX_BYTES,
    TaskError,
    decode,
    read_references,
    relative,
    summarize_path,
)
from executor.builtin.tables import format_number
from executor.builtin.text import word_count
from multiverse.documents import look, open_regular, why_unread
from multiverse.home import Home
from multiverse.roles import Declined
from multiverse.spec import RequestSpec, check_spec, scan_home
from offline import read_request, why_run

BANNER_KO = "> multiverse 내장 엔진이 오프라인으로 만든 답입니다 (언어 모델을 쓰지 않았습니다)."

def table_spec(request: str, home: Path) -> RequestSpec:
    """The request read by the offline rules against the home's tables, checked."""
    scan = scan_home(Home(home))
    return check_spec(read_request(request, [], scan), scan, home)


def table_answer(request: str, home: Path) -> str | None:
    """The whole reply (its banner first) to a request whose every question over a table is
    answered now; None when the rules read none, or cannot answer one at once."""
    spec = table_spec(request, home)
    if not spec.questions or why_run(spec):
        return None
    return f"{banner(spec.language)}\n\n{render_answer(spec)}\n"


def banner(language: str) -> str:
    """The offline banner in the reply's language."""
    return BANNER_KO if language == "ko" else BANNER


def render_answer(spec: RequestSpec) -> str:
    """Each question in the request's words, then its answer with figure and citation."""
    parts: list[str] = []
    for question in spec.questions:
        asked = " ".join(question.reading.phrase.split())
        parts += [f"**{asked}**" if asked else "", question.answer]
    return "\n\n".join(part for part in parts if part)


KEY_POINTS = 6
KEY_FIGURES = 6


def in_document_order(points: list[Point], text: str) -> list[Point]:
    """The points ordered by where they stand in `text` (not found: last; pure)."""

    def where(point: Point) -> int:
        at = text.find(point.text[:40])
        return at if at >= 0 else len(text)

    return sorted(points, key=where)


def render_summary(digest: Digest, text: str) -> str:
    """The summary of one source's digest; `text` is its content, for the sentences' order."""
    lines = [f"## Summary of `{digest.source}` — {digest.title}", ""]
    facts = [fact for fact in digest.facts if not fact.startswith("sections: ")]
    if facts:
        lines.append(f"_{'; '.join(facts)}._")
        lines.append("")
    sections = [h.text for h in digest.headings if h.level == 2]
    if sections:
        lines += ["### Sections", "", *(f"- {section}" for section in sections), ""]
    points = in_document_order(digest.points[:KEY_POINTS], text)
    if points:
        lines += ["### Key sentences", "", *(point_line(point) for point in points), ""]
    figures = key_figures([digest], KEY_FIGURES)
    if figures:
        lines += ["### Key figures", "", figures_table(figures), ""]
    if digest.note:
        lines += [digest.note, ""]
    return "\n".join(lines).rstrip()


def summarize_document(home: Path, path: Path) -> str:
    """The summary of one file of the home, its sentences and figures cited to it."""
    files, digests = read_references(home, [relative(home, path)])
    own = [digest for digest in digests if digest.source in files] or digests
    if not own:
        raise TaskError(f"`{relative(home, path)}` holds nothing to summarise")
    text = _text(path)
    return "\n\n".join(render_summary(digest, text) for digest in own)


def _text(path: Path) -> str:
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            return decode(handle.read(MAX_BYTES)) or ""
    except OSError:
        return ""


_PATH = re.compile(r"[`'\"]?((?:\.{0,2}/)?[\w.\-/가-힣]+\.[A-Za-z0-9]{1,6})[`'\"]?")
_I = re.IGNORECASE | re.DOTALL
# "assets" as a folder, not the start of a path ("in assets/q3.md" names a file).
_ASSETS = r"(?:assets?|files|documents|folder)/?(?![\w.\-/])"
_LIST = re.compile(
    rf"\b(?:list|show|ls)\b.*\b{_ASSETS}|\bassets?\b.*\blist\b"
    rf"|\b(?:what|which)\b.*\b(?:in|inside)\s+(?:the\s+|my\s+)?{_ASSETS}"
    r"|\bwhat\s+(?:files|documents|assets)\b"
    r"|(?:자산|assets?|파일|문서|폴더)\s*목록|(?:자산|assets?)\s*(?:폴더)?에?\s*(?:뭐|무엇|어떤)",
    _I,
)
_WHICH = re.compile(
    r"\bwhich\s+(?:file|document|asset|csv|report|source)s?\b"
    r"|(?:어느|어떤|무슨)\s*(?:파일|문서|자료)",
    _I,
)
_CONVERT = re.compile(
    r"\bconvert\b|\bto markdown\b|\b(?:as|into|to)\s+(?:an?\s+)?(?:markdown\s+)?table\b"
    r"|마크다운|변환|표로",
    _I,
)
_SUMMARIZE = re.compile(
    r"\bsummar(?:i[sz]e|y)\b|요약|\bgist\b|\boverview\b|\bkey points\b",
    _I,
)
_COUNT = re.compile(r"\bcount\b.*\bwords?\b|\bword count\b|단어\s*수", _I)
_QUESTION = re.compile(
    r"\?\s*$|^\s*(?:what|which|how|when|who|where|is|are|was|were|does|do|did)\b"
    r"|얼마|몇|알려|뭐야|인가요?\s*$|나요\s*$",
    _I,
)


def _size(size: int) -> str:
    for unit, limit in (("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= limit:
            return f"{size / limit:.1f} {unit}"
    return f"{size} bytes"


def list_assets(home: Path) -> str:
    """The files of assets/ with their sizes and one-line summaries."""
    folder = home / "assets"
    files = sorted(
        p
        for p in (folder.rglob("*") if folder.is_dir() else [])
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        return "`assets/` is empty: put the material to work on there."
    lines = [f"`assets/` holds {len(files)} file(s):", ""]
    for path in files:
        unread = why_unread(look(path, home))
        summary = unread.note if unread is not None else summarize_path(path)
        lines.append(f"- `{relative(home, path)}` ({_size(path.stat().st_size)}) — {summary}")
    return "\n".join(lines)


def count_words(home: Path, path: Path) -> str:
    """Words, lines and characters of a text file."""
    text = read_text(path)
    return (
        f"`{relative(home, path)}`: {format_number(word_count(text))} words, "
        f"{format_number(len(text.splitlines()))} lines, {format_number(len(text))} characters."
    )


def which_files(home: Path, request: str) -> str | None:
    """The assets whose name or title holds the request's words, best first; None if none."""
    found = ranked(asked_terms(request), [profile(path) for path in asset_files(home)])
    if not found:
        return None
    lines = ["The assets whose name, title or summary hold the words asked about:", ""]
    for item in found:
        words = ", ".join(f'"{word}"' for word in item.matched)
        lines.append(f"- `{relative(home, item.path)}` ({words}) — {summarize_path(item.path)}")
    return "\n".join(lines)


def answer(request: str, home: Path) -> str | Declined:
    """The reply to a simple request (markdown), or a decline when the engine cannot do it
    offline (with why, when it read a question it cannot answer at once).

    A path the request names that cannot be used is answered with the reason.
    """
    home = home.resolve()
    try:
        body = _dispatch(_body(request), named_paths(request), home)
    except TaskError as error:
        body = f"Could not do that: {error}."
    if body is None or isinstance(body, Declined):
        return body or Declined()
    reply = body if isinstance(body, Reply) else Reply(body)
    return f"{reply.banner}\n\n{reply.text}\n"


@dataclass(frozen=True)
class Reply:
    """A reply's text and the banner it opens with (in the reply's language)."""

    text: str
    banner: str = BANNER


def _body(request: str) -> str:
    """The request without its front matter."""
    return re.sub(r"\A---\n.*?\n---\n", "", request, flags=re.S)


def named_paths(request: str) -> list[str]:
    """The file paths a request names, those naming their folder first."""
    named = [m.group(1) for m in _PATH.finditer(_body(request))]
    # A real path usually names its folder; "e.g." and the like do not.
    return [n for n in named if "/" in n] + [n for n in named if "/" not in n]


def is_known_command(request: str) -> bool:
    """Whether the request is one of the engine's exact commands (a path named, or a listing)."""
    text = _body(request)
    targeted = bool(named_paths(request)) and any(
        pattern.search(text) for pattern in (_COUNT, _CONVERT, _SUMMARIZE)
    )
    return targeted or _LIST.search(text) is not None


def _dispatch(text: str, named: list[str], home: Path) -> str | Reply | Declined | None:
    if _COUNT.search(text):
        target = resolve(home, text, named)
        return _with_how(home, target, count_words) if target else None
    spec = table_spec(text, home)
    if spec.questions:  # a question over a table: answered from it, or declined with why
        answered = _table_question(spec, text, named, home)
        if answered is not None:
            return answered
    tables = asset_files(home, TABLE_SUFFIXES)
    by = table_by(home, text, tables)
    if by is not None:
        return by
    if _CONVERT.search(text):
        target = resolve(home, text, named, TABLE_SUFFIXES)
        return _with_how(home, target, convert_csv) if target else None
    if _SUMMARIZE.search(text):
        target = resolve(home, text, named)
        return _with_how(home, target, summarize_document) if target else None
    if _LIST.search(text):
        return list_assets(home)
    if _WHICH.search(text):
        return which_files(home, text)
    if _QUESTION.search(text):
        return _quoted(text, named, home)
    return None


def _table_question(
    spec: RequestSpec, text: str, named: list[str], home: Path
) -> Reply | str | Declined | None:
    """Every question the rules read answered from its table; a request asking more than its
    questions declined with why; a question the tables cannot answer now quoted where the
    assets state it, else declined with why."""
    why = why_run(spec)
    if not why:
        return Reply(render_answer(spec), banner(spec.language))
    if spec.mode == "run":
        return Declined(reason=why)  # it asks more than a question: a run, said why
    return _quoted(text, named, home) or Declined(reason=why)


def _quoted(text: str, named: list[str], home: Path) -> str | None:
    """The sentences and rows of the assets that state what the request names."""
    target = named_target(home, named)
    files = [target.path] if target else asset_files(home)
    return quote_figures(home, asked_terms(text), files)


def _with_how(home: Path, target: Resolved, work: Callable[[Path, Path], str]) -> str:
    """The work's answer, after the sentence saying which file a topic was taken to mean."""
    how = target.how(home)
    body = work(home, target.path)
    return f"{how}\n\n{body}" if how else body
