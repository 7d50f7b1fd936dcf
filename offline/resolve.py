"""Naming things in the home: which files a phrase means, which column a word means, which
category values and periods a clause mentions (pure, over the scan of the home).

Every decision is a score over the words of the phrase and the words of the names and their
descriptions (`offline.lexicon`); a phrase that names nothing clearly is reported as such,
never guessed into the nearest name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from multiverse.spec import Aggregation, Frequency, HomeScan, ScannedFile
from multiverse.tabular import ColumnProfile, TableProfile
from offline.lexicon import (
    FILLER,
    MONTHS,
    PARTICLE,
    Period,
    expand,
    phrase_terms,
    split_name,
    stem,
    terms,
)

# Words a phrase about files uses to say "the files", never what they hold.
_FILE_WORDS = frozenset(
    {
        "file",
        "files",
        "data",
        "dataset",
        "datasets",
        "table",
        "tables",
        "stuff",
        "thing",
        "document",
        "documents",
        "description",
        "descriptions",
        "record",
        "records",
        "one",
        "ones",
        "자료",
        "파일",
        "데이터",
        "관련",
        "문서",
        "것",
    }
)
_PLURAL = re.compile(r"\b(?:files|datasets|tables|documents|ones|all)\b|들(?:은|는|을|를)?\b")


@dataclass(frozen=True)
class FileMatch:
    """The files a phrase names, and how: by path, by name words, or by what they hold."""

    files: list[str]
    how: str  # "path", "name", "content"


def file_terms(item: ScannedFile) -> set[str]:
    """The words a file is known by: its name's, its title's, and its first lines' (a table's
    are its description's)."""
    found = {stem(word.lower()) for word in split_name(PurePosixPath(item.path).stem)}
    found |= set(terms(item.title)) | set(terms(item.about))
    return {word for word in found if (word and not word.isdigit()) or len(word) == 4}


def files_named(phrase: str, scan: HomeScan) -> FileMatch | None:
    """The files a phrase means ("souvenirs.csv", "the stock price files", "호주 관련 데이터").

    A path or file name is taken as it is (with the files that describe it or that it
    describes when the phrase is plural). Otherwise the phrase's words must all be found in a
    file's name or title words (or their synonyms); every file so found is meant, and the
    companions of a table (its descriptions) go with it.
    """
    named = [item.path for item in scan.files if _names_path(phrase, item.path)]
    if named:
        if _PLURAL.search(phrase) or "its description" in phrase.lower() or "설명" in phrase:
            named += [c for path in named for c in scan.companions(path)]
        return FileMatch(list(dict.fromkeys(named)), "path")
    found = _files_with_words(phrase, scan)
    # "the restaurant and store files": when each part names files of its own, all are meant
    parts = [
        p for p in re.split(r",|\band\b|\bor\b|및|(?<=[가-힣])(?:와|과)\s", phrase) if p.strip()
    ]
    by_part = [_files_with_words(part, scan) for part in parts]
    if len(parts) > 1 and all(by_part):
        found = sorted({path for paths in by_part for path in paths})
    if not found:
        return None
    found += [c for path in found for c in scan.companions(path)]
    return FileMatch(sorted(set(found)), "name")


def _files_with_words(phrase: str, scan: HomeScan) -> list[str]:
    """The files whose words hold the phrase's meaningful words: every one of them, or (when no
    file holds them all) at least two and two thirds of them, the best such files only ("the
    older monthly stocks file" names stocks_monthly)."""
    wanted = {word for word in phrase_terms(phrase) if word not in _FILE_WORDS}
    if not wanted:
        return []
    covered = {item.path: len(_covered_by(wanted, expand(file_terms(item)))) for item in scan.files}
    whole = [path for path, count in covered.items() if count == len(wanted)]
    if whole:
        return whole
    best = max(covered.values(), default=0)
    if best >= 2 and best * 3 >= len(wanted) * 2:
        return [path for path, count in covered.items() if count == best]
    return []


