"""The offline engine's language rules: what a request or an instruction asks that rules can read
(lengths, audiences, deliverables, languages, charts, questions, periods, sources to leave out),
and the request spec they fill (`read_request`). Used only by the builtin roles.
"""

from __future__ import annotations

from offline.reader import charts_said, read_request, why_run

__all__ = ["charts_said", "read_request", "why_run"]
