"""Questions about a table's make-up, answered from the table itself: which columns it has,
and how many different values a label column holds ("how many countries does fertility.csv
have", "몇 개 나라"). A count with a condition is never read as one (the rules cannot apply it).
"""

from __future__ import annotations

import re

from multiverse.spec import Computation, HomeScan, Question, Reading, ScannedFile
from multiverse.tabular import TableProfile
from offline.asks import singular
from offline.lexicon import PARTICLE
from offline.resolve import column_hits, files_named

_HOW_MANY = (  # "how many countries", "몇 개 나라", "나라가 몇 개": the first that matches
    re.compile(r"\bhow many\s+(?:different\s+|distinct\s+|unique\s+|separate\s+)?"
               r"(?P<what>[A-Za-z][\w-]*)", re.IGNORECASE),
    re.compile(r"몇\s?(?:개|명|곳|가지)\s?(?:의\s)?(?P<what>[가-힣]+)"),
    re.compile(r"(?P<what>[가-힣]+?)(?:이|가|은|는)?\s?(?:모두\s)?몇\s?(?:개|명|곳|가지)"),
)
_NOT_COUNTED = re.compile(r"^(?:times?|more|less|fewer|of|rows?|번)$", re.IGNORECASE)
# A count with a condition ("how many years was it above 8 %") is no count of the table's
# values: not read as one (the rules cannot apply the condition).
_CONDITION = re.compile(
    r"\b(?:above|below|over|under|exceed\w*|more than|less than|fewer than|greater|higher|"
    r"lower|when|where|with|without|after|before|since|between|during|in which|that)\b"
    r"|이상|이하|초과|미만|넘|보다|동안|이후|이전",
    re.IGNORECASE,
)
_COLUMNS_ASKED = re.compile(
    r"\b(?:which|what)\s+columns?\b|\bcolumns?\s+(?:does|do|are|is)\b|\blist\s+(?:the|its|all"
    r"|every)\s+columns?\b|(?:열|컬럼|칼럼)(?:은|는|이|가|을|를)?\s?(?:무엇|뭐|어떤|어떻게|알려)",
    re.IGNORECASE,
)


def of_table(part: str, item: ScannedFile, table: TableProfile,
             reading: Reading) -> list[Question] | None:
    """A question about the table's make-up: its columns, or how many different values of a
    label column it holds ("how many countries"); None when it asks no such thing."""
    path = item.path
    if _COLUMNS_ASKED.search(part):
        return [Question(reading=reading,
                         compute=Computation(kind="columns", file=path, measure=""))]
    match = next((m for pattern in _HOW_MANY if (m := pattern.search(part))), None)
    if match is None:
        return None
    said = PARTICLE.sub("", match.group("what"))
    if not said or _NOT_COUNTED.match(said) or _CONDITION.search(part[match.end():]):
        return None
    hits = column_hits(singular(said) if said.isascii() else said, table,
                       ("category", "identifier", "text", "time"))
    if not hits:
        return None
    return [Question(reading=reading,
                     compute=Computation(kind="distinct", file=path, measure=hits[0].column))]


def of_one_table(part: str, scan: HomeScan, excluded: set[str],
                 reading: Reading) -> list[Question]:
    """A make-up question that names no measure: of the table it names by file, else of the
    one table whose label column its words name (several such: not guessed)."""
    tables = [item for item in scan.tables() if item.path not in excluded and item.profile]
    named = files_named(part, scan)
    if named is not None and named.how == "path":
        tables = [item for item in tables if item.path in named.files]
    found = [
        answer
        for item in tables
        if item.profile is not None
        and (answer := of_table(part, item, item.profile, reading))
    ]
    return found[0] if len(found) == 1 else []