def _covered_by(wanted: set[str], have: set[str]) -> set[str]:
    return {word for word in wanted if any(near(word, other) for other in have)}


def near(one: str, other: str) -> bool:
    """Whether two terms are the same word: equal, or one a prefix (of 4+ letters) of the other
    (`unemp` ~ `unemployment`, `invest` ~ `investment`)."""
    if one == other:
        return True
    short, long = sorted((one, other), key=len)
    # a compound holds its last word: "superstore" is a store, "wastewater" water; a prefix
    # of a few letters makes another word ("discount" is no count, "amount" no mount)
    return (len(short) >= 4 and long.startswith(short)) or (
        len(short) >= 5 and long.endswith(short) and len(long) - len(short) >= 4
    )


def _names_path(phrase: str, path: str) -> bool:
    name = PurePosixPath(path).name.lower()
    lowered = phrase.lower()
    if path.lower() in lowered:
        return True
    if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w])", lowered):
        return True
    return PurePosixPath(name).stem in re.findall(r"[\w.-]+", lowered)


# -- columns -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnHit:
    """A column a clause names, and how strongly (matched words, share of the name matched)."""

    file: str
    column: str
    matched: int
    share: float
    words: frozenset[str] = frozenset()  # the column's words the clause named

    @property
    def score(self) -> float:
        """More words matched first, then a larger share of the column's own words."""
        return self.matched + self.share


def column_words(column: ColumnProfile) -> tuple[set[str], set[str]]:
    """A column's words: its header's, and its label's (from the description), stems."""
    name = {stem(word.lower()) for word in split_name(column.name)} - {""} - FILLER
    label = set(terms(column.label)) if column.label and column.label != column.name else set()
    return name, label


def column_hits(clause: str, table: TableProfile, roles: tuple[str, ...]) -> list[ColumnHit]:
    """The columns of a table (of the given roles) that a clause names, best first."""
    said = expand(phrase_terms(clause))
    hits: list[ColumnHit] = []
    for column in table.columns:
        if column.role not in roles:
            continue
        best: ColumnHit | None = None
        for words in column_words(column):
            found = _matched(said, words)
            if found is None:
                continue
            hit = ColumnHit(table.file, column.name, len(found[0]), found[1], frozenset(found[0]))
            if best is None or hit.score > best.score:
                best = hit
        if best is not None:
            hits.append(best)
    return sorted(hits, key=lambda hit: -hit.score)


def _matched(said: set[str], words: set[str]) -> tuple[set[str], float] | None:
    """The words of a name that were said, and their share of the name (None: none said)."""
    meaningful = {w for w in words if len(w) > 2 or (len(w) == 2 and not w.isdigit())}
    found = {word for word in meaningful if any(near(word, other) for other in said)}
    if not found:
        return None
    return found, len(found) / len(meaningful)


def values_named(clause: str, table: TableProfile) -> dict[str, list[str]]:
    """The category values a clause mentions, by column ("Queensland", "Korea, Rep.")."""
    lowered = f" {clause.lower()} "
    said = set(phrase_terms(clause))
    measures = {c.name.lower() for c in table.columns if c.role == "measure"}
    found: dict[str, list[str]] = {}
    for column, values in table.categories.items():
        for value in values:
            text = value.lower().strip()
            if len(text) < 2:
                continue
            if text in measures:
                continue  # "votes for Joly": Joly is a column here, not a winner's name
            if re.search(rf"(?<![\w]){re.escape(text)}(?![\w])", lowered) or (
                _words_of_value(value) and _words_of_value(value) <= said
            ):
                found.setdefault(column, []).append(value)
    return found


# A proper name in an English question: a capitalised word, possessive or not. An acronym
# (US, PDF, GDP) is not taken: too often a file type, a unit or a measure's own short name.
_NAME = re.compile(r"(?<![\w'’-])([A-Z][a-z][A-Za-z-]*)(?:['’]s)?(?![\w-])")
_NOT_NAMES = frozenset(
    {
        "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "was", "were",
        "are", "did", "does", "do", "has", "have", "had", "the", "a", "an", "in", "on", "of", "for",
        "and", "or", "but", "i", "we", "you", "it", "this", "that", "these", "those", "there",
        "please", "tell", "show", "give", "list", "compare", "find", "name", "q1", "q2", "q3", "q4",
        "h1", "h2", "fy"
    }
)


