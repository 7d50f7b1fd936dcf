"""Tests of inbox intake: finding requests, reading them, filing them in done/ or rejected/."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from multiverse.atomic import path_open_for_writing
from multiverse.errors import UserError
from multiverse.home import Home, init_home
from multiverse.roles import Mode
from orchestrator.inbox import (
    DEFAULT_MAX_BYTES,
    RequestChanged,
    RequestRejected,
    Stamp,
    inbox_entries,
    is_ignorable_name,
    move_to_done,
    pair_name,
    parse_request,
    pending_requests,
    read_request,
    reject,
    reply_path,
    settle_wait,
    survey_inbox,
)

from journey import once, runs


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home with an empty inbox."""
    result = Home(tmp_path)
    result.inbox.mkdir()
    return result


def drop(home: Home, name: str, data: bytes, mtime_ns: int | None = None) -> Path:
    """Write a file into the inbox, optionally with a given modification time."""
    path = home.inbox / name
    path.write_bytes(data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_pending_requests_oldest_first_then_by_name(home: Home) -> None:
    """Requests come oldest first by mtime, and by name when the times are equal."""
    drop(home, "c.md", b"c", mtime_ns=3_000_000_000)
    drop(home, "b.txt", b"b", mtime_ns=1_000_000_000)
    drop(home, "a.md", b"a", mtime_ns=1_000_000_000)
    names = [path.name for path in pending_requests(home)]
    assert names == ["a.md", "b.txt", "c.md"]


def test_pending_requests_skips_other_files_and_folders(home: Home) -> None:
    """Only *.md and *.txt directly in inbox/ count; sub-folders, swap files and others do not."""
    drop(home, "keep.md", b"x")
    drop(home, "KEEP2.TXT", b"x")
    drop(home, "image.png", b"x")
    drop(home, ".keep.md.swp", b"x")
    drop(home, "keep.md~", b"x")
    drop(home, ".hidden.md", b"x")
    drop(home, "draft.md.tmp", b"x")
    (home.inbox / "folder.md").mkdir()
    home.inbox_done.mkdir()
    (home.inbox_done / "old.md").write_bytes(b"x")
    names = sorted(path.name for path in pending_requests(home))
    assert names == ["KEEP2.TXT", "keep.md"]


def test_pending_requests_without_inbox_is_empty(tmp_path: Path) -> None:
    """A home whose inbox does not exist yet has no pending requests."""
    assert pending_requests(Home(tmp_path)) == []


def test_read_request_plain_markdown(home: Home) -> None:
    """A plain request keeps its text, takes its first heading as title and has no forced mode."""
    data = b"# Market entry\n\nAnalyse the three reports.\n"
    request = read_request(drop(home, "market.md", data))
    assert request.name == "market.md"
    assert request.text == data.decode()
    assert request.body == data.decode()
    assert request.title == "Market entry"
    assert request.forced_mode is None
    assert request.content_hash == hashlib.sha256(data).hexdigest()


def test_title_falls_back_to_first_line(home: Home) -> None:
    """Without front matter title or a leading heading, the first non-empty line is the title."""
    request = read_request(drop(home, "r.txt", b"\n\n  Convert assets/a.csv to markdown  \nmore\n"))
    assert request.title == "Convert assets/a.csv to markdown"


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("simple", Mode.SIMPLE_TASK),
        ("simple_task", Mode.SIMPLE_TASK),
        ("Simple-Task", Mode.SIMPLE_TASK),
        ("initial", Mode.INITIAL_RUN),
        ("INITIAL_RUN", Mode.INITIAL_RUN),
        ("continuous", Mode.CONTINUOUS_RUN),
    ],
)
def test_front_matter_forces_mode(home: Home, value: str, mode: Mode) -> None:
    """Front matter `mode:` forces the mode, and the body excludes the front matter."""
    data = f"---\nmode: {value}\ntitle: Quick job\n---\nList the assets.\n".encode()
    request = read_request(drop(home, "job.md", data))
    assert request.forced_mode is mode
    assert request.title == "Quick job"
    assert request.body == "List the assets.\n"
    assert request.text.startswith("---\nmode:")


