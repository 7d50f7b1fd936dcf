"""The Communicator role: the only code that speaks to the user (SPEC §10.7).

Its public face is `Speaker`, the single door through which anything reaches the user: the
console, runs/<run_id>/messages.md, replies and channels. What is said comes from a
`CommunicatorRole` (`communicator`, `communicator.model`); how it leaves, from
`communicator.channels` and `communicator.senders`.

The builtin Communicator: clear, friendly messages from templates, facts verbatim.

A message to a run is said in the requester's language (the run's request spec), where there
are templates for it (English and Korean); any other language is answered in English.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import structlog
from filelock import FileLock

from communicator.channels import Channels, Delivery, id_marker
from communicator.senders import Envelope, envelope_of
from multiverse.atomic import atomic_write_text
from multiverse.home import Home
from multiverse.roles import CommunicatorRole, Message, MessageKind


def _proposal(m: Message) -> str:
    f = m.facts
    return (
        f"I have read your request and prepared a proposal for run `{m.run_id}`.\n\n"
        f"{f.get('summary', '')}\n\n"
        f"Please read `{f.get('proposal_path', '')}`, then answer with one of:\n"
        f"- `multiverse confirm {m.run_id}` to go ahead,\n"
        f'- `multiverse modify {m.run_id} "what to change"` to revise it,\n'
        f"- `multiverse cancel {m.run_id}` to stop.\n"
        "(Or write CONFIRM, MODIFY: <text> or CANCEL into "
        f"`runs/{m.run_id}/user_response.md`.)"
    )


def _answer_received(m: Message) -> str:
    answer = m.facts.get("answer", "")
    if answer == "CONFIRM":
        return f"Thank you: run `{m.run_id}` is confirmed. I am starting the work now."
    return (
        f"Thank you: I will revise the proposal of run `{m.run_id}` with your changes:\n\n"
        f"> {m.facts.get('text', '')}"
    )


def _answer_refused(m: Message) -> str:
    return (
        f"I could not understand the answer for run `{m.run_id}`:\n\n"
        f"> {m.facts.get('text', '') or '(empty)'}\n\n"
        "Please answer CONFIRM, CANCEL or MODIFY: <what to change>. "
        "The question is still open."
    )


def _cancelled(m: Message) -> str:
    text = f"Run `{m.run_id}` is cancelled, as you asked. Nothing more will be done for it."
    finished = m.facts.get("finished", "")
    if finished:
        text += f"\n\nWhat had finished: {finished}. Its tables and files stay as they were."
    return text


def _failure(m: Message) -> str:
    f = m.facts
    place = " › ".join(
        f"{label} {f[key]}"
        for label, key in (
            ("phase", "phase"),
            ("stage", "stage"),
            ("task", "task"),
            ("tool task", "tool_task"),
        )
        if f.get(key)
    )
    return (
        f"Run `{m.run_id}` has stopped because of an error.\n\n"
        f"- where: {place or 'the run itself'}\n"
        f"- failed work: {f.get('purpose', '') or '(not recorded)'}\n"
        f"- reported by: {f.get('role', 'system')}\n\n"
        f"Error log:\n\n```\n{f.get('error', '')}\n```\n\n"
        "Every level of the run is marked FAILED; nothing more will run for it. Once the "
        f"cause is fixed, `multiverse retry {m.run_id}` resumes it from this step, keeping "
        "everything already completed."
    )


def _retry(m: Message) -> str:
    f = m.facts
    return (
        f"Retrying run `{m.run_id}` (retry {f.get('retry', '?')}), as you asked: it goes on from "
        f"{f.get('place', '') or 'where it stopped'}. Everything already completed is kept; "
        f"the earlier failure stays in this file and in `{f.get('history', '')}`.\n\n"
        f"It failed with:\n\n```\n{f.get('error', '')}\n```"
    )


def _completion(m: Message) -> str:
    listing = "\n".join(f"- `{item}`" for item in m.items) or "- (no files)"
    text = (
        f"Run `{m.run_id}` is complete. The deliverables are in "
        f"`{m.facts.get('outputs', '')}`:\n\n{listing}"
    )
    return text + _not_done(m)


def _not_done(m: Message) -> str:
    """What the run was asked and did not do (a chart not drawn, numbers not traced…)."""
    lines = [line for line in m.facts.get("not_done", "").split("\n") if line]
    if not lines:
        return ""
    return "\n\nAsked but not done:\n\n" + "\n".join(f"- {line}" for line in lines)


def _simple_reply(m: Message) -> str:
    return m.facts.get("reply", "")


def _approval_request(m: Message) -> str:
    ident = m.facts.get("approval_id", "")
    return (
        f"Run `{m.run_id}` (task {m.facts.get('task_id', '?')}) asks for your approval "
        f"({ident}) to run:\n\n    {m.facts.get('action', '')}\n\n"
        f"Allow it: `multiverse approve {m.run_id}`; refuse it: `multiverse deny {m.run_id}` "
        f"(or write APPROVE or DENY into `runs/{m.run_id}/user_response.md`). No answer "
        f"within {m.facts.get('timeout', '?')} means no. The run waits until then."
    )


def _hold(m: Message) -> str:
    if m.facts.get("reason", "").startswith("user:"):
        return (
            f"Run `{m.run_id}` is paused, as you asked: no new step starts. "
            f"`multiverse resume {m.run_id}` (or RESUME in `runs/{m.run_id}/user_response.md`) "
            f"lets it go on; `multiverse cancel {m.run_id}` stops it."
        )
    table = m.facts.get("table", "")
    edit = (
        f"Read it in `{table}` and edit its PENDING rows if you like (your save is merged). "
        if table
        else ""
    )
    return (
        f"Run `{m.run_id}` holds before it runs {m.facts.get('plan', 'its plan')}, as "
        f"`daemon.pause_before` asks. {edit}Then let it go on: `multiverse resume {m.run_id}` "
        f"(or write RESUME into `runs/{m.run_id}/user_response.md`); "
        f"`multiverse cancel {m.run_id}` stops it."
    )


def _notice(m: Message) -> str:
    return m.facts.get("text", "")


def _ko_proposal(m: Message) -> str:
    f = m.facts
    return (
        f"요청을 읽고 실행 `{m.run_id}`의 제안서를 준비했습니다.\n\n"
        f"{f.get('summary', '')}\n\n"
        f"`{f.get('proposal_path', '')}`를 읽고 다음 중 하나로 답해 주세요:\n"
        f"- `multiverse confirm {m.run_id}`: 진행\n"
        f'- `multiverse modify {m.run_id} "바꿀 내용"`: 제안서 수정\n'
        f"- `multiverse cancel {m.run_id}`: 중단\n"
        "(또는 CONFIRM, MODIFY: <내용>, CANCEL 중 하나를 "
        f"`runs/{m.run_id}/user_response.md`에 적어 주세요.)"
    )


def _ko_answer_received(m: Message) -> str:
    if m.facts.get("answer", "") == "CONFIRM":
        return f"감사합니다. 실행 `{m.run_id}`이(가) 확정되었습니다. 지금 작업을 시작합니다."
    return (
        f"감사합니다. 요청하신 변경 사항으로 실행 `{m.run_id}`의 제안서를 고치겠습니다:\n\n"
        f"> {m.facts.get('text', '')}"
    )


def _ko_answer_refused(m: Message) -> str:
    return (
        f"실행 `{m.run_id}`에 대한 답을 이해하지 못했습니다:\n\n"
        f"> {m.facts.get('text', '') or '(비어 있음)'}\n\n"
        "CONFIRM, CANCEL 또는 MODIFY: <바꿀 내용>으로 답해 주세요. 질문은 아직 열려 있습니다."
    )


def _ko_cancelled(m: Message) -> str:
    text = f"요청하신 대로 실행 `{m.run_id}`을(를) 취소했습니다. 더 이상 진행하지 않습니다."
    finished = m.facts.get("finished", "")
    if finished:
        text += f"\n\n끝난 작업: {finished}. 표와 파일은 그대로 남아 있습니다."
    return text


_KO_PLACES = (
    ("단계", "phase"), ("스테이지", "stage"), ("작업", "task"), ("도구 작업", "tool_task")
)


def _ko_failure(m: Message) -> str:
    f = m.facts
    place = " › ".join(
        f"{label} {f[key]}"
        for label, key in _KO_PLACES
        if f.get(key)
    )
    return (
        f"오류로 실행 `{m.run_id}`이(가) 멈췄습니다.\n\n"
        f"- 위치: {place or '실행 전체'}\n"
        f"- 실패한 작업: {f.get('purpose', '') or '(기록 없음)'}\n"
        f"- 보고한 역할: {f.get('role', 'system')}\n\n"
        f"오류 기록:\n\n```\n{f.get('error', '')}\n```\n\n"
        "실행의 모든 수준이 FAILED로 표시되었고 더 이상 진행하지 않습니다. 원인을 고친 뒤 "
        f"`multiverse retry {m.run_id}`로 이 단계부터 다시 시작하며, 이미 끝난 작업은 그대로 "
        "유지됩니다."
    )


def _ko_retry(m: Message) -> str:
    f = m.facts
    return (
        f"요청하신 대로 실행 `{m.run_id}`을(를) 다시 시도합니다 (재시도 {f.get('retry', '?')}): "
        f"{f.get('place', '') or '멈춘 곳'}부터 이어 갑니다. 이미 끝난 작업은 유지되고, "
        f"이전 실패는 이 파일과 `{f.get('history', '')}`에 남습니다.\n\n"
        f"이전 오류:\n\n```\n{f.get('error', '')}\n```"
    )


def _ko_completion(m: Message) -> str:
    listing = "\n".join(f"- `{item}`" for item in m.items) or "- (파일 없음)"
    text = (
        f"실행 `{m.run_id}`이(가) 완료되었습니다. 결과물은 "
        f"`{m.facts.get('outputs', '')}`에 있습니다:\n\n{listing}"
    )
    return text + _ko_not_done(m)


def _ko_not_done(m: Message) -> str:
    lines = [line for line in m.facts.get("not_done", "").split("\n") if line]
    if not lines:
        return ""
    return "\n\n요청 중 하지 못한 것:\n\n" + "\n".join(f"- {line}" for line in lines)


def _ko_approval_request(m: Message) -> str:
    ident = m.facts.get("approval_id", "")
    return (
        f"실행 `{m.run_id}` (작업 {m.facts.get('task_id', '?')})이(가) 다음을 실행하려고 "
        f"승인({ident})을 요청합니다:\n\n    {m.facts.get('action', '')}\n\n"
        f"허용: `multiverse approve {m.run_id}`, 거부: `multiverse deny {m.run_id}` "
        f"(또는 `runs/{m.run_id}/user_response.md`에 APPROVE 또는 DENY). "
        f"{m.facts.get('timeout', '?')} 안에 답이 없으면 거부로 봅니다. 그때까지 실행은 기다립니다."
    )


def _ko_hold(m: Message) -> str:
    if m.facts.get("reason", "").startswith("user:"):
        return (
            f"요청하신 대로 실행 `{m.run_id}`을(를) 일시 정지했습니다. 새 단계는 시작하지 "
            f"않습니다. `multiverse resume {m.run_id}`로 이어 가고, "
            f"`multiverse cancel {m.run_id}`로 중단합니다."
        )
    table = m.facts.get("table", "")
    edit = (
        f"`{table}`에서 읽고 PENDING 행을 고칠 수 있습니다(저장하면 병합됩니다). " if table else ""
    )
    return (
        f"`daemon.pause_before` 설정에 따라 실행 `{m.run_id}`이(가) "
        f"{m.facts.get('plan', '계획')}을(를) 실행하기 전에 멈춰 있습니다. {edit}"
        f"이어 가려면 `multiverse resume {m.run_id}`, 중단하려면 `multiverse cancel {m.run_id}`."
    )


Template = Callable[[Message], str]
TEMPLATES: dict[MessageKind, Template] = {
    MessageKind.PROPOSAL: _proposal,
    MessageKind.ANSWER_RECEIVED: _answer_received,
    MessageKind.ANSWER_REFUSED: _answer_refused,
    MessageKind.CANCELLED: _cancelled,
    MessageKind.FAILURE: _failure,
    MessageKind.RETRY: _retry,
    MessageKind.COMPLETION: _completion,
    MessageKind.SIMPLE_REPLY: _simple_reply,
    MessageKind.APPROVAL_REQUEST: _approval_request,
    MessageKind.HOLD: _hold,
    MessageKind.NOTICE: _notice,
}


# Korean, for a Korean requester; a kind without its own text is said as in English.
KOREAN: dict[MessageKind, Template] = {
    MessageKind.PROPOSAL: _ko_proposal,
    MessageKind.ANSWER_RECEIVED: _ko_answer_received,
    MessageKind.ANSWER_REFUSED: _ko_answer_refused,
    MessageKind.CANCELLED: _ko_cancelled,
    MessageKind.FAILURE: _ko_failure,
    MessageKind.RETRY: _ko_retry,
    MessageKind.COMPLETION: _ko_completion,
    MessageKind.APPROVAL_REQUEST: _ko_approval_request,
    MessageKind.HOLD: _ko_hold,
}
LANGUAGES: dict[str, dict[MessageKind, Template]] = {"en": TEMPLATES, "ko": KOREAN}


class BuiltinCommunicator:
    """Composes every message from a template; never needs a model."""

    def compose(self, message: Message) -> str:
        """The markdown text of one message, in its language where there are templates."""
        templates = LANGUAGES.get(message.language, TEMPLATES)
        return templates.get(message.kind, TEMPLATES[message.kind])(message)


log = structlog.get_logger(__name__)
MESSAGES_TITLE = "# Messages\n\nEverything the Communicator said about this run, newest last.\n"


def print_to_console(text: str) -> None:
    """The default console channel: standard output, flushed."""
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


class Speaker:
    """The single door through which anything reaches the user."""

    def __init__(
        self,
        home: Home,
        role: CommunicatorRole,
        console: Callable[[str], None] = print_to_console,
        channels: Channels | None = None,
    ) -> None:
        self.home = home
        self.role = role
        self.console = console
        self.channels = channels
        self.fallback = BuiltinCommunicator()

    def start(self) -> None:
        """Start the further channels, replaying their outbox; call it holding the daemon lock."""
        if self.channels is not None:
            self.channels.start()

    def close(self) -> None:
        """Wait a bounded time for deliveries to the further channels (at daemon shutdown)."""
        if self.channels is not None:
            self.channels.close()

    def compose(self, message: Message) -> str:
        """The role's words, or the template's when the role fails (facts stay verbatim)."""
        try:
            return self.role.compose(message)
        except Exception as error:  # a model-backed role must never silence a report
            log.warning("communicator_fallback", kind=message.kind, error=str(error))
            return self.fallback.compose(message)

    def tell(self, message: Message, once: str | None = None) -> str:
        """Say a message on the console, append it to the run's messages.md, send it on.

        With `once`, a key unique in the run, the message is said at most once: the entry in
        messages.md carries the key, so a step redone after a crash does not say it again.
        The further channels get it once it is in messages.md, off the caller's thread.
        """
        if message.run_id and not message.language:
            language = self.home.run(message.run_id).language()
            message = message.model_copy(update={"language": language})
        text = self.compose(message)
        envelope = envelope_of(message, text, once)
        self.start()  # a no-op once started (the daemon starts it under its lock)
        heading = f"[{message.run_id}] " if message.run_id else ""
        if message.run_id:
            path = self.home.run(message.run_id).messages
            deliveries = self._append(path, envelope, once)
            if deliveries is None:
                return text  # said before a crash
        else:
            deliveries = self._stage(envelope)
        self.console(f"{heading}{text}")
        log.info("message_sent", run_id=message.run_id, kind=message.kind, id=envelope.id)
        self._post(deliveries)
        return text

    def reply(self, path: Path, message: Message) -> str:
        """Write a SIMPLE_TASK reply file, say it on the console, and send it on."""
        text = self.compose(message)
        self.start()
        # A fresh id: a later request of the same name gets a reply of the same path.
        deliveries = self._stage(envelope_of(message, text))
        atomic_write_text(path, text.rstrip("\n") + "\n")
        self.console(text)
        log.info("simple_reply_written", path=str(path))
        self._post(deliveries)
        return text

    def _append(self, path: Path, envelope: Envelope, once: str | None) -> list[Delivery] | None:
        """Append the entry; None if `once` shows it was appended already.

        The channels' deliveries are staged under the same lock, before the entry is written:
        a crash between the two leaves a delivery whose id messages.md lacks, dropped on replay.
        """
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        key = f" <!-- once:{once} -->" if once else ""
        heading = f"## {stamp} · {envelope.kind.value}{key} {id_marker(envelope.id)}"
        entry = f"\n{heading}\n\n{envelope.text.rstrip()}\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(path.parent / f".{path.name}.lock"):
            try:
                current = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                current = MESSAGES_TITLE
            if key and key in current:
                return None
            deliveries = self._stage(envelope)
            try:
                atomic_write_text(path, current + entry)
            except BaseException:
                self._discard(deliveries)
                raise
        return deliveries

    def _stage(self, envelope: Envelope) -> list[Delivery]:
        return [] if self.channels is None else self.channels.stage(envelope)

    def _discard(self, deliveries: list[Delivery]) -> None:
        if self.channels is not None:
            self.channels.discard(deliveries)

    def _post(self, deliveries: list[Delivery]) -> None:
        if self.channels is not None and deliveries:
            self.channels.post(deliveries)
