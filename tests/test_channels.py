"""The Communicator's further channels: a real loopback webhook, a real command, the outbox."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import re
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from structlog.testing import capture_logs

from app.doctor import diagnose, render_doctor
from communicator import BuiltinCommunicator, Speaker
from communicator.channels import Channels, Outbox, open_channels
from communicator.senders import envelope_of
from multiverse.config import CommandChannel, WebhookChannel
from multiverse.config.mapping import parse_runtime_mapping
from multiverse.errors import ConfigError
from multiverse.home import Home
from multiverse.roles import Message, MessageKind

from forked import forked
from journey import cli, copy_assets, once, only_run, runs, wait_for
from web_servers import closed_port

SECRET = "s3cret-hook-signing-key-42"
SECRET_ENV = "TEST_HOOK_SECRET"
SINK = Path(__file__).resolve().parent / "channel_sink.py"
ID_IN_MESSAGES = re.compile(r"^## .* · (\w+).*<!-- id:(\w+) -->$", re.MULTILINE)


@dataclass
class Hit:
    """One request the loopback webhook received."""

    headers: dict[str, str]
    body: bytes
    status: int


@dataclass
class Hook:
    """A loopback HTTP server that records every request; the first `failures` get HTTP 500."""

    url: str = ""
    failures: int = 0
    hits: list[Hit] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def accepted(self) -> list[Hit]:
        """The requests answered 200."""
        with self.lock:
            return [hit for hit in self.hits if hit.status == 200]

    def record(self, headers: dict[str, str], body: bytes) -> int:
        """Record a request; the status to answer."""
        with self.lock:
            status = 500 if self.failures > 0 else 200
            self.failures -= 1
            self.hits.append(Hit(headers, body, status))
            return status


@contextlib.contextmanager
def serving_hook(port: int = 0) -> Iterator[Hook]:
    """A recording webhook on 127.0.0.1 (a random port unless given), served by a thread."""
    recorder = Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = recorder.record({k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep the test output quiet

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    recorder.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    """A recording loopback webhook."""
    with serving_hook() as recorder:
        yield recorder


def signed_correctly(hit: Hit, key: str = SECRET) -> bool:
    """Recompute the HMAC as a receiver would, independently of the sender's code."""
    timestamp = hit.headers["x-multiverse-timestamp"]
    expected = hmac.new(key.encode(), f"{timestamp}.".encode() + hit.body, hashlib.sha256)
    return hmac.compare_digest(
        "sha256=" + expected.hexdigest(), hit.headers["x-multiverse-signature"]
    )


def write_channels(home: Home, channels: list[dict[str, Any]]) -> None:
    """Add a `channels:` section to the home's runtime-mapping.yaml."""
    text = home.mapping_file.read_text(encoding="utf-8")
    home.mapping_file.write_text(text + "\n" + yaml.safe_dump({"channels": channels}))


def said(home: Home, run_id: str) -> list[tuple[str, str]]:
    """(kind, id) of every entry of the run's messages.md, in order."""
    return ID_IN_MESSAGES.findall(home.run(run_id).messages.read_text(encoding="utf-8"))


def speaker_with(home: Home, *channels: WebhookChannel | CommandChannel, **env: str) -> Speaker:
    """A builtin Speaker whose console is a list, with these channels."""
    return Speaker(home, BuiltinCommunicator(), [].append, open_channels(home, list(channels), env))


def notice(run_id: str | None, text: str) -> Message:
    """A NOTICE message."""
    return Message(kind=MessageKind.NOTICE, run_id=run_id, facts={"text": text})


# -- configuration ---------------------------------------------------------------------------