def test_empty_front_matter_and_lone_rule(home: Home) -> None:
    """Empty front matter forces nothing, and a lone leading `---` is text, not front matter."""
    empty = read_request(drop(home, "a.md", b"---\n---\nDo it.\n"))
    assert (empty.forced_mode, empty.body) == (None, "Do it.\n")
    rule = read_request(drop(home, "b.md", b"---\nJust a rule above.\n"))
    assert rule.body == "---\nJust a rule above.\n"
    assert rule.title == "Just a rule above."


def test_korean_request_with_bom_and_crlf(home: Home) -> None:
    """A Korean request saved with a BOM and CRLF reads as clean UTF-8 text with LF."""
    text = (
        "---\r\ntitle: 시장 진입 메모\r\n---\r\n# 시장 분석\r\n\r\n세 보고서를 분석해 주세요.\r\n"
    )
    data = b"\xef\xbb\xbf" + text.encode("utf-8")
    request = read_request(drop(home, "시장.md", data))
    assert request.title == "시장 진입 메모"
    assert request.body == "# 시장 분석\n\n세 보고서를 분석해 주세요.\n"
    assert "\r" not in request.text and not request.text.startswith("\ufeff")
    assert request.content_hash == hashlib.sha256(data).hexdigest()


BAD_FILES = [
    ("empty.md", b"", "empty"),
    ("blank.md", b"  \n\t\r\n", "only whitespace"),
    ("nobody.md", b"---\nmode: simple\n---\n\n", "no request text"),
    ("binary.md", b"PK\x03\x04\x00\x00data", "NUL byte at byte 4"),
    ("latin1.txt", "caf\xe9 au lait".encode("latin-1"), "not valid UTF-8 (byte 3 is 0xe9)"),
    ("list.md", b"---\n- a\n- b\n---\nHello\n", "must be `key: value` lines"),
    ("yaml.md", b"---\nmode: [unclosed\n---\nHello\n", "not valid YAML"),
    ("mode.md", b"---\nmode: fast\n---\nHello\n", "allowed: simple, simple_task, initial"),
]


@pytest.mark.parametrize(("name", "data", "reason"), BAD_FILES)
def test_bad_file_rejected_and_preserved(home: Home, name: str, data: bytes, reason: str) -> None:
    """Each kind of bad file is refused with its reason, then kept byte for byte in rejected/."""
    path = drop(home, name, data)
    with pytest.raises(RequestRejected) as caught:
        read_request(path)
    assert reason in caught.value.reason
    assert isinstance(caught.value, UserError)
    moved = reject(home, path, caught.value.reason)
    assert moved == home.inbox_rejected / name
    assert moved.read_bytes() == data
    assert not path.exists()
    reason_file = home.inbox_rejected / f"{name}.reason.md"
    assert reason in reason_file.read_text(encoding="utf-8")


def test_non_utf8_position_counts_the_bom(home: Home) -> None:
    """The byte offset of a bad UTF-8 sequence is counted from the start of the file."""
    with pytest.raises(RequestRejected, match=r"byte 5 is 0xff"):
        parse_request("x.md", b"\xef\xbb\xbfab\xffcd")


def test_oversized_file_rejected_without_reading_it(home: Home) -> None:
    """A file over the limit is refused from its size alone (a sparse 1 GiB file is never read)."""
    path = home.inbox / "huge.md"
    with path.open("wb") as handle:
        handle.truncate(1024**3)
    with pytest.raises(
        RequestRejected, match=r"too large \(1073741824 bytes; the limit is 1048576"
    ):
        read_request(path, DEFAULT_MAX_BYTES)


def test_small_limit_and_grown_data(home: Home) -> None:
    """A limit is exclusive of its own size, and data longer than the limit is refused too."""
    assert read_request(drop(home, "ok.md", b"12345"), max_bytes=5).body == "12345"
    with pytest.raises(RequestRejected, match="too large"):
        read_request(drop(home, "big.md", b"123456"), max_bytes=5)
    with pytest.raises(RequestRejected, match="too large"):
        parse_request("grown.md", b"x" * 11, max_bytes=10)