def names_not_held(part: str, item: ScannedFile, table: TableProfile) -> list[str]:
    """The proper names an English question uses that its table holds nowhere: not a category
    value, a column's name, label or unit, nor a word of the file's name, title or first lines
    ("Germany" asked of a table of Nordic countries). A sentence's first word counts only when
    possessive ("Germany's revenue"): otherwise it is capitalised for being first."""
    known = file_terms(item)
    known |= {w.lower() for w in re.findall(r"[A-Za-z]+", f"{item.path} {item.title} {item.about}")}
    for column in table.columns:
        for text in (column.name, column.label or "", column.unit or ""):
            known |= {stem(word.lower()) for word in split_name(text)}
    for values in table.categories.values():
        known |= {stem(word.lower()) for value in values for word in split_name(value)}
    found: list[str] = []
    for match in _NAME.finditer(part):
        word = match.group(1)
        before = part[: match.start()].rstrip()
        first = not before or before.endswith((".", "?", "!", ":", ";", '"', "“"))
        if first and not match.group(0).endswith(("'s", "’s")):
            continue
        lowered = word.lower()
        if lowered in _NOT_NAMES or lowered in MONTHS or stem(lowered) in known:
            continue
        if any(stem(piece.lower()) in known for piece in split_name(word)):
            continue
        found.append(word)
    return list(dict.fromkeys(found))


def _words_of_value(value: str) -> set[str]:
    """The meaningful words of a category value ("Korea, Rep." → korea), for Korean requests."""
    words = {stem(w.lower()) for w in split_name(value)}
    return {w for w in words if len(w) >= 3 and not w.isdigit() and w not in {"rep", "the", "and"}}


def table_and_measures(
    part: str, scan: HomeScan, excluded: set[str]
) -> tuple[ScannedFile, TableProfile, list[str]] | None:
    """The table whose measure columns the words name best, and those columns.

    A table the words name by its file (its name's or title's words: "Iowa's electricity")
    is preferred; named (or one of its category columns named) but with no measure named, its
    one measure is drawn (or its wide group's). A match on a word every analysis uses
    ("change", "total") weighs little.
    """
    candidates: list[tuple[float, ScannedFile, TableProfile, list[str]]] = []
    said = set(phrase_terms(part))
    for item in scan.tables():
        if item.path in excluded or item.profile is None:
            continue
        table = item.profile
        hits = [hit for hit in column_hits(part, table, ("measure",))]
        named = _names_table(said, item)
        weight = 0.75 * named + 0.25 * bool(values_named(part, table))
        if hits:
            score = hits[0].score * (0.3 if hits[0].words <= _GENERIC_WORDS else 1.0)
            candidates.append((score + weight, item, table, chosen_measures(hits)))
            continue
        wide = _wide_measures(part, table)
        if wide:
            candidates.append((1.0 + weight, item, table, wide))
        elif named or column_hits(part, table, ("category",)):
            # Named by its file, or by one of its categories ("지역별 …" of a table with one
            # measure): its one measure is what is meant.
            only = _only_measure(table)
            if only:
                candidates.append((weight + 0.2 * (not named), item, table, only))
    if not candidates:
        return None
    _, item, table, measures = max(candidates, key=lambda entry: entry[0])
    return item, table, measures


# Words every analysis uses: a column named by one of these alone is a weak match.
_GENERIC_WORDS = frozenset(
    {"change", "total", "value", "number", "count", "rate", "growth", "average", "mean", "level"}
)


def measures_named(text: str, table: TableProfile, beside: Sequence[str] = ()) -> list[str]:
    """The measure columns the words name by more than a word every analysis uses or a word
    that already names one of the columns `beside` ("marriage rate" of Marriages_per_1000
    does not name Marriages too)."""
    hits = column_hits(text, table, ("measure",))
    taken = {word for hit in hits if hit.column in beside for word in hit.words}
    return [hit.column for hit in hits
            if hit.column not in beside and hit.words - _GENERIC_WORDS - taken]  # fmt: skip