def test_channels_parse_with_defaults() -> None:
    """A webhook and a command parse with bounded defaults; no section means no channel."""
    mapping = parse_runtime_mapping(
        "channels:\n"
        "  - {name: ops, type: webhook, url: 'https://u:p@hooks.example/x?token=1',"
        "     secret_env: HOOK_KEY, kinds: [FAILURE, COMPLETION]}\n"
        "  - {name: mail, type: command, command: [notify-send]}\n",
        "runtime-mapping.yaml",
    )
    webhook, command = mapping.channels
    assert isinstance(webhook, WebhookChannel) and isinstance(command, CommandChannel)
    assert (webhook.max_attempts, webhook.timeout_seconds) == (3, 10.0)
    assert webhook.target() == "https://hooks.example/x"  # no credentials, no query
    assert webhook.takes(MessageKind.FAILURE) and not webhook.takes(MessageKind.NOTICE)
    assert command.takes(MessageKind.NOTICE) and command.input == "json"
    assert parse_runtime_mapping("channels:\n", "m").channels == []
    assert parse_runtime_mapping("daemon: {}\n", "m").channels == []


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ("[{name: a, type: webhook}]", "exactly one of url or url_env"),
        ("[{name: a, type: webhook, url: 'ftp://x'}]", "http"),
        ("[{name: a, type: webhook, url: 'http://x', token: abc}]", "unknown key"),
        ("[{name: a, type: command, command: []}]", "channels.0.command"),
        ("[{name: a, type: pager}]", "channels.0"),
        ("[{name: a, type: command, command: [x], max_attempts: 50}]", "max_attempts"),
        ("[{name: a, type: command, command: [x]}, {name: a, type: command, command: [y]}]",
         "unique"),
    ],
)  # fmt: skip
def test_bad_channels_are_config_errors(section: str, problem: str) -> None:
    """A malformed channel is a ConfigError naming the problem."""
    with pytest.raises(ConfigError, match=problem):
        parse_runtime_mapping(f"channels: {section}\n", "runtime-mapping.yaml")


# -- the webhook -----------------------------------------------------------------------------


def test_webhook_gets_each_message_signed(home: Home, hook: Hook) -> None:
    """Each message arrives once with its id, a valid signature, and the text said."""
    channel = WebhookChannel(
        name="ops", type="webhook", url=hook.url, secret_env=SECRET_ENV,
        headers={"X-Team": "blue"},
    )  # fmt: skip
    speaker = speaker_with(home, channel, **{SECRET_ENV: SECRET})
    speaker.tell(notice("run-20260101-000000-001", "first"))
    speaker.tell(notice("run-20260101-000000-001", "second"), once="k")
    speaker.tell(notice("run-20260101-000000-001", "second"), once="k")  # said already
    speaker.tell(notice(None, "global"))
    speaker.close()

    hits = hook.accepted()
    bodies = [json.loads(hit.body) for hit in hits]
    assert [body["text"] for body in bodies] == ["first", "second", "global"]
    assert all(signed_correctly(hit) for hit in hits)
    assert [hit.headers["x-multiverse-message-id"] for hit in hits] == [b["id"] for b in bodies]
    assert all(hit.headers["x-team"] == "blue" for hit in hits)
    ids = [message_id for _, message_id in said(home, "run-20260101-000000-001")]
    assert ids == [bodies[0]["id"], bodies[1]["id"]]
    assert not list((home.state / "outbox").glob("*.json"))


def test_webhook_retries_a_500_then_delivers_once(home: Home, hook: Hook) -> None:
    """A first answer of HTTP 500 is retried; the message is accepted exactly once."""
    hook.failures = 1
    channel = WebhookChannel(name="ops", type="webhook", url=hook.url, retry_delay_seconds=0.01)
    speaker = speaker_with(home, channel)
    with capture_logs() as logs:
        speaker.tell(notice("run-20260101-000000-001", "hello"))
        wait_for(lambda: len(hook.accepted()) == 1, "the retried delivery", seconds=30)
        speaker.close()
    assert [hit.status for hit in hook.hits] == [500, 200]
    assert len({hit.headers["x-multiverse-message-id"] for hit in hook.hits}) == 1
    events = [entry["event"] for entry in logs]
    assert "channel_attempt_failed" in events and "channel_delivered" in events


def test_down_webhook_is_logged_and_nothing_is_lost(home: Home) -> None:
    """A channel nobody listens on: tell returns, messages.md has all, the failure is logged."""
    url = f"http://127.0.0.1:{closed_port()}/hook"
    channel = WebhookChannel(
        name="down", type="webhook", url=url, max_attempts=2, retry_delay_seconds=0.01
    )
    speaker = speaker_with(home, channel)
    with capture_logs() as logs:
        for text in ("one", "two"):
            speaker.tell(notice("run-20260101-000000-001", text))
        speaker.close()
    assert [kind for kind, _ in said(home, "run-20260101-000000-001")] == ["NOTICE", "NOTICE"]
    abandoned = [entry for entry in logs if entry["event"] == "channel_delivery_abandoned"]
    assert len(abandoned) == 2 and all(entry["attempts"] == 2 for entry in abandoned)
    assert not list((home.state / "outbox").glob("*.json"))


def test_missing_signing_key_never_sends_unsigned(home: Home, hook: Hook) -> None:
    """A webhook whose key variable is not set sends nothing and says why in the log."""
    channel = WebhookChannel(name="ops", type="webhook", url=hook.url, secret_env=SECRET_ENV)
    speaker = speaker_with(home, channel)
    with capture_logs() as logs:
        speaker.tell(notice("run-20260101-000000-001", "hello"))
        speaker.close()
    assert hook.hits == []
    abandoned = [entry for entry in logs if entry["event"] == "channel_delivery_abandoned"]
    assert SECRET_ENV in abandoned[0]["error"] and abandoned[0]["attempts"] == 1