def test_reason_file_explains(home: Home) -> None:
    """The reason file names the file, the time, what was wrong and what to do."""
    path = drop(home, "bad.md", b"")
    when = datetime(2026, 11, 21, 8, 30, 0, tzinfo=UTC)
    reject(home, path, "the file is empty", now=when)
    text = (home.inbox_rejected / "bad.md.reason.md").read_text(encoding="utf-8")
    assert text.startswith("# Request rejected: bad.md")
    assert "inbox/rejected/bad.md" in text
    assert "2026-11-21 08:30:00 UTC" in text
    assert "## What was wrong\n\nThe file is empty" in text
    assert "## What to do" in text


def test_reject_collisions_never_overwrite(home: Home) -> None:
    """Rejecting the same name again adds -1, -2 before the suffix; earlier files stay intact."""
    first = reject(home, drop(home, "req.md", b"one"), "Reason one")
    second = reject(home, drop(home, "req.md", b"two"), "Reason two")
    third = reject(home, drop(home, "req.md", b"three"), "Reason three")
    assert [p.name for p in (first, second, third)] == ["req.md", "req-1.md", "req-2.md"]
    assert [p.read_bytes() for p in (first, second, third)] == [b"one", b"two", b"three"]
    reason = (home.inbox_rejected / "req-1.md.reason.md").read_text(encoding="utf-8")
    assert "Reason two" in reason
    assert "Reason one" in (home.inbox_rejected / "req.md.reason.md").read_text(encoding="utf-8")


def test_reject_skips_name_whose_reason_file_exists(home: Home) -> None:
    """A leftover reason file also makes its name taken, so it is never overwritten."""
    home.inbox_rejected.mkdir()
    leftover = home.inbox_rejected / "x.md.reason.md"
    leftover.write_text("a person's note", encoding="utf-8")
    moved = reject(home, drop(home, "x.md", b"data"), "why")
    assert moved.name == "x-1.md"
    assert leftover.read_text(encoding="utf-8") == "a person's note"


def test_move_to_done_collision_safe(home: Home) -> None:
    """Handled requests move to done/ and a second one of the same name gets -1."""
    first = move_to_done(home, drop(home, "plan.v2.md", b"a"))
    second = move_to_done(home, drop(home, "plan.v2.md", b"b"))
    assert (first.name, second.name) == ("plan.v2.md", "plan.v2-1.md")
    assert (first.read_bytes(), second.read_bytes()) == (b"a", b"b")
    assert pending_requests(home) == []


def test_move_to_done_respects_existing_reply(home: Home) -> None:
    """A name whose reply file is already in done/ is taken, so an old reply is never reused."""
    home.inbox_done.mkdir()
    reply_path(home, "ask.md").write_text("old reply", encoding="utf-8")
    moved = move_to_done(home, drop(home, "ask.md", b"q"))
    assert moved.name == "ask-1.md"


def test_reply_path(home: Home) -> None:
    """A SIMPLE_TASK reply sits in done/ beside its request, named by the request's stem."""
    assert reply_path(home, "ask.md") == home.inbox / "done" / "ask.reply.md"
    assert reply_path(home, "note.txt") == home.inbox / "done" / "note.reply.md"
    assert reply_path(home, "ask-1.md") == home.inbox / "done" / "ask-1.reply.md"


def test_pair_name_keeps_request_and_reply_matched(home: Home) -> None:
    """The pair moves on together: a name is free only if neither its request nor its reply
    (of this naming or the old `<name>.reply.md` one) is in done/."""
    home.inbox_done.mkdir()
    assert pair_name(home, "ask.md") == "ask.md"
    (home.inbox_done / "ask.md").write_text("old request", encoding="utf-8")
    (home.inbox_done / "ask.reply.md").write_text("old reply", encoding="utf-8")
    (home.inbox_done / "ask-1.md.reply.md").write_text("an old-style reply", encoding="utf-8")
    (home.inbox_done / "ask-2.txt").write_text("a .txt request of the same stem", encoding="utf-8")
    assert pair_name(home, "ask.md") == "ask-3.md"
    kept = pair_name(home, "ask.md")
    reply_path(home, kept).write_text("new reply", encoding="utf-8")
    moved = move_to_done(home, drop(home, "ask.md", b"q"), kept)
    assert (moved.name, reply_path(home, moved.name).name) == ("ask-3.md", "ask-3.reply.md")
    assert (home.inbox_done / "ask.reply.md").read_text(encoding="utf-8") == "old reply"


