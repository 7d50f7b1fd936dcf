"""What a simple request names, looked up: its words, the asset it means (by path or by topic), a
figure asked for by name quoted where it stands, and simple requests about tables.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.charts import ChartSpec, asked_chart, chart_asks
from executor.builtin.sources import (
    MAX_BYTES,
    TaskError,
    decode,
    expand,
    relative,
    resolve_reference,
    summarize_path,
)
from executor.builtin.tables import (
    RawTable,
    format_number,
    markdown_table,
    numeric_columns,
    parse_csv,
    parse_number,
)
from executor.builtin.text import ENGLISH_STOPWORDS, clean_inline, is_hangul, split_sentences, terms
from multiverse.documents import open_regular
from offline.asks import SYNONYMS

# Words that say what to do or what kind of thing is meant, not which thing.
_COMMAND_WORDS = """summarise summarize summary summarising summarizing convert converting
    show list count table tables markdown csv tsv file files document documents doc docs
    asset assets folder give tell please want need what's who's where's which talk talks
    talking say says said mention mentions mentioned contain contains find look fetch read
    quote exactly figure figures number numbers amount value total words word lines
    characters gist overview"""
COMMAND_WORDS = frozenset(_COMMAND_WORDS.split())
# Korean command stems and generic nouns; a term starting with one of these is dropped.
KOREAN_COMMANDS = (
    "요약", "보여", "알려", "변환", "정리", "목록", "찾아", "말해", "설명", "세어", "있어",
    "있나", "있는지", "해줘", "표로", "문서", "파일", "자료", "폴더", "내용", "무엇", "뭐",
    "어느", "어떤", "얼마", "마크다운", "수는", "수가", "수를", "개수", "몇",
)  # fmt: skip
# Korean question endings left on a word ("톤이야" → "톤", "규모인가요" → "규모").
_KOREAN_ENDINGS = ("인가요", "이에요", "인가", "이야", "예요", "에요", "이지", "이니", "야", "니")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
_WORD = re.compile(r"[a-z0-9]+")
_ENGLISH_SUFFIXES = ("ings", "ing", "ers", "er", "ies", "es", "s", "ed")


def asked_terms(request: str) -> list[str]:
    """The terms a request names things by, in order, once each (years included)."""
    found: list[str] = []
    for term in terms(request):
        term = term.removesuffix("'s").strip("'")
        if is_hangul(term):
            term = next((term[: -len(e)] for e in _KOREAN_ENDINGS if term.endswith(e)), term)
            if len(term) >= 2 and not term.startswith(KOREAN_COMMANDS):
                found.append(term)
        elif term not in COMMAND_WORDS | ENGLISH_STOPWORDS and len(term) >= 3:
            found.append(term)
    found += _YEAR.findall(request)
    return list(dict.fromkeys(found))


def stem(word: str) -> str:
    """A crude English stem: a plural or verb ending cut ("chargers", "charging" → "charg")."""
    for suffix in _ENGLISH_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words_of(text: str) -> frozenset[str]:
    """The English word stems of a text (lower case), for `holds`."""
    return frozenset(stem(word) for word in _WORD.findall(text.casefold().replace("_", " ")))


def alternatives(term: str) -> frozenset[str]:
    """The term and the words meaning the same in a table's header ("매출" ~ "revenue")."""
    return SYNONYMS.get(term, frozenset()) | {term}


def holds(term: str, text: str, stems: frozenset[str] | None = None) -> bool:
    """Whether `text` names the term (`stems`: its `words_of`, when already known)."""
    if is_hangul(term) or _YEAR.fullmatch(term):
        return term in text
    wanted = stem(term)
    for word in stems if stems is not None else words_of(text):
        if word == wanted:
            return True
        if min(len(word), len(wanted)) >= 4 and (
            word.startswith(wanted) or wanted.startswith(word)
        ):
            return True
    return False


