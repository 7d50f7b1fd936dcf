"""Prompt templates of the model-backed Planner: loading, versions and strict rendering.

Templates are package data (`planner/prompts/<name>.md`) rendered with `string.Template`
`substitute`, so a placeholder without a value is an error, like jinja2's StrictUndefined: a
broken template is our own bug and is raised, never sent to a model.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

PROMPTS_PACKAGE = "planner.prompts"
_HEADER = re.compile(r"\A<!--\s*prompt_version:\s*([^\s>]+)\s*-->[ \t]*\r?\n")


class PromptError(RuntimeError):
    """A prompt template that cannot be loaded or rendered: our own bug, never the model's."""


@dataclass(frozen=True)
class PromptTemplate:
    """One target's user-message template and its version."""

    name: str
    version: str
    body: str

    @property
    def tag(self) -> str:
        """`<name>-<version>`, the part of the call's prompt_version this template adds."""
        return f"{self.name}-{self.version}"

    def render(self, values: Mapping[str, str]) -> str:
        """The template with every placeholder filled; a missing value raises PromptError."""
        try:
            return string.Template(self.body).substitute(values)
        except KeyError as error:
            raise PromptError(
                f"prompt template {self.name!r} needs a value for ${error.args[0]}"
            ) from None
        except ValueError as error:
            raise PromptError(f"prompt template {self.name!r} is malformed: {error}") from None


def parse_prompt(name: str, text: str) -> PromptTemplate:
    """A template from its file text; the first line must declare its prompt_version."""
    match = _HEADER.match(text)
    if match is None:
        raise PromptError(
            f"prompt template {name!r} must start with a line <!-- prompt_version: X -->"
        )
    return PromptTemplate(name=name, version=match.group(1), body=text[match.end() :])


def load_prompt(name: str, folder: Path | None = None) -> PromptTemplate:
    """The template `<name>.md` from `folder`, or from the shipped package data by default."""
    file_name = f"{name}.md"
    try:
        if folder is None:
            text = resources.files(PROMPTS_PACKAGE).joinpath(file_name).read_text("utf-8")
        else:
            text = (folder / file_name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PromptError(f"prompt template {file_name} cannot be read: {error}") from None
    return parse_prompt(name, text)