@pytest.mark.parametrize(
    "name",
    [
        ".request.md.swp",
        "request.md.swx",
        ".request.md.swo",
        "request.md~",
        "#request.md#",
        ".#request.md",
        "request.md___jb_tmp___",
        "request.md___jb_old___",
        "sedA1b2C3",
        "4913",
        "5036",
        "request.md.tmp",
        "download.md.part",
        "download.md.crdownload",
        ".DS_Store",
        "inbox/sub/.hidden",
        "~$report.docx",
        "~$notes.md",
    ],
)
def test_ignorable_names(name: str) -> None:
    """Editor swap, temp, backup and hidden names are ignored."""
    assert is_ignorable_name(name)


@pytest.mark.parametrize(
    "name", ["request.md", "시장 분석.md", "sed.md", "sedimentary", "4914", "notes.txt", "a#b#.md"]
)
def test_real_names_not_ignored(name: str) -> None:
    """Ordinary request names, including Korean ones, are not ignored."""
    assert not is_ignorable_name(name)


# -- settling ------------------------------------------------------------------------------

SECOND = 1_000_000_000
SETTLE = SECOND // 2


def stamp(mtime_s: float, ctime_s: float) -> Stamp:
    """A stamp with the given times (seconds) and arbitrary identity and size."""
    return Stamp(1, 2, 3, int(mtime_s * SECOND), int(ctime_s * SECOND))


@pytest.mark.parametrize(
    ("times", "now_s", "writer", "wait"),
    [
        ((100, 100), 200, False, 0.0),  # long quiet, closed: settled at once
        ((100, 100), 200, None, 0.0),  # the OS cannot tell about writers: times alone
        ((100, 100), 100.5, False, 0.0),  # exactly the settle time
        ((100, 100.2), 100.3, False, 0.4),  # the newest time counts
        ((100.2, 100), 100.3, None, 0.4),
        ((100, 100), 200, True, 0.5),  # held open for writing: look again after settle time
        ((500, 100), 200, False, 0.0),  # an mtime ahead of the clock was set by a tool
        ((100, 300), 200, False, 0.5),  # a ctime ahead of the clock (set back) counts as now
    ],
)
def test_settle_wait(
    times: tuple[float, float], now_s: float, writer: bool | None, wait: float
) -> None:
    """A file is settled when closed and quiet for the settle time, by its own times."""
    result = settle_wait(stamp(*times), int(now_s * SECOND), writer, SETTLE)
    assert result == pytest.approx(wait)


def test_settle_zero_still_waits_for_a_writer() -> None:
    """With no settle time a closed file is ready at once, but an open one is not."""
    assert settle_wait(stamp(100, 100), 100 * SECOND, False, 0) == 0.0
    assert settle_wait(stamp(100, 100), 100 * SECOND, True, 0) > 0


def test_survey_waits_for_young_and_open_files(home: Home) -> None:
    """A file just written waits out the settle time; one held open waits for its writer."""
    drop(home, "young.md", b"a request")
    now = time.time_ns()
    survey = survey_inbox(home, 500, now_ns=now)
    assert survey.ready == [] and survey.wait is not None and 0 < survey.wait <= 0.5
    later = now + 10 * SECOND
    with (home.inbox / "open.md").open("ab") as writer:
        writer.write(b"half a req")
        writer.flush()
        if path_open_for_writing(home.inbox / "open.md") is None:
            pytest.skip("this OS cannot tell whether a file is open for writing")
        survey = survey_inbox(home, 500, now_ns=later)
        assert [entry.path.name for entry in survey.ready] == ["young.md"]
        assert survey.wait == pytest.approx(0.5)
    survey = survey_inbox(home, 500, now_ns=later)
    assert sorted(entry.path.name for entry in survey.ready) == ["open.md", "young.md"]
    assert survey.wait is None
    assert survey_inbox(home, 500, skip={"open.md", "young.md"}, now_ns=later).ready == []


