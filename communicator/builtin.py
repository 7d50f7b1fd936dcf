"""The builtin Communicator: clear, friendly messages from templates, facts verbatim."""

from __future__ import annotations

from collections.abc import Callable

from multiverse.roles import Message, MessageKind


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
    return (
        f"Run `{m.run_id}` is complete. The deliverables are in "
        f"`{m.facts.get('outputs', '')}`:\n\n{listing}"
    )


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


TEMPLATES: dict[MessageKind, Callable[[Message], str]] = {
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


class BuiltinCommunicator:
    """Composes every message from a template; never needs a model."""

    def compose(self, message: Message) -> str:
        """The markdown text of one message."""
        return TEMPLATES[message.kind](message)
