"""Commands that answer a run, and `delete-row`: what a person writes for the daemon to read."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli_app import HomeOption, JsonOption, app, relative, run_ref, said
from app.cli_style import errors_said


def _answer(home: str | None, run: str, kind: str, text: str = "", as_json: bool = False) -> None:
    from app.commands import answer_run

    with errors_said(as_json):
        path = answer_run(home, run, kind, text)
    answer, where = kind.lower(), relative(home, path)
    said(as_json, f"{answer}: answer written to {path}", run_id=run, answer=answer, path=where)


@app.command()
def confirm(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Confirm a run's proposal."""
    run = run_ref(home, run, as_json)
    _answer(home, run, "CONFIRM", as_json=as_json)


@app.command()
def modify(
    run: Annotated[str, typer.Argument()],
    text: Annotated[str, typer.Argument(help="What to change in the proposal.")],
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Ask for a revised proposal."""
    run = run_ref(home, run, as_json)
    _answer(home, run, "MODIFY", text, as_json)


@app.command()
def cancel(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Cancel a run at any time (a confirmed run stops after the step in flight)."""
    run = run_ref(home, run, as_json)
    from app.commands import cancel_run

    with errors_said(as_json):
        path = cancel_run(home, run)
    message = f"cancel: asked ({path}); the daemon stops {run} after the step in flight"
    said(as_json, message, run_id=run, answer="cancel", path=relative(home, path))


@app.command()
def pause(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Hold a confirmed run before its next step, until `multiverse resume RUN`."""
    run = run_ref(home, run, as_json)
    from app.commands import pause_run

    with errors_said(as_json):
        path = pause_run(home, run)
    message = f"pause: asked ({path}); {run} holds before its next step until resumed"
    said(as_json, message, run_id=run, answer="pause", path=relative(home, path))


# approve/deny: which waiting action, when a run waits for several.
ApprovalArgument = Annotated[
    str | None, typer.Argument(help="The approval's id, when several wait.")
]


@app.command()
def approve(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Allow the action a run waits for (a tool marked requires_approval)."""
    run = run_ref(home, run, as_json)
    _approval(home, run, approval, True, as_json)


@app.command()
def deny(
    run: Annotated[str, typer.Argument()],
    approval: ApprovalArgument = None,
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Refuse the action a run waits for; the model is told it was refused."""
    run = run_ref(home, run, as_json)
    _approval(home, run, approval, False, as_json)


def _approval(
    home: str | None, run: str, approval_id: str | None, approve: bool, as_json: bool = False
) -> None:
    from app.commands import answer_approval

    with errors_said(as_json):
        answered = answer_approval(home, run, approval_id, approve)
    word = "approved" if approve else "denied"
    message = f"{word}: {answered.id} ({answered.shown(120)}); the daemon goes on with {run}"
    said(
        as_json,
        message,
        run_id=run,
        answer="approve" if approve else "deny",
        approval_id=answered.id,
        action=answered.shown(),
        status=answered.status.value,
    )


@app.command()
def retry(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Resume a FAILED run from its failed step, once the cause is fixed."""
    run = run_ref(home, run, as_json)
    from app.commands import retry_run

    with errors_said(as_json):
        path, place = retry_run(home, run)
    where = f" from {place}" if place else ""
    message = f"retry: asked ({path}); the daemon resumes {run}{where}"
    data = {"run_id": run, "answer": "retry", "path": relative(home, path), "from": place or None}
    said(as_json, message, **data)


@app.command()
def resume(
    run: Annotated[str, typer.Argument()], as_json: JsonOption = False, home: HomeOption = None
) -> None:
    """Let a run held for a review of its plan go on (daemon.pause_before)."""
    run = run_ref(home, run, as_json)
    from app.commands import resume_run

    with errors_said(as_json):
        path, held = resume_run(home, run)
    message = f"resume: asked ({path}); {run} goes on with {', '.join(held)}"
    said(as_json, message, run_id=run, answer="resume", path=relative(home, path), held=held)


@app.command(name="delete-row")
def delete_row(
    table: Annotated[str, typer.Argument(help="The table, e.g. db/knowledge_base_catalog.md.")],
    key: Annotated[str, typer.Argument(help="The row's key (its first column).")],
    as_json: JsonOption = False,
    home: HomeOption = None,
) -> None:
    """Remove a row on purpose (the daemon restores rows that a save erased by accident)."""
    from app.commands import delete_row as remove

    with errors_said(as_json):
        path = remove(home, table, key)
    said(as_json, f"deleted: {key} from {path}", table=relative(home, path), key=key)