NAME_WEIGHT = 2
PROFILE_BYTES = 65_536
_HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Profile:
    """What a file is called by: the words of its name, and its title, headings and summary."""

    path: Path
    name: str
    text: str


@dataclass(frozen=True)
class Resolved:
    """The file a request means, and the request's words that named it (none: by its path)."""

    path: Path
    matched: tuple[str, ...] = ()

    def how(self, home: Path) -> str:
        """A sentence saying which file was taken and why, for the reply."""
        if not self.matched:
            return ""
        words = ", ".join(f'"{word}"' for word in self.matched)
        return f"_Taken to mean `{relative(home, self.path)}`: its name or title holds {words}._"


def score(terms: list[str], profile: Profile) -> tuple[int, tuple[str, ...]]:
    """How well a file's profile holds the request's terms, and which terms it holds (pure)."""
    name_words, text_words = words_of(profile.name), words_of(profile.text)
    total, matched = 0, []
    for term in terms:
        words = alternatives(term)
        if any(holds(word, profile.name, name_words) for word in words):
            total += NAME_WEIGHT
        elif any(holds(word, profile.text, text_words) for word in words):
            total += 1
        else:
            continue
        matched.append(term)
    return total, tuple(matched)


def best(terms: list[str], profiles: list[Profile]) -> Resolved | None:
    """The one profile that holds the terms best, or None when none does or two tie (pure).

    With no terms at all, a single candidate is the one meant ("convert the CSV to a table").
    """
    if not terms:
        return Resolved(profiles[0].path) if len(profiles) == 1 else None
    ranked = sorted(
        ((score(terms, profile), profile) for profile in profiles),
        key=lambda item: item[0][0],
        reverse=True,
    )
    if not ranked or ranked[0][0][0] == 0:
        return None
    if len(ranked) > 1 and ranked[1][0][0] == ranked[0][0][0]:
        return None
    (_, matched), profile = ranked[0]
    return Resolved(profile.path, matched)


def ranked(terms: list[str], profiles: list[Profile]) -> list[Resolved]:
    """Every profile holding at least one term, best first (ties in the given order; pure)."""
    scored = [(score(terms, profile), profile) for profile in profiles]
    scored = [item for item in scored if item[0][0] > 0]
    scored.sort(key=lambda item: item[0][0], reverse=True)
    return [Resolved(profile.path, matched) for (_, matched), profile in scored]


def asset_files(home: Path, suffixes: Collection[str] | None = None) -> list[Path]:
    """The files of assets/ that may be read, optionally only those with these suffixes."""
    folder = home / "assets"
    if not folder.is_dir() or folder.is_symlink():
        return []
    files = expand(folder, home)
    return [p for p in files if suffixes is None or p.suffix.lower() in suffixes]


def profile(path: Path) -> Profile:
    """A file's profile: the words of its name; its first line, headings and catalog summary."""
    name = re.sub(r"[_\-.]+", " ", path.stem)
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            text = decode(handle.read(min(PROFILE_BYTES, MAX_BYTES))) or ""
    except OSError:
        text = ""
    first = next((line for line in text.splitlines() if line.strip()), "")
    headings = _HEADING.findall(text)
    return Profile(path, name, "\n".join([first, *headings, summarize_path(path)]))


def named_target(home: Path, named: list[str]) -> Resolved | None:
    """The file a request names by its path (`x.md` is also looked for in assets/), or None.

    A name without a folder that names nothing ("e.g.") is not a path; a path with a folder
    that leaves the home or names nothing is the person's mistake: a TaskError.
    """
    for name in named:
        if "/" not in name:
            found = [p for p in (home / name, home / "assets" / name) if p.exists()]
            if not found:
                continue
            name = found[0].relative_to(home).as_posix()
        path = resolve_reference(home, name)
        if path.is_dir():
            raise TaskError(f"`{name}` is a folder, not a file")
        return Resolved(path)
    return None


