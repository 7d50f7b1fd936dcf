"""Tests of the JSON guard's pure half: loose parsing, judging, repair messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from multiverse.gateway.calls import LooseJsonError, judge, loose_parse, repair_messages


class Plan(BaseModel):
    """A small schema to judge against."""

    name: str
    steps: list[str] = Field(min_length=1)


def test_plain_json() -> None:
    """Clean JSON parses as it is."""
    assert loose_parse('{"a": 1}') == {"a": 1}


def test_code_fence_stripped() -> None:
    """JSON inside a ```json fence with prose around it is found."""
    text = 'Here you go:\n```json\n{"a": [1, 2]}\n```\nAnything else?'
    assert loose_parse(text) == {"a": [1, 2]}


def test_cut_to_outermost_object() -> None:
    """Prose before and after an object is cut away, nested braces kept."""
    assert loose_parse('Result: {"a": {"b": "}"}} — done.') == {"a": {"b": "}"}}


def test_list_answer() -> None:
    """A top-level list wrapped in prose is found."""
    assert loose_parse("The steps are [1, 2, 3].") == [1, 2, 3]


def test_bracket_before_object() -> None:
    """A bracketed word before the object does not hide the object."""
    assert loose_parse('[note] {"a": 1}') == {"a": 1}


def test_trailing_comma_tolerated() -> None:
    """A trailing comma, common in small models' answers, is forgiven."""
    assert loose_parse('{"a": [1, 2,], "b": 3,}') == {"a": [1, 2], "b": 3}


def test_empty_answer_is_an_error() -> None:
    """An empty answer says so."""
    with pytest.raises(LooseJsonError, match="empty"):
        loose_parse("   ")


def test_garbage_is_an_error() -> None:
    """Text without JSON raises with the parser's reason."""
    with pytest.raises(LooseJsonError, match="not valid JSON"):
        loose_parse("{name: plan")


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=3),
            max_leaves=5,
        ),
        max_size=4,
    ),
    st.sampled_from(["", "Sure:\n", "```json\n", "결과는 다음과 같습니다: "]),
    st.sampled_from(["", "\nDone.", "\n```", " 🙂"]),
)
def test_wrapped_object_roundtrips(data: dict[str, Any], before: str, after: str) -> None:
    """Any JSON object survives being wrapped in prose or a fence."""
    assert loose_parse(before + json.dumps(data, ensure_ascii=False) + after) == data


def test_judge_valid() -> None:
    """A valid answer yields its value and no errors."""
    verdict = judge('{"name": "p", "steps": ["a"]}', Plan)
    assert verdict.value == Plan(name="p", steps=["a"]) and verdict.errors == []


def test_judge_schema_errors_name_the_field() -> None:
    """Validation errors name the field and the problem."""
    verdict = judge('{"name": 3, "steps": []}', Plan)
    assert verdict.value is None
    assert any(error.startswith("name:") for error in verdict.errors)
    assert any(error.startswith("steps:") for error in verdict.errors)


def test_judge_runs_check_only_on_valid_value() -> None:
    """The semantic check runs after validation and its errors are reported."""
    seen: list[Plan] = []

    def check(plan: Plan) -> list[str]:
        seen.append(plan)
        return ["step 1 references a file that does not exist"]

    assert judge("nope", Plan, check).errors[0].startswith("the answer is not valid JSON")
    assert seen == []
    verdict = judge('{"name": "p", "steps": ["a"]}', Plan, check)
    assert verdict.errors == ["step 1 references a file that does not exist"]


def test_repair_messages_show_answer_and_errors() -> None:
    """The repair turn repeats the answer and lists every error, capped."""
    errors = [f"error {n}" for n in range(25)]
    assistant, user = repair_messages("{bad", errors)
    assert assistant == {"role": "assistant", "content": "{bad"}
    assert user["role"] == "user"
    assert "- error 0" in user["content"] and "- error 19" in user["content"]
    assert "error 20" not in user["content"] and "5 more" in user["content"]
