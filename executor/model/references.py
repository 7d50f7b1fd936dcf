"""A task's references read into a prompt, for a model that cannot read them with tools.

Reading is confined exactly like the read tools (`readable_in_home`): `..`, absolute paths,
links leaving the home, private state and key files are named with the refusal, never read.
A folder gives its readable text files; a document (PDF, Word, Excel, PowerPoint, HTML) is
pasted as its markdown (`multiverse.documents`); another file that is not text is named, not
pasted; a chart the run drew (.html/.svg in its folders) is named for linking. The fitting is
pure: every text gets a fair share of the room left in the context window, and a cut is marked
as a cut.

Also here: fitting references into a context window; the words a writing call is given (the
deliverable's analysis, a working document) and the tokens they need (the length asked itself
is read by `multiverse.spec.asked_words`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from executor.builtin import text_scores, with_readings
from executor.tools import (
    SKIPPED_DIRS,
    ToolRefused,
    fence_for,
    is_private_name,
    readable_in_home,
)
from multiverse.documents import Converted, convert, decode, document_note, open_regular, sniff

ASCII_CHARS_PER_TOKEN = 3.5  # letters and spaces of prose
ESTIMATE_SLACK = 1.05  # tokenizers differ: a little room beyond the estimate
# Slack for the chat template's own tokens and the estimate's error.
MARGIN_TOKENS = 128


def estimate_tokens(text: str) -> int:
    """About how many tokens `text` is, erring high: a digit or a punctuation mark is a token of
    its own (as Qwen's and other tokenizers split figures), letters and spaces about three to
    a token, any other character one. A table of figures is mostly digits and separators:
    counted as prose it was under half its real size, and a prompt fitted to the window
    overflowed it (llama.cpp counted 19,971 tokens in 20,000 characters of a CSV)."""
    single = sum(1 for char in text if char.isascii() and not (char.isalpha() or char.isspace()))
    words = sum(1 for char in text if char.isascii() and (char.isalpha() or char.isspace()))
    count = single + words / ASCII_CHARS_PER_TOKEN + (len(text) - single - words)
    return math.ceil(count * ESTIMATE_SLACK)


def room_for_references(window: int, answer_tokens: int, prompt_tokens: int) -> int:
    """Tokens left for the references: the window less the answer, the prompt and a margin."""
    return max(0, window - answer_tokens - prompt_tokens - MARGIN_TOKENS)


def fair_caps(sizes: Sequence[int], budget: int) -> list[int]:
    """Each item's share of `budget`: small items whole, the rest cut to one equal cap."""
    if sum(sizes) <= budget:
        return list(sizes)
    caps = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=lambda index: sizes[index])
    for position, index in enumerate(order):
        share = left // (len(order) - position)
        caps[index] = min(sizes[index], share)
        left -= caps[index]
    return caps


def cut_to_tokens(text: str, tokens: int) -> str:
    """The longest start of `text` estimated at most `tokens`, ending at a line if one is near."""
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:  # the estimate grows with the length: bisect for the longest fit
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    head = text[:low]
    line_end = head.rfind("\n")
    # A cut mid-line loses little; a cut far back would waste the share.
    return head[: line_end + 1] if line_end >= low * 0.8 else head


GAP = "[…]"  # where parts of a file that do not bear on the task are left out


def _blocks(text: str) -> tuple[list[str], str]:
    """A text's blocks and their separator: paragraphs, or lines where it has none (a table)."""
    paragraphs = [block for block in text.split("\n\n") if block.strip()]
    if len(paragraphs) >= 3:
        return paragraphs, "\n\n"
    return [line for line in text.splitlines() if line.strip()], "\n"


def bearing_parts(text: str, tokens: int, query: str) -> tuple[str, bool]:
    """At most `tokens` of `text`, chosen by what bears on `query`: its first block (a title, a
    table's header row), the blocks the query ranks highest, then the earliest others, all in
    the file's order with each gap marked; and whether any part was chosen by the query (else
    it is the file's start, as `cut_to_tokens` gives it)."""
    if estimate_tokens(text) <= tokens:
        return text, False
    blocks, separator = _blocks(text)
    scores = text_scores(blocks[1:], query) if len(blocks) > 2 and query.strip() else []
    room = tokens - estimate_tokens(GAP) * 2
    if not any(scores) or estimate_tokens(blocks[0]) > room:
        return cut_to_tokens(text, tokens), False
    wanted = sorted(range(1, len(blocks)), key=lambda i: (scores[i - 1] <= 0, -scores[i - 1], i))
    chosen, used = {0}, estimate_tokens(blocks[0])
    for index in wanted:
        size = estimate_tokens(blocks[index] + separator + GAP)
        if used + size <= room:
            chosen.add(index)
            used += size
    parts: list[str] = []
    for index in sorted(chosen):
        if parts and index - 1 not in chosen:
            parts.append(GAP)
        parts.append(blocks[index])
    if len(blocks) - 1 not in chosen:
        parts.append(GAP)
    return separator.join(parts) + "\n", True