def test_misfits_are_found_with_their_reasons(home: Home, tmp_path: Path) -> None:
    """Symlinks, sub-folders, other suffixes and pipes are misfits; temp names are not seen."""
    (tmp_path / "secret.txt").write_text("x", encoding="utf-8")
    (home.inbox / "p.md").symlink_to(tmp_path / "secret.txt")
    (home.inbox / "drafts").mkdir()
    drop(home, "brief.pdf", b"%PDF-1.7")
    os.mkfifo(home.inbox / "pipe.md")
    drop(home, "~$brief.docx", b"owner")
    drop(home, ".brief.md.123-0.tmp", b"ours")
    home.inbox_done.mkdir()
    home.inbox_rejected.mkdir()
    drop(home, "ok.md", b"a request")
    reasons = {entry.path.name: entry.misfit for entry in inbox_entries(home)}
    assert sorted(reasons) == ["brief.pdf", "drafts", "ok.md", "p.md", "pipe.md"]
    assert reasons["ok.md"] is None
    assert "symbolic link" in (reasons["p.md"] or "")
    assert "requests are *.md or *.txt files directly in inbox/" in (reasons["drafts"] or "")
    assert "only *.md and *.txt files are requests" in (reasons["brief.pdf"] or "")
    assert "not a regular file" in (reasons["pipe.md"] or "")
    assert [path.name for path in pending_requests(home)] == ["ok.md"]