def _names_table(said: set[str], item: ScannedFile) -> bool:
    """Whether the words name the table by its file name or title (two words, or its name)."""
    stem_words = {w.lower() for w in re.split(r"[^0-9A-Za-z가-힣]+", item.path.rsplit("/", 1)[-1])}
    stem_words -= {"csv", "tsv", "json", "xlsx", "txt", ""}
    name_hits = {word for word in said if any(near(word, other) for other in stem_words)}
    return len(name_hits) >= min(2, len(stem_words))


def _only_measure(table: TableProfile) -> list[str]:
    """The measure a table charts when none is named: its wide group, or its one measure."""
    if table.wide is not None:
        return list(table.wide.columns)
    measures = [column.name for column in table.columns if column.role == "measure"]
    return measures if len(measures) == 1 else []


def chosen_measures(hits: list[ColumnHit]) -> list[str]:
    """The columns a chart draws: every column whose name the words name whole, less those
    whose words another chosen column holds too ("marriages" beside "marriages per 1000");
    else the best partial match."""
    whole = [hit for hit in hits if hit.share >= 1.0]
    if not whole:
        return [hits[0].column]
    kept = [hit for hit in whole if not any(hit.words < other.words for other in whole)]
    return list(dict.fromkeys(hit.column for hit in kept))


def _wide_measures(part: str, table: TableProfile) -> list[str]:
    """In a wide table, the value columns a sentence names ("Apple and Netflix")."""
    group = table.wide.columns if table.wide is not None else []
    said = set(phrase_terms(part))
    return [
        column
        for column in group
        if column.lower() in part.lower() or any(near(column.lower(), word) for word in said)
    ]


# The words of a question about periods and their combination.
_SAID_AGGREGATION: tuple[tuple[Aggregation, re.Pattern[str]], ...] = (
    ("sum", re.compile(r"\btotal\b|\bin all\b|\bsum\b|합계|총", re.I)),
    ("last", re.compile(r"\bend[- ]of[- ](?:the[- ])?(?:year|quarter|month)\b|연말", re.I)),
)
GRAIN_RANK = {"year": 0, "quarter": 1, "month": 2, "week": 3, "day": 4}
WHOLE_PERIODS = re.compile(
    r"\b(?:full|whole|complete)\s+(?:calendar\s+)?(?:years?|quarters?|months?)\b|온전한|완전한",
    re.IGNORECASE,
)


def whole_grain(part: str) -> Frequency | None:
    """The grain of "full years" / "whole quarters" (None when not said)."""
    found = WHOLE_PERIODS.search(part)
    if found is None:
        return None
    for grain in ("year", "quarter", "month"):
        if grain in found.group(0).lower():
            return grain
    return "year"  # 온전한 (해): a year unless said


def grain_of(label: str) -> str:
    """The grain of a period label: `2009`, `2009Q3`, `2009-03`, `2009-03-01`."""
    if re.fullmatch(r"\d{4}", label):
        return "year"
    if re.fullmatch(r"\d{4}Q[1-4]", label):
        return "quarter"
    if re.fullmatch(r"\d{4}-\d{2}", label):
        return "month"
    return "day" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", label) else ""


def aggregation_said(part: str) -> Aggregation | None:
    """The aggregation a question says ("in total", "at the end of the year"), if any."""
    return next((name for name, pattern in _SAID_AGGREGATION if pattern.search(part)), None)


WHICH = re.compile(  # "which year …", "어느 해": what a question asks to name

    r"\b(?:which|what)\s+(?:of\s+(?:these|the)\s+)?(?P<en>[\w-]+(?:\s(?!was|were|had|did|is|"
    r"has)[\w-]+){0,3})|(?:어느|어떤|무슨)\s?(?P<ko>[가-힣]+)|(?P<ko2>[가-힣]+)\s?(?:중|가운데)?\s?"
    r"(?:어디|어느)",
    re.IGNORECASE,
)


