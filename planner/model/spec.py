"""The request spec of a proposal the model writes (SPEC §6a): the one seam where it is made.

For now the spec is filled by the offline rules and checked by the one validator
(`planner.builtin.request_spec`), so every later task has a spec whatever the planner; the
model's own understanding and instructions stay as it wrote them. To be replaced by a call
whose json_schema has the home's files and columns as enums (its answer checked by the same
validator, `multiverse.spec.check_spec`).
"""

from __future__ import annotations

from multiverse.roles import PlanContext
from multiverse.spec import RequestSpec
from planner.builtin import request_spec


def make_spec(context: PlanContext) -> RequestSpec:
    """The checked spec of the run's request and every MODIFY since."""
    return request_spec(context)