def resolve(
    home: Path, request: str, named: list[str], suffixes: Collection[str] | None = None
) -> Resolved | None:
    """The file a request means: the path it names, else the asset its words name clearly."""
    by_path = named_target(home, named)
    if by_path is not None:
        return by_path
    files = asset_files(home, suffixes)
    return best(asked_terms(request), [profile(path) for path in files]) if files else None


MAX_TABLE_ROWS = 1000
TABLE_SUFFIXES = frozenset({".csv", ".tsv"})
# Korean particles a `<dimension>별 <measure>` phrase may carry ("매출을", "매출은").
_PARTICLE = re.compile(r"(?<=[가-힣]{2})(?:을|를|은|는|이|가|의|으로|로)(?=\s|$|[?.!,])")


def read_text(path: Path) -> str:
    """A file's text; a binary or unreadable file is a TaskError saying so."""
    try:
        handle = open_regular(path)  # never blocks on a named pipe
    except OSError as error:
        raise TaskError(f"`{path.name}` cannot be read: {error.strerror or error}") from None
    with handle:
        text = decode(handle.read(MAX_BYTES))
    if text is None:
        raise TaskError(f"`{path.name}` is a binary file; it holds no text to work on")
    return text


def convert_csv(home: Path, path: Path) -> str:
    """A CSV file as a markdown table, its source named."""
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise TaskError(f"`{path.name}` is not a CSV file; only CSV converts to a markdown table")
    table = parse_csv(read_text(path))
    source = relative(home, path)
    if not table.header:
        return f"`{source}` is empty."
    shown = table.rows[:MAX_TABLE_ROWS]
    note = (
        f" (the first {len(shown)} of {len(table.rows)} rows)"
        if len(shown) < len(table.rows)
        else ""
    )
    return f"`{source}` as a table{note}:\n\n{markdown_table(table.header, shown)}"


def without_particles(text: str) -> str:
    """Korean particles cut from the words they end, so "매출을" reads as "매출" (pure)."""
    return _PARTICLE.sub("", text)


def _columns(spec: ChartSpec, table: RawTable) -> tuple[int, int]:
    """The measure's column and the label column `spec` was drawn from (pure)."""
    value = table.header.index(spec.lines[0].name)
    numeric = numeric_columns(table)
    labels = set(spec.labels)
    group = next(
        i
        for i in range(len(table.header))
        if i not in numeric and labels <= {row[i] for row in table.rows}
    )
    return value, group


def render_sums(spec: ChartSpec, table: RawTable) -> str:
    """The sums of `spec` as a markdown table with their total, row count and source (pure)."""
    value, group = _columns(spec, table)
    summed = sum(
        1
        for row in table.rows
        if row[group] in spec.labels and parse_number(row[value]) is not None
    )
    values = [v or 0.0 for v in spec.lines[0].values]
    rows = [[label, format_number(v)] for label, v in zip(spec.labels, values, strict=True)]
    rows.append(["**Total**", f"**{format_number(sum(values))}**"])
    header = [table.header[group], f"{table.header[value]} (sum)"]
    return (
        f"{spec.title}, from `{spec.source}`:\n\n{markdown_table(header, rows)}\n\n"
        f"_Summed over {summed} of the {len(table.rows)} rows of `{spec.source}`: every value "
        "is the file's own, added up; nothing is estimated._"
    )


def table_by(home: Path, request: str, files: list[Path]) -> str | None:
    """The `<measure> by <dimension>` table the request asks for, from the one CSV that can
    give it; None when no ask is found, no table can answer, or two tables answer differently."""
    asks = chart_asks(without_particles(request))
    if not asks:
        return None
    answers: dict[tuple[tuple[str, ...], tuple[float | None, ...]], str] = {}
    for path in files:
        try:
            table = parse_csv(read_text(path))
        except TaskError:
            continue
        spec = asked_chart(asks[0], table, relative(home, path))
        if spec is not None:
            key = (tuple(spec.labels), tuple(spec.lines[0].values))
            answers.setdefault(key, render_sums(spec, table))
    return next(iter(answers.values())) if len(answers) == 1 else None


