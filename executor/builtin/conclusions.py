"""The sources' own conclusions and recommendations, found by where and how they are said.

Pure. A passage counts when its section is named as a conclusion (Recommendation, Conclusion,
Outlook, Next steps, 결론, 제언, 시사점…) or when it says what to do in the source's own words
("we recommend", "should", "enter Sweden first", "…이 적절하다"). They are quoted as the
source's, never restated as the engine's.
"""

from __future__ import annotations

import re

from executor.builtin.passages import Passage

_SECTION = re.compile(
    r"recommend|conclu|outlook|implication|next step|way forward|verdict|takeaway|advice|"
    r"결론|제언|시사점|권고|제안|전망|요약 및",
    re.IGNORECASE,
)
_SAYS = re.compile(
    r"\b(?:we|i|the (?:board|authors?|office|team)) (?:recommend|advise|suggest|propose|expect)|"
    r"\b(?:our|the) recommendation\b|\bis recommended\b|\bshould\b|\bmust\b|\bought to\b|"
    r"\bwe expect\b|"
    r"^(?:enter|focus|prioriti[sz]e|avoid|invest|build|start|follow with|treat|budget)\b|"
    r"적절하다|바람직하다|필요하다|해야 한다|권고한다|제안한다|추천한다|전망한다|것이다\.?$",
    re.IGNORECASE,
)


# Any statement that speaks of recommending is the source's, so it is only ever quoted as such.
_RECOMMENDS = re.compile(r"recommend|권고|추천", re.IGNORECASE)


def is_conclusion(passage: Passage) -> bool:
    """Whether the passage is the source's own conclusion or advice."""
    text = passage.text.strip()
    return bool(_SECTION.search(passage.section) or _SAYS.search(text) or _RECOMMENDS.search(text))


def conclusions(passages: list[Passage]) -> list[Passage]:
    """The conclusions and recommendations among the passages, in document order."""
    return [p for p in passages if is_conclusion(p)]
