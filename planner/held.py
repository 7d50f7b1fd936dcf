"""What CONFIRM froze governs every later plan: a task that contradicts the spec is refused.

A plan is checked against the frozen request spec (SPEC §6a) as it is against the tables: a
task that reads a file the spec leaves out, asks for its text in another language than the one
confirmed, or (a deliverable) asks for a length far from the one confirmed, is an error the
model repairs, as any validation error is. Pure: the spec and the plan's rows in, the errors out.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from multiverse.models import Task
from multiverse.spec import RequestSpec, asked_words, languages_asked

# A deliverable's length may differ from the one confirmed by this factor either way (the
# evaluations' ±50 %): beyond it, the task asks for another deliverable.
LENGTH_SLACK = 1.5
# Words before a file's name that say it is kept out, not read ("without x.csv", "x.csv 제외").
_NOT_BEFORE = re.compile(
    r"\b(?:except|excluding|exclude|without|not|never|ignore|ignoring|leave out|leaving out|"
    r"left out|other than|besides)\b[^.;]{0,40}$",
    re.I,
)
_NOT_AFTER = re.compile(r"^[^.;]{0,12}(?:제외|빼고|말고|없이)")


def task_text(task: Task) -> str:
    """Everything a task says of its work: its name, purpose and tool purposes."""
    parts = (task.task_name, task.task_purpose, task.pre_tool_purpose, task.post_tool_purpose)
    return "\n".join(part for part in parts if part.strip())


def _named_to_read(text: str, path: str) -> bool:
    """Whether the text names the file (its path or its file name) other than to keep it out."""
    name = PurePosixPath(path).name
    pattern = rf"(?<![\w.-])(?:{re.escape(path)}|{re.escape(name)})(?![\w-])"
    for match in re.finditer(pattern, text, re.I):
        kept_out = _NOT_BEFORE.search(text[: match.start()]) or _NOT_AFTER.search(
            text[match.end() :]
        )
        if not kept_out:
            return True
    return False


def spec_conflicts(task: Task, spec: RequestSpec, deliverable: bool) -> list[str]:
    """How `task` contradicts the confirmed spec, each as an error the model can act on;
    `deliverable`: the task writes what the user receives (its length is the one confirmed)."""
    errors = []
    label = f"task {task.task_id}"
    left_out = sorted(spec.excluded())
    for path in left_out:
        if path in task.related_references:
            errors.append(
                f"{label} reads {path}, which the confirmed request leaves out; take it out of "
                "the references (use only the confirmed sources)"
            )
        elif _named_to_read(task_text(task), path):
            errors.append(
                f"{label} names {path}, which the confirmed request leaves out; do not use it "
                "or name it"
            )
    text = task_text(task)
    for code in sorted(languages_asked(text) - {spec.language}):
        errors.append(
            f"{label} asks for its text in language {code!r}, but the confirmed language is "
            f"{spec.language!r}; say nothing of the language or use {spec.language!r}"
        )
    asked = asked_words([text]) if deliverable else None
    if asked is not None and spec.length_words:
        low, high = spec.length_words / LENGTH_SLACK, spec.length_words * LENGTH_SLACK
        if not low <= asked <= high:
            errors.append(
                f"{label} asks for about {asked} words, but the confirmed length is about "
                f"{spec.length_words} words; keep to the confirmed length"
            )
    return errors