MAX_FILE_BYTES = 256 * 1024  # read_file's own cap
MAX_FOLDER_FILES = 50
CHART_SUFFIXES = frozenset({".html", ".htm", ".svg"})
HEADER_TOKENS = 24  # a pasted file's heading and fence


@dataclass(frozen=True)
class Source:
    """One file a reference names: its text to paste, or why it is only named."""

    path: str
    text: str | None = None
    note: str = ""  # why it is not pasted; or, beside a text, what it is ("PDF, 3 pages")
    chart: bool = False
    cut: bool = False  # already cut at the read cap
    parts: bool = False  # only the parts that bear on the task are shown, gaps marked


def _relative(home: Path, path: Path) -> str:
    return path.relative_to(home).as_posix()


def _inside(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def _folder_files(home: Path, folder: Path) -> list[Path]:
    """The readable files under a folder (sorted, capped), without following folder links."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIPPED_DIRS and not is_private_name(d) and not d.startswith(".")
        )  # fmt: skip
        for name in sorted(filenames):
            if name.startswith(".") or is_private_name(name):
                continue
            try:
                found.append(readable_in_home(home, _relative(home, Path(dirpath) / name)))
            except ToolRefused:
                continue
            if len(found) >= MAX_FOLDER_FILES:
                return found
    return found


def read_source(home: Path, path: Path, charts_in: Sequence[Path]) -> Source:
    """One confined file as a Source: its text, or a note saying why it is not pasted."""
    shown = _relative(home, path)
    if path.suffix.lower() in CHART_SUFFIXES and _inside(path, charts_in):
        return Source(shown, note="a chart drawn for this run: link it, do not paste it",
                      chart=True)  # fmt: skip
    if sniff(path) is not None:
        return _document(shown, convert(path))
    try:
        with open_regular(path) as handle:  # never blocks on a named pipe
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        return Source(shown, note=f"cannot be read ({error.strerror or error})")
    cut = len(data) > MAX_FILE_BYTES
    data = data[:MAX_FILE_BYTES]
    text = decode(data)
    if text is None and cut:
        # The cap may have split a character: drop its first bytes.
        text = next((t for trim in (1, 2, 3) if (t := decode(data[:-trim])) is not None), None)
    if text is None:
        return Source(shown, note="not a text file: named, not pasted")
    return Source(shown, text=text, cut=cut)


def _document(shown: str, converted: Converted) -> Source:
    """A document as its markdown, cut at the read cap like a text file; or why it is not."""
    if converted.markdown is None:
        return Source(shown, note=f"cannot be read: {document_note(converted)}")
    text = converted.markdown
    cut = len(text.encode()) > MAX_FILE_BYTES
    if cut:
        text = text.encode()[:MAX_FILE_BYTES].decode(errors="ignore")
    return Source(shown, text=text, note=document_note(converted), cut=cut)


def gather_sources(
    home: Path, references: Sequence[str], charts_in: Sequence[Path] = ()
) -> list[Source]:
    """Every file the references name, in order, each read or named with the reason."""
    home = Path(os.path.realpath(home))
    sources: list[Source] = []
    for reference in references:
        try:
            path = readable_in_home(home, reference.strip())
        except ToolRefused as refused:
            sources.append(Source(reference, note=f"refused: {refused}"))
            continue
        if path.is_dir():
            files = _folder_files(home, path)
            if not files:
                sources.append(Source(reference, note="an empty folder"))
            sources.extend(read_source(home, file, charts_in) for file in files)
        elif path.exists():
            sources.append(read_source(home, path, charts_in))
        else:
            sources.append(Source(reference, note="not found in the home"))
    return list({source.path: source for source in sources}.values())


def fit_sources(sources: Sequence[Source], budget_tokens: int, query: str = "") -> list[Source]:
    """The sources with their texts cut to fair shares of `budget_tokens`: to the parts that
    bear on `query` where any does, else to their start (cuts marked)."""
    pasted = [index for index, source in enumerate(sources) if source.text is not None]
    room = max(0, budget_tokens - HEADER_TOKENS * len(pasted))
    sizes = [estimate_tokens(sources[index].text or "") for index in pasted]
    fitted = list(sources)
    for index, size, cap in zip(pasted, sizes, fair_caps(sizes, room), strict=True):
        if cap < size:
            source = sources[index]
            text, parts = bearing_parts(source.text or "", cap, query)
            fitted[index] = replace(source, text=text, cut=not parts, parts=parts)
    return fitted


# The info string every pasted file's fence opens with. A document never needs to reproduce
# one: an answer that starts to is echoing its references (a small model copies a whole file
# out until its length limit), so a writing call stops there (its `stop` sequences).
PASTED = "text"
ECHO_STOPS = (f"```{PASTED}",)


def render_sources(sources: Sequence[Source]) -> str:
    """The sources as markdown: each text fenced as data, each other file named with its note."""
    if not sources:
        return "(none: the task names no references)"
    blocks: list[str] = []
    for source in sources:
        if source.text is None:
            blocks.append(f"### `{source.path}`\n\n{source.note}")
            continue
        fence = fence_for(source.text)
        body = source.text if source.text.endswith("\n") else source.text + "\n"
        what = f"{source.note}, as markdown\n\n" if source.note else ""
        block = f"### `{source.path}`\n\n{what}{fence}{PASTED}\n{body}{fence}"
        if source.parts:
            block += (f"\n\n[parts: only the parts of this file that bear on the task fit; "
                      f"{GAP} marks what is not shown]")  # fmt: skip
        elif source.cut:
            block += "\n\n[cut: only the start of this file fits; what follows is not shown]"
        blocks.append(block)
    return "\n\n".join(blocks)


TOKENS_PER_WORD = 1.6
# A language whose words (as spaces part them) take more tokens: a Korean word (eojeol) with its
# endings took the local model's tokenizer about 3 (two Korean working texts of ~430 words were
# cut at 1,280 tokens, the room of 400 English words).
LANGUAGE_TOKENS_PER_WORD = {"ko": 3.0}
MIN_WRITING_TOKENS = 600


def writing_tokens(words: int | None, tier_max: int, language: str | None = None) -> int:
    """max_tokens of the writing call: about 1.6 tokens a word (3 a Korean one), at least 600,
    at most the tier's."""
    if words is None:
        return tier_max
    per_word = LANGUAGE_TOKENS_PER_WORD.get((language or "").split("-")[0], TOKENS_PER_WORD)
    return min(tier_max, max(MIN_WRITING_TOKENS, round(words * per_word)))


def most_words(words: int) -> int:
    """The most words a text asked to be about `words` long may have (15 % more)."""
    return round(words * 1.15)


def describe_length(words: int | None) -> str:
    """The length as the prompt states it."""
    if words is None:
        return "No length is asked: be complete but concise; no padding, no repetition."
    return (
        f"About {words} words (at most {most_words(words)}). Stop when the document is "
        "complete; never repeat a section to fill the length."
    )


ANALYSIS_SHARE = 0.7  # of the words asked for the whole memo
ANALYSIS_MIN_WORDS = 150
# A working document's own budget: enough to say what each source holds and the facts that bear
# on the task; a small model asked for the deliverable's length copies tables out instead.
WORKING_WORDS = 400
WORKING_MIN_WORDS = 200


def analysis_words(asked: int | None) -> int | None:
    """The words of the analysis section, when the whole memo is asked to be `asked` long."""
    if asked is None:
        return None
    return max(ANALYSIS_MIN_WORDS, round(asked * ANALYSIS_SHARE))


def working_words(deliverable: int | None) -> int:
    """The words of a working document: a budget of its own, never the deliverable's (a first
    analysis says what each source holds and the facts; it never copies a table out)."""
    return max(WORKING_MIN_WORDS, min(WORKING_WORDS, deliverable or WORKING_WORDS))


def read_in(sources: Sequence[Source], language: str | None) -> list[Source]:
    """The sources with each amount written in another language's scale words also read in
    those of `language` (`with_readings`: "1,200억 원 (= 120 billion won)")."""
    if language is None:
        return list(sources)
    return [replace(source, text=with_readings(source.text, language)) if source.text else source
            for source in sources]  # fmt: skip