# -- the command -----------------------------------------------------------------------------


def test_command_gets_each_message_on_stdin(home: Home, tmp_path: Path) -> None:
    """A real script receives every message as JSON on stdin, in order, with its id."""
    out = tmp_path / "received.jsonl"
    channel = CommandChannel(
        name="sink", type="command", command=[sys.executable, str(SINK), str(out)]
    )
    speaker = speaker_with(home, channel)
    for text in ("alpha", "beta", "gamma"):
        speaker.tell(notice("run-20260101-000000-001", text))
    speaker.close()
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    bodies = [json.loads(record["stdin"]) for record in records]
    assert [body["text"] for body in bodies] == ["alpha", "beta", "gamma"]
    assert [record["id"] for record in records] == [body["id"] for body in bodies]
    assert {record["kind"] for record in records} == {"NOTICE"}


def test_command_text_input_and_kind_filter(home: Home, tmp_path: Path) -> None:
    """With input: text the script reads the markdown; kinds not listed are not sent."""
    out = tmp_path / "received.jsonl"
    channel = CommandChannel(
        name="sink", type="command", command=[sys.executable, str(SINK), str(out)],
        input="text", kinds=[MessageKind.CANCELLED],
    )  # fmt: skip
    speaker = speaker_with(home, channel)
    speaker.tell(notice("run-20260101-000000-001", "not for the sink"))
    speaker.tell(Message(kind=MessageKind.CANCELLED, run_id="run-20260101-000000-001"))
    speaker.close()
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 1 and records[0]["kind"] == "CANCELLED"
    assert records[0]["stdin"].startswith("Run `run-20260101-000000-001` is cancelled")


def test_failing_command_is_retried_then_succeeds(home: Home, tmp_path: Path) -> None:
    """A script that exits 1 is retried; once it works the message arrives once."""
    out, marker = tmp_path / "received.jsonl", tmp_path / "fail"
    marker.write_text("fail")
    channel = CommandChannel(
        name="sink", type="command", retry_delay_seconds=0.05, max_attempts=10,
        command=[sys.executable, str(SINK), str(out), str(marker)],
    )  # fmt: skip
    speaker = speaker_with(home, channel)
    with capture_logs() as logs:
        speaker.tell(notice("run-20260101-000000-001", "late"))
        wait_for(
            lambda: any(e["event"] == "channel_attempt_failed" for e in logs), "a failed attempt"
        )
        marker.unlink()
        wait_for(out.exists, "the delivery", seconds=60)
        speaker.close()
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1
    failed = next(e for e in logs if e["event"] == "channel_attempt_failed")
    assert "exit 1" in failed["error"] and "on purpose" in failed["error"]


# -- the outbox ------------------------------------------------------------------------------


def test_outbox_replays_what_was_said_and_drops_what_was_not(home: Home, hook: Hook) -> None:
    """After a crash: a delivery whose message is in messages.md is sent, an unsaid one dropped."""
    run_id = "run-20260101-000000-001"
    Speaker(home, BuiltinCommunicator(), [].append).tell(notice(run_id, "said before the crash"))
    ((_, said_id),) = said(home, run_id)
    outbox = Outbox(home.state / "outbox")
    told = envelope_of(notice(run_id, "said before the crash"), "said before the crash")
    outbox.stage("ops", told.model_copy(update={"id": said_id}))
    outbox.stage("ops", envelope_of(notice(run_id, "never said"), "never said"))
    outbox.stage("gone", envelope_of(notice(run_id, "old channel"), "old channel"))

    channels = Channels(home, [WebhookChannel(name="ops", type="webhook", url=hook.url)], {})
    channels.start()
    channels.close()
    assert [json.loads(hit.body)["id"] for hit in hook.accepted()] == [said_id]
    assert not list(outbox.folder.glob("*.json"))


def test_undelivered_messages_wait_in_the_outbox_for_the_next_start(home: Home) -> None:
    """Closing with a channel still retrying leaves its delivery in the outbox, bounded in time."""
    url = f"http://127.0.0.1:{closed_port()}/hook"
    channel = WebhookChannel(
        name="down", type="webhook", url=url, max_attempts=5, retry_delay_seconds=30
    )
    channels = Channels(home, [channel], {}, grace_seconds=0.2)
    speaker = Speaker(home, BuiltinCommunicator(), [].append, channels)
    speaker.tell(notice("run-20260101-000000-001", "pending"))
    wait_for(lambda: list((home.state / "outbox").glob("*.json")) != [], "the staged delivery")
    speaker.close()  # returns after the grace period, not after 5 attempts
    assert len(list((home.state / "outbox").glob("*.json"))) == 1