MAX_QUOTES = 12
_DIGIT = re.compile(r"\d")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class Quote:
    """A sentence or table row as written, and where: file and line (1-based)."""

    source: str
    line: int
    text: str
    row: bool = False

    def markdown(self) -> str:
        """The quote as a bullet naming its file and line."""
        where = f"`{self.source}`, line {self.line}"
        return f"- {where}: {self.text}" if self.row else f'- "{self.text}" — {where}'


def paragraphs(text: str) -> list[tuple[list[int], str]]:
    """The text's paragraphs and list items, each with the line each character came from (pure).

    Wrapped lines join their paragraph; a heading, a blank line or a new list item ends it.
    """
    found: list[tuple[list[int], str]] = []
    lines: list[int] = []
    joined = ""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        starts = not stripped or stripped.startswith(("#", "|")) or _BULLET.match(stripped)
        if starts and joined:
            found.append((lines, joined))
            lines, joined = [], ""
        if not stripped or stripped.startswith("#"):
            continue
        piece = _BULLET.sub("", stripped) if not joined else stripped
        if joined:
            joined += " "
            lines.append(number)
        joined += piece
        lines += [number] * len(piece)
    if joined:
        found.append((lines, joined))
    return found


def text_quotes(terms: list[str], source: str, text: str) -> list[Quote]:
    """The sentences of a text holding every term and a number, with their first line (pure)."""
    found: list[Quote] = []
    for lines, paragraph in paragraphs(text):
        if not _DIGIT.search(paragraph):
            continue
        start = 0
        for sentence in split_sentences(paragraph):
            at = paragraph.find(sentence, start)
            start = at + len(sentence) if at >= 0 else start
            if _DIGIT.search(sentence) and all(holds(term, sentence) for term in terms):
                found.append(Quote(source, lines[max(at, 0)], clean_inline(sentence)))
    return found


def csv_quotes(terms: list[str], source: str, text: str) -> list[Quote]:
    """The rows of a CSV whose cells hold the terms its header does not (pure).

    At least one term must be a cell's: a term only in the header ("revenue") picks a column,
    not a row.
    """
    first = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text), delimiter=max((",", ";", "\t"), key=first.count))
    header = next(reader, [])
    in_header = [t for t in terms if any(holds(t, cell) for cell in header)]
    in_cells = [t for t in terms if t not in in_header]
    if not in_cells:
        return []
    found: list[Quote] = []
    for row in reader:
        cells = " ".join(row)
        if _DIGIT.search(cells) and all(holds(term, cells) for term in in_cells):
            shown = " · ".join(f"{name} {cell}" for name, cell in zip(header, row, strict=False))
            found.append(Quote(source, reader.line_num, shown, row=True))
    return found


def quote_figures(home: Path, terms: list[str], files: list[Path]) -> str | None:
    """The sentences and rows of `files` stating what the terms name, or None if none does."""
    if not terms:
        return None
    quotes: list[Quote] = []
    for path in files:
        try:
            text = read_text(path)
        except TaskError:
            continue
        source = relative(home, path)
        is_table = path.suffix.lower() in TABLE_SUFFIXES
        quotes += (csv_quotes if is_table else text_quotes)(terms, source, text)
    if not quotes:
        return None
    named = ", ".join(f'"{term}"' for term in terms)
    lines = [f"Where the assets state {named} (quoted as written; nothing is computed):", ""]
    lines += [quote.markdown() for quote in quotes[:MAX_QUOTES]]
    if len(quotes) > MAX_QUOTES:
        lines += ["", f"_{len(quotes) - MAX_QUOTES} more sentences or rows hold these words._"]
    return "\n".join(lines)