def test_a_request_whose_real_path_leaves_the_home_is_a_misfit(tmp_path: Path) -> None:
    """An inbox/ linked to a folder outside the home makes its files misfits, never requests."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "req.md").write_text("Write a memo", encoding="utf-8")
    linked = Home(tmp_path / "linked")
    linked.root.mkdir()
    linked.inbox.symlink_to(elsewhere)
    [entry] = inbox_entries(linked)
    assert "lies outside the home" in (entry.misfit or "")
    assert pending_requests(linked) == []


def test_a_symlink_is_never_read_and_moves_as_a_link(home: Home, tmp_path: Path) -> None:
    """Reading a symlinked request is refused; rejecting moves the link, not its target."""
    target = tmp_path / "secret.txt"
    target.write_text("SECRET", encoding="utf-8")
    link = home.inbox / "p.md"
    link.symlink_to(target)
    with pytest.raises(RequestRejected, match="symbolic link"):
        read_request(link)
    moved = reject(home, link, "it is a symbolic link")
    assert moved.is_symlink() and os.readlink(moved) == str(target)
    assert not os.path.lexists(link) and target.read_text(encoding="utf-8") == "SECRET"


def test_a_pipe_named_like_a_request_does_not_block(home: Home) -> None:
    """A named pipe is refused at once by its type, never waited on."""
    os.mkfifo(home.inbox / "pipe.md")
    with pytest.raises(RequestRejected, match="not a regular file"):
        read_request(home.inbox / "pipe.md")


def test_a_folder_moves_whole_into_rejected(home: Home) -> None:
    """A sub-folder moves to rejected/ with its content and a reason file beside it."""
    (home.inbox / "drafts").mkdir()
    drop(home, "drafts/a.md", b"kept")
    moved = reject(home, home.inbox / "drafts", "it is a folder")
    assert (moved / "a.md").read_bytes() == b"kept"
    assert (home.inbox_rejected / "drafts.reason.md").exists()
    (home.inbox / "drafts").mkdir()
    assert reject(home, home.inbox / "drafts", "again").name == "drafts-1"


def test_a_file_changed_since_it_settled_is_left(home: Home) -> None:
    """Reading with the settled stamp refuses a file that changed since; it stays in place."""
    path = drop(home, "req.md", b"first half")
    settled = Stamp.of(path.stat())
    assert read_request(path, settled=settled).body == "first half"
    with path.open("ab") as handle:
        handle.write(b" and the second half")
    with pytest.raises(RequestChanged):
        read_request(path, settled=settled)
    assert path.exists()


# -- the daemon's inbox, end to end ----------------------------------------------------------

MARKER = "MARKER-7f3c1e-DO-NOT-COPY"


@pytest.fixture
def served(_isolated_home: Path) -> Home:
    """An initialised home, for the daemon (`start --once`) to serve."""
    result = Home(_isolated_home)
    init_home(result)
    return result


def _home_texts(home: Home) -> list[tuple[Path, bytes]]:
    """Every regular file under the home (symlinks are not followed) with its bytes."""
    found = []
    for folder, _, names in os.walk(home.root):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink() and path.is_file():
                found.append((path, path.read_bytes()))
    return found


def test_daemon_rejects_links_folders_and_documents(served: Home, tmp_path: Path) -> None:
    """A symlink, a sub-folder and a .pdf are turned away with a reason, told once; the
    link's target is never read into the home."""
    secret = tmp_path / "outside" / "passwd.md"
    secret.parent.mkdir()
    secret.write_text(f"# Write a memo\n\n{MARKER}\n", encoding="utf-8")
    (served.inbox / "p.md").symlink_to(secret)
    (served.inbox / "drafts").mkdir()
    drop(served, "drafts/memo.md", b"Write a memo")
    drop(served, "brief.pdf", b"%PDF-1.7 not a request")
    result = once(served)
    assert result.returncode == 0, result.stderr
    rejected = served.inbox_rejected
    assert os.readlink(rejected / "p.md") == str(secret)
    assert (rejected / "drafts" / "memo.md").read_bytes() == b"Write a memo"
    assert (rejected / "brief.pdf").read_bytes() == b"%PDF-1.7 not a request"
    for name, why in [
        ("p.md", "symbolic link"),
        ("drafts", "directly in inbox/"),
        ("brief.pdf", "only *.md and *.txt files are requests"),
    ]:
        assert why in (rejected / f"{name}.reason.md").read_text(encoding="utf-8").lower()
        assert result.stdout.count(f"`{name}` was not accepted") == 1, result.stdout
    assert sorted(os.listdir(served.inbox)) == ["rejected"]
    assert runs(served) == []
    assert MARKER not in result.stdout + result.stderr
    assert [path for path, data in _home_texts(served) if MARKER.encode() in data] == []


WRITER = """
import sys, time
path, hold, gap, *pieces = sys.argv[1:]
if hold == "hold":
    with open(path, "a", encoding="utf-8") as handle:
        for index, piece in enumerate(pieces):
            if index:
                time.sleep(float(gap))
            handle.write(piece)
            handle.flush()
else:
    for index, piece in enumerate(pieces):
        if index:
            time.sleep(float(gap))
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(piece)
"""


def test_a_request_written_in_pieces_is_taken_whole(served: Home) -> None:
    """`start --once` waits for files written in pieces: one held open with pauses longer than
    the settle time, one reopened for each piece; each run's request.md holds the whole text."""
    held = [
        "# Market memo\n\n",
        "Write a market memo ",
        "about e-bikes in Europe ",
        "with a chart.\n",
    ]
    reopened = [f"Write a competitor analysis, part {i}. " for i in range(7)] + ["End.\n"]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(served.inbox / "held.md"), "hold", "0.7", *held]
        ),
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                str(served.inbox / "reopened.md"),
                "reopen",
                "0.25",
                *reopened,
            ]
        ),
    ]
    try:
        deadline = time.monotonic() + 30
        while not all((served.inbox / name).exists() for name in ("held.md", "reopened.md")):
            assert time.monotonic() < deadline, "the writers never started"
            time.sleep(0.01)
        result = once(served)
    finally:
        for writer in writers:
            assert writer.wait(timeout=30) == 0
    assert result.returncode == 0, result.stderr
    texts = sorted(
        served.run(row["run_id"]).request.read_text(encoding="utf-8") for row in runs(served)
    )
    assert texts == sorted(["".join(held), "".join(reopened)])