# -- a whole run -----------------------------------------------------------------------------


def test_whole_run_sends_every_message_once_in_order_signed(home: Home, hook: Hook) -> None:
    """Through the daemon: every messages.md entry reaches the webhook once, in order, signed."""
    write_channels(
        home, [{"name": "ops", "type": "webhook", "url": hook.url, "secret_env": SECRET_ENV}]
    )
    env = {SECRET_ENV: SECRET}
    copy_assets(home)
    assert cli(home, "submit", "Summarise the reports in a short memo.").returncode == 0
    first = once(home, env=env)
    assert first.returncode == 0, first.stderr
    run_id = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    second = once(home, env=env)
    assert second.returncode == 0, second.stderr
    assert only_run(home)["status"] == "COMPLETED"

    entries = said(home, run_id)
    assert entries[0][0] == "PROPOSAL" and entries[-1][0] == "COMPLETION"
    hits = [hit for hit in hook.accepted() if json.loads(hit.body)["run_id"] == run_id]
    assert [json.loads(hit.body)["id"] for hit in hits] == [message_id for _, message_id in entries]
    assert all(signed_correctly(hit) for hit in hits)
    assert not list((home.state / "outbox").glob("*.json"))
    for path in home.root.rglob("*"):  # the key is in no file of the home, logs included
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_whole_run_with_a_channel_down_completes(home: Home) -> None:
    """A webhook nobody answers: the run still completes, messages.md has all, it is logged."""
    url = f"http://127.0.0.1:{closed_port()}/hook"
    write_channels(
        home,
        [{"name": "down", "type": "webhook", "url": url, "max_attempts": 2,
          "retry_delay_seconds": 0.01}],
    )  # fmt: skip
    copy_assets(home)
    assert cli(home, "submit", "Summarise the reports in a short memo.").returncode == 0
    first = once(home)
    assert first.returncode == 0, first.stderr
    run_id = only_run(home)["run_id"]
    assert cli(home, "confirm", run_id).returncode == 0
    second = once(home)
    assert second.returncode == 0, second.stderr
    assert only_run(home)["status"] == "COMPLETED"
    kinds = [kind for kind, _ in said(home, run_id)]
    assert kinds[0] == "PROPOSAL" and kinds[-1] == "COMPLETION"
    log = (home.state / "logs" / "daemon.jsonl").read_text(encoding="utf-8")
    abandoned = [
        json.loads(line) for line in log.splitlines() if "channel_delivery_abandoned" in line
    ]
    assert {entry["message_id"] for entry in abandoned} >= {i for _, i in said(home, run_id)}
    assert "Traceback" not in first.stderr + second.stderr
    assert not list((home.state / "outbox").glob("*.json"))


def test_delivery_survives_a_killed_daemon(home: Home) -> None:
    """kill -9 after the message is in messages.md but before the channel took it: sent later."""
    port = closed_port()
    write_channels(
        home,
        [{"name": "ops", "type": "webhook", "url": f"http://127.0.0.1:{port}/hook",
          "max_attempts": 5, "retry_delay_seconds": 60}],
    )  # fmt: skip
    assert cli(home, "submit", "Summarise the reports in a short memo.").returncode == 0
    outbox = home.state / "outbox"
    with forked(home, "start") as daemon:

        def said_and_pending() -> bool:
            found = [path.parent.name for path in home.runs.glob("run-*/messages.md")]
            return bool(found and said(home, found[0]) and list(outbox.glob("*.json")))

        try:
            wait_for(said_and_pending, "the proposal said and its delivery pending", seconds=120)
        finally:
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
    run_id = runs(home)[0]["run_id"]
    ((kind, message_id),) = said(home, run_id)
    assert kind == "PROPOSAL"

    with serving_hook(port) as hook:
        result = once(home)
        assert result.returncode == 0, result.stderr
        assert [json.loads(hit.body)["id"] for hit in hook.accepted()] == [message_id]
    assert not list(outbox.glob("*.json"))


# -- doctor ----------------------------------------------------------------------------------


