"""Naming a document: the asset a simple request means, by its path or by its topic.

"Summarise the Nordic charging brief" names no path; it means the asset whose file name and
title (first heading, section headings, catalog summary) hold the request's words (or a word
meaning the same in a table header: "매출" ~ "revenue"). A word found in the file name weighs 2,
elsewhere 1. Only a clear winner is taken: no word matching, or two
files scoring the same, is no answer (the request becomes a run); the engine never guesses.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from executor.builtin.paths import TaskError, relative, resolve_reference
from executor.builtin.simple_terms import alternatives, asked_terms, holds, words_of
from executor.builtin.sources import MAX_BYTES, decode, expand
from executor.builtin.summary import summarize_path
from multiverse.unread import open_regular

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