_GRAIN_ASKED: dict[str, Frequency] = {
    "year": "year", "years": "year", "해": "year", "연도": "year", "년도": "year",
    "quarter": "quarter", "quarters": "quarter", "분기": "quarter",
    "month": "month", "months": "month", "달": "month", "월": "month",
}


_WHEN_KO = re.compile(r"(?P<noun>해|연도|년도|분기|달)(?:는|은|가|이|를)?\s?(?:언제|몇|어느)")


def grain_asked(part: str) -> Frequency | None:
    """The period a "which year", "어느 해" or "…던 해는 언제" question asks for."""
    match = WHICH.search(part)
    said = (match.group("en") or match.group("ko") or match.group("ko2") or "") if match else ""
    first = PARTICLE.sub("", said.split()[0].lower()) if said.split() else ""
    korean = _WHEN_KO.search(part)
    return _GRAIN_ASKED.get(first) or (_GRAIN_ASKED.get(korean["noun"]) if korean else None)


def frequency_asked(part: str, table: TableProfile, periods: Sequence[Period],
                    span: tuple[str | None, str | None] | None) -> Frequency | None:
    """The grain a question's values are compared at: the periods' own when they are coarser
    than the table's (years named of a monthly table: yearly values), else what the words say
    ("which year", "annual", "월별")."""
    time = table.time
    native = time.frequency if time is not None else None
    grains = {p.grain for p in periods if p.grain in GRAIN_RANK}
    grains |= {grain_of(label) for label in (span or ()) if label}
    grains.discard("")
    if grains and native in GRAIN_RANK:
        finest = max(grains, key=lambda grain: GRAIN_RANK[grain])
        if GRAIN_RANK[finest] < GRAIN_RANK[str(native)]:
            return finest  # type: ignore[return-value]
        return None
    asked = grain_asked(part)
    if asked is not None and native in GRAIN_RANK and GRAIN_RANK[asked] < GRAIN_RANK[str(native)]:
        return asked  # "which year …" of a quarterly table: the years compared, not quarters
    lowered = part.lower()
    words: tuple[tuple[str, Frequency], ...] = (
        ("annual", "year"),
        ("yearly", "year"),
        ("quarterly", "quarter"),
        ("monthly", "month"),
        ("weekly", "week"),
        ("연간", "year"),
        ("연도별", "year"),
        ("분기별", "quarter"),
        ("월별", "month"),
    )
    return next((frequency for word, frequency in words if word in lowered), None)


_TOTAL = re.compile(r"^(?:total|sum|all|overall|합계|전체)\b", re.IGNORECASE)


def like_measures(table: TableProfile, measures: list[str]) -> list[str]:
    """The measures a "by <what no column is>" can only mean in a table with no category
    column: the columns of the same kind and unit as the one named (its siblings), not a
    total of them; none when there are fewer than two or the table has categories."""
    if len(measures) != 1 or table.time is None or table.role("category"):
        return []
    named = table.column(measures[0])
    if named is None:
        return []
    group = [c.name for c in table.role("measure")
             if (c.kind, c.unit) == (named.kind, named.unit) and not _TOTAL.match(c.label)]
    return group if len(group) >= 2 and measures[0] in group else []


TOP_OF = re.compile(
    r"\b(?:top|which|the)\s+(?:\d+|three|four|five|six|seven|eight|nine|ten|twenty)\s+"
    r"(?P<words>[\w-]+(?:\s[\w-]+)?)|상위\s?\d+\s?개?\s?(?P<ko>[가-힣]+)",
    re.IGNORECASE,
)


def top_category(sentence: str, table: TableProfile) -> str | None:
    """The categories a top-N ranks ("which five sub-categories…", "the ten states…")."""
    match = TOP_OF.search(sentence)
    if match is None:
        return None
    hits = column_hits(match.group("words") or match.group("ko") or "", table, ("category",))
    return hits[0].column if hits else None