def test_doctor_lists_channels_without_secrets(home: Home) -> None:
    """Doctor shows each channel's target and whether its secret is set, never the secret."""
    write_channels(
        home,
        [
            {"name": "ops", "type": "webhook", "url": "https://me:pw@hooks.example/in?t=abc",
             "secret_env": SECRET_ENV},
            {"name": "slack", "type": "webhook", "url_env": "SLACK_HOOK_URL"},
            {"name": "pager", "type": "command", "command": ["no-such-program-xyz"]},
        ],
    )  # fmt: skip
    environ = {SECRET_ENV: SECRET}
    report = diagnose(home.root, environ)
    text = render_doctor(report)
    assert "ops: webhook → https://hooks.example/in" in text
    assert f"{SECRET_ENV}: set" in text and "SLACK_HOOK_URL: not set" in text
    assert "program not found: no-such-program-xyz" in text
    assert SECRET not in text and "pw" not in text and "t=abc" not in text
    assert not report.healthy


# -- what only the daemon may say, and what a program may see ---------------------------------


def test_a_forged_outbox_entry_is_refused_never_sent(home: Home, hook: Hook) -> None:
    """Entries dropped into the outbox by anyone but the daemon (no signature, a wrong one, a
    genuine one edited) are moved aside with their reason and never delivered; the daemon's own
    entry is; the outbox key is readable by its owner only."""
    outbox = Outbox(home.state / "outbox")
    genuine = outbox.stage("ops", envelope_of(notice(None, "genuine"), "genuine"))
    body = {"channel": "ops", "envelope": envelope_of(notice(None, "forged"), "forged")
            .model_dump(mode="json")}  # fmt: skip
    forged = {
        "00000000000000000001-unsigned.json": body,
        "00000000000000000002-wrong.json": {**body, "mac": "0" * 64},
    }
    edited = json.loads(genuine.read_text(encoding="utf-8"))
    edited["envelope"]["text"] = "edited after it was staged"
    forged["00000000000000000003-edited.json"] = edited
    for name, data in forged.items():
        (outbox.folder / name).write_text(json.dumps(data), encoding="utf-8")
    assert (home.state / "outbox.key").stat().st_mode & 0o077 == 0

    channels = Channels(home, [WebhookChannel(name="ops", type="webhook", url=hook.url)], {})
    channels.start()
    channels.close()
    texts = [json.loads(hit.body)["text"] for hit in hook.accepted()]
    assert "genuine" in texts[0] and len(texts) == 1, texts
    refused = outbox.folder / "refused"
    assert sorted(p.name for p in refused.glob("*.json")) == sorted(forged)
    for name in forged:
        reason = (refused / f"{name}.reason.txt").read_text(encoding="utf-8")
        assert "not written by this home's daemon" in reason
    assert not list(outbox.folder.glob("*.json"))


def test_a_command_channel_gets_a_minimal_environment(home: Home, tmp_path: Path) -> None:
    """The program sees PATH, HOME, LANG, the variables its entry names and its message's
    MULTIVERSE_*; never a model key, a webhook's secret or anything else of the daemon's."""
    out = tmp_path / "environment.json"
    dump = "import json, os, sys; open(sys.argv[1], 'w').write(json.dumps(dict(os.environ)))"
    channel = CommandChannel(name="env", type="command", command=[sys.executable, "-c", dump,
                                                                  str(out)], env=["NAMED_VAR"])
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
               "OPENAI_API_KEY": "sk-test-0123456789abcdef", "HOOK_SECRET": "s3cret-value-123",
               "NAMED_VAR": "named", "OTHER_VAR": "other"}  # fmt: skip
    speaker = speaker_with(home, channel, **environ)
    speaker.tell(notice("run-20260101-000000-001", "hello"))
    speaker.close()
    seen = json.loads(out.read_text(encoding="utf-8"))
    own = {name for name in seen if not name.startswith("MULTIVERSE_")} - {"LC_CTYPE"}
    assert own == {"PATH", "HOME", "LANG", "NAMED_VAR"}, sorted(seen)
    assert seen["NAMED_VAR"] == "named" and seen["MULTIVERSE_RUN_ID"] == "run-20260101-000000-001"
    assert "sk-test-0123456789abcdef" not in json.dumps(seen)
    assert "s3cret-value-123" not in json.dumps(seen)


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ("[{name: a, type: command, command: [x], env: [OPENAI_API_KEY]}]", "model key"),
        ("[{name: h, type: webhook, url: 'http://127.0.0.1:9/h', secret_env: HOOK_KEY},"
         " {name: a, type: command, command: [x], env: [HOOK_KEY]}]", "webhook's secret"),
    ],
)
def test_a_channel_that_would_pass_a_key_to_its_program_is_refused(
    section: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_runtime_mapping(f"channels: {section}\n", "runtime-mapping.yaml")
