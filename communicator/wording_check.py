"""The check of a model's wording against what the code states (issue 26, SPEC §10.7).

A model may phrase a message's event, its facts and the commands that answer it; nothing more.
Its wording is refused when it names a command that does not exist or does not answer this
message, claims work the message does not say was done, thanks for (or acknowledges) an answer
the user did not give, offers a contact the facts do not hold, or states an id, path or number
found nowhere in what the code gave. Pure: text in, reasons out; English and Korean.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from multiverse.roles import ANSWERED_BY, COMMANDS, Message, MessageKind

# The answers a user can give, as user_response.md spells them; each is also a command.
DECISIONS = ("CONFIRM", "MODIFY", "CANCEL", "RETRY", "RESUME", "PAUSE", "APPROVE", "DENY")
ANY_ANSWER = "ANY"


@dataclass(frozen=True)
class Stated:
    """What the code states about one message: the commands that answer it, the answers the
    user gave before it, whether it reports finished work, and every value it names."""

    kind: MessageKind
    commands: tuple[str, ...]
    answers: frozenset[str]
    work_done: bool
    values: tuple[str, ...]
    facts_text: str = ""  # the message's own facts and items, lower-cased

    @property
    def material(self) -> str:
        """All stated values in one text, to look a quoted value up in."""
        return "\n".join(self.values)


def command_line(name: str, run_id: str) -> str:
    """The exact command line of one answer, as the templates write it."""
    if name == "modify":
        return f'multiverse modify {run_id} "what to change"'
    return f"multiverse {name} {run_id}"


def _answers_given(message: Message) -> frozenset[str]:
    """The answers the user gave that this message follows (only these may be acknowledged)."""
    kind, facts = message.kind, message.facts
    if kind is MessageKind.ANSWER_RECEIVED:
        return frozenset({"CONFIRM" if facts.get("answer") == "CONFIRM" else "MODIFY"})
    if kind is MessageKind.PROPOSAL and facts.get("modification"):
        return frozenset({"MODIFY"})  # a revised proposal follows the user's MODIFY
    if kind is MessageKind.HOLD and facts.get("reason", "").startswith("user:"):
        return frozenset({"PAUSE"})
    return _FOLLOWS.get(kind, frozenset())


_FOLLOWS = {
    MessageKind.CANCELLED: frozenset({"CANCEL"}),
    MessageKind.RETRY: frozenset({"RETRY"}),
}


def _work_done(message: Message) -> bool:
    """Whether the message reports finished work: a completion, a reply, or what a cancel kept.

    A proposal means nothing has been produced yet; a failure names where the run stopped,
    not what it finished.
    """
    if message.kind in (MessageKind.COMPLETION, MessageKind.SIMPLE_REPLY):
        return True
    return message.kind is MessageKind.CANCELLED and bool(message.facts.get("finished"))


def stated(message: Message, sources: Sequence[str] = ()) -> Stated:
    """What the code states about `message`, with `sources` (texts the code gave the model)."""
    run_id = message.run_id or ""
    commands = ANSWERED_BY.get(message.kind, ())
    values = [run_id, *message.facts.values(), *message.items, *sources]
    values += [command_line(name, run_id) for name in commands]
    if commands and run_id:
        values.append(f"runs/{run_id}/user_response.md")
    return Stated(
        kind=message.kind,
        commands=commands,
        answers=_answers_given(message),
        work_done=_work_done(message),
        values=tuple(value for value in values if value),
        facts_text="\n".join([*message.facts.values(), *message.items]).lower(),
    )


# --- the patterns, English (matched on lower-cased text) and Korean ---------------------------

_FENCE = re.compile(r"(`{3,})[^\n]*\n(.*?)\1", re.S)
_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_PROSE_COMMAND = re.compile(r"\bmultiverse\s+([A-Za-z][\w-]*)(\s+§)?")
_DECISION = re.compile(r"\b(" + "|".join(DECISIONS) + r")\b")
_SHELL = re.compile(r"^[a-z][\w.-]*(?:\s+[-\w./:=\"'<>]+)+$")

_URL = re.compile(r"\b(?:https?://|www\.)[^\s)>\]]+", re.I)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+?\(?\d{2,4}\)?[\s.-]\d{3,4}[\s.-]\d{4}\b")
_CONTACT_EN = re.compile(
    r"\bcontact(?:ing)?\b|\breach out\b|\bget in touch\b|\bhelp ?desk\b|\bhotline\b"
    r"|\bcustomer (?:service|care|support)\b|\b(?:technical|tech) support\b"
    r"|\bsupport (?:team|line|desk|channel|staff|portal|ticket|center|centre|email)\b"
    r"|\b(?:open|file|raise|submit) an? (?:support )?ticket\b"
    r"|\b(?:ask|call|email|notify) (?:your |the |an? )?(?:administrator|admin|support|it team)\b"
)
_CONTACT_KO = re.compile(
    r"고객\s?센터|고객\s?(?:지원|상담)|기술\s?지원|지원\s?팀|헬프\s?데스크|상담|문의|연락|관리자|담당자"
)

_RUN_ID = re.compile(r"\brun-\d{8}-\d{6}-\d{3}\b")
_STEP_ID = re.compile(r"\b(?:P\d+(?:-S\d+)?(?:-T\d+)?(?:-(?:PRE|POST)-\d+)?|T0\d|I\d{4,})\b")
_PATH = re.compile(
    r"(?<![\w@/:.])(?:[\w.-]+/)+[\w.-]*"
    r"|\b[\w-]+\.(?:md|csv|tsv|xlsx?|jsonl?|html?|pdf|docx?|pptx?|txt|png|jpe?g|svg|py|ya?ml|log)\b"
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LIST_MARK = re.compile(r"^\s*\d+[.)]\s", re.M)  # "1. " of a numbered list is no value

_SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")
_CLAUSE = re.compile(
    r"[,;:]|\s(?:and|but|while|whereas|so|then)\s|(?<=[가-힣])(?:고|며|으며|지만|는데|으나)\s"
)

_DONE = re.compile(
    r"\b(?:produced|completed?|finished|written|wrote|generated|created|drafted|delivered|done"
    r"|ready|built|made|prepared|computed|calculated|extracted|analy[sz]ed|saved|exported"
    r"|rendered|drawn|drew|compiled|performed|succeeded)\b"
    r"|(?:생성|완료|작성|완성|제작|산출|분석|계산|추출|준비|저장|마무리|처리|수행|도출)"
    r"(?:되었|됐|했|하였|해\s?두었|해\s?놓았|돼\s?있|되어\s?있|된)"
    r"|만들었|만들어졌|만들어\s?두었|만들어진|끝났|끝냈|끝난|마쳤|나왔|그렸|그려졌"
)
_WORK = re.compile(
    r"\b(?:analys[ie]s|reports?|deliverables?|charts?|graphs?|figures?|tables?|memos?"
    r"|documents?|files?|outputs?|results?|summar(?:y|ies)|drafts?|stages?|phases?|tasks?"
    r"|steps?|work|data|numbers|calculations?|findings|slides?|presentations?|spreadsheets?)\b"
    r"|분석|보고서|리포트|결과물|산출물|차트|그래프|도표|(?<![가-힣])표|단계|작업|문서|파일|메모"
    r"|요약|초안|결과|데이터|수치|슬라이드|자료|계산"
)
# Words of a proposal: that the proposal was written is what a PROPOSAL reports.
# Narrow on purpose: a wrongly refused wording costs only the template's plainer words.
_PROPOSAL = re.compile(r"\b(?:proposals?|plans?)\b|제안|계획")
_NOT = re.compile(
    r"\b(?:no|not|nothing|none|never|yet|without|cannot)\b|n't\b|않|없|아직|못|(?<![가-힣])안\s"
)
_LATER = re.compile(
    r"\b(?:will|would|shall|once|after|when|whenever|if|until|can|could|should|may|might"
    r"|going to|to be|awaits?|awaiting|waiting|need|needs)\b"
    r"|겠|[할될릴]\s?(?:것|예정)|예정|(?:후|뒤|다음)(?:에)?(?=[\s,.]|$)"
    r"|(?<=[가-힣])(?:시|하|되|으|이)?면(?=[\s,.!?]|$)|수\s?있|려면|기다리|필요"
)
_KEPT = re.compile(
    r"\b(?:kept|keep|keeps|keeping|remains?|stays?|preserved)\b|유지|남아|그대로|보존"
)

# A clause asking for the answer is not one acknowledging it.
_ASKED = re.compile(r"\bplease\b|\bask(?:s|ed|ing)? for\b|주세요|주십시오|바랍니다|부탁")
_THANKS = re.compile(r"\b(?:thank|thanks|appreciate|grateful)\b|감사|고맙|고마워")
_ANSWER_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bconfirm\w*|확인|확정"), "CONFIRM"),
    (re.compile(r"\bapprov\w*|승인|허용|허락"), "APPROVE"),
    (re.compile(r"\bden(?:y|ied|ial)\b|\brefus\w*|거부|거절"), "DENY"),
    (re.compile(r"\bcancel\w*|취소"), "CANCEL"),
    (re.compile(r"\bmodif\w*|\bchanges?\b|\brevision\b|수정|변경"), "MODIFY"),
    (re.compile(r"\bretr(?:y|ied|ying)\b|재시도|다시\s?시도"), "RETRY"),
    (re.compile(r"\bresum\w*|재개"), "RESUME"),
    (re.compile(r"\bpaus\w*|일시\s?정지"), "PAUSE"),
    (
        re.compile(r"\b(?:answer\w*|repl(?:y|ied|ies)|respon\w*|decision|feedback|go-ahead)\b"
                   r"|답변|응답|회신|결정|피드백|(?<![가-힣])답(?=[을를이]|\s|$)"),
        ANY_ANSWER,
    ),
)  # fmt: skip
_ACKNOWLEDGED = re.compile(
    r"\byou(?:'ve| have)?\s+(?:just\s+)?(?:confirmed|approved|cancell?ed|modified|denied"
    r"|answered|replied|responded|decided|retried|resumed|paused)\b"
    r"|\byour\s+(?:confirmation|approval|answer|reply|response|decision|cancellation"
    r"|go-ahead|feedback|changes)\b"
    r"|\b(?:is|was|has been|have been|are|were)\s+(?:now\s+)?(?:confirmed|approved"
    r"|cancell?ed|denied)\b"
    r"|(?:확인|확정|승인|수정|변경|취소|거부|답변|응답|회신|재개|재시도)(?:을|를)?\s?"
    r"(?:해\s?주셔서|해\s?주신|하셨|하신|해\s?주셨|해\s?주었)"
    r"|(?:확정|승인|취소|거부)(?:되었|됐|된\s?것)"
)


def refusals(text: str, message: Message, sources: Sequence[str] = ()) -> list[str]:
    """Why `text` may not stand for `message`; empty when it says only what the code states."""
    told = stated(message, sources)
    reasons: list[str] = []
    prose = _quoted_blocks(text, told, reasons)
    prose = _code_spans(prose, told, reasons)
    prose = _masked(prose, told)
    reasons += _prose_commands(prose, told)
    reasons += _contacts(prose, told)
    reasons += _values(prose, told)
    for sentence in _sentences(prose):
        reasons += _claims(sentence, told)
        reasons += _thanks(sentence, told)
    return list(dict.fromkeys(reasons))  # each reason once, in order


def _normal(text: str) -> str:
    return " ".join(text.split())


def _quoted_blocks(text: str, told: Stated, reasons: list[str]) -> str:
    """Fenced blocks must quote what was given (the error log); they leave the prose."""
    material = _normal(told.material)
    for match in _FENCE.finditer(text):
        body = _normal(match.group(2))
        if body and body not in material:
            reasons.append(f"a quoted block not among the facts: {body[:80]!r}")
    return _FENCE.sub(" § ", text)


def _code_spans(text: str, told: Stated, reasons: list[str]) -> str:
    """Each `code` span is a stated value, or an answer command of this message."""
    material = _normal(told.material)
    for match in _SPAN.finditer(text):
        span = _normal(match.group(2))
        if not span or span in material:
            continue
        words = span.split()
        named = (words[1] if words[0] == "multiverse" and len(words) > 1 else words[0]).rstrip(":")
        if words[0] == "multiverse" or named in COMMANDS or named in DECISIONS:
            reasons += _command(named.lower(), told, span)
            reasons += [_not_stated(run) for run in _RUN_ID.findall(span) if run not in material]
        elif _SHELL.match(span):
            reasons.append(f"names a command the code did not give: `{span}`")
        else:
            reasons.append(_not_stated(span))
    return _SPAN.sub(" § ", text)


def _command(name: str, told: Stated, shown: str) -> list[str]:
    if name not in COMMANDS:
        return [f"names a command that does not exist: `{shown}`"]
    if name not in told.commands:
        answers = ", ".join(told.commands) or "none"
        return [
            f"names `multiverse {name}`, which does not answer a {told.kind.value} "
            f"(its answers: {answers})"
        ]
    return []


def _masked(text: str, told: Stated) -> str:
    """The prose with every stated value replaced by §: what the code said is not the model's
    claim (an error log may well say `written`), and a quoted value is never a new one."""
    for value in sorted(told.values, key=len, reverse=True):
        if len(value.strip()) > 1:
            text = text.replace(value.strip(), "§")
    return text


def _prose_commands(prose: str, told: Stated) -> Iterator[str]:
    for match in _PROSE_COMMAND.finditer(prose):
        name = match.group(1).lower()
        # `multiverse` is also the product's name: an unknown word after it is only a command
        # when a run id (a masked value) follows it, as in "run multiverse restart <run>".
        if name in COMMANDS or match.group(2):
            yield from _command(name, told, f"multiverse {name}")
    for match in _DECISION.finditer(prose):
        yield from _command(match.group(1).lower(), told, match.group(1))


def _contacts(prose: str, told: Stated) -> Iterator[str]:
    """A URL, an e-mail, a phone number or a support line the facts do not hold."""
    material = told.material.lower()
    for pattern in (_URL, _EMAIL, _PHONE, _CONTACT_EN, _CONTACT_KO):
        for match in pattern.finditer(prose.lower()):
            if match.group(0) not in material:
                yield f"offers a contact the facts do not hold: {match.group(0)!r}"


def _values(prose: str, told: Stated) -> Iterator[str]:
    """Ids, paths and numbers must each appear in what the code gave."""
    material = told.material
    rest = _LIST_MARK.sub(" ", _URL.sub(" ", _EMAIL.sub(" ", prose)))
    for pattern in (_RUN_ID, _STEP_ID, _PATH):
        for found in pattern.findall(rest):
            value = found.rstrip(".")
            if (pattern is not _PATH or _path_like(value)) and value not in material:
                yield _not_stated(value)
        rest = pattern.sub(" ", rest)
    numbers = {number.replace(",", "") for number in _NUMBER.findall(material)}
    for number in _NUMBER.findall(rest):
        if number.replace(",", "") not in numbers:
            yield _not_stated(number)


def _path_like(value: str) -> bool:
    # "and/or" is prose: a path names a file, a folder (a trailing /) or two levels.
    return "." in value.rsplit("/", 1)[-1] or value.endswith("/") or value.count("/") >= 2


def _not_stated(value: str) -> str:
    return f"states a value not among the facts: {value!r}"


def _sentences(prose: str) -> Iterator[str]:
    for sentence in _SENTENCE.split(prose):
        if sentence.strip():
            yield sentence.strip().lower()


def _claims(sentence: str, told: Stated) -> Iterator[str]:
    """A clause saying that work was done, when the message reports none done."""
    if told.work_done:
        return
    for clause in _CLAUSE.split(sentence):
        done, work = _DONE.search(clause), _WORK.search(clause)
        if not (done and work):
            continue
        if _said(done.group(0), told.facts_text) and _said(work.group(0), told.facts_text):
            continue  # the facts say it (an error log's "table written"): retold, not claimed
        if _NOT.search(clause) or _LATER.search(clause) or _KEPT.search(clause):
            continue  # not done, to be done, or "what was done is kept": no claim
        if told.kind is MessageKind.PROPOSAL and _PROPOSAL.search(clause):
            continue  # the proposal itself is the work a proposal reports
        yield f"claims work not done: {clause.strip()!r}"


def _said(word: str, text: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(word), text) is not None


def _thanks(sentence: str, told: Stated) -> Iterator[str]:
    """Thanks for, or acknowledgement of, an answer the user did not give."""
    thanked = bool(_THANKS.search(sentence))
    for clause in _CLAUSE.split(sentence):
        if _NOT.search(clause) or _LATER.search(clause) or _ASKED.search(clause):
            continue  # "once you confirm", "not confirmed yet", "please confirm": none given
        acknowledged = bool(_ACKNOWLEDGED.search(clause))
        named = {answer for pattern, answer in _ANSWER_WORDS if pattern.search(clause)}
        if not acknowledged and not (thanked and named):
            continue  # thanks for the request, or for patience: no answer is named
        wrong = {answer for answer in named if answer != ANY_ANSWER and answer not in told.answers}
        if wrong or not told.answers:
            what = ", ".join(sorted(wrong)) or "an answer"
            yield f"acknowledges {what} the user did not give: {sentence.strip()!r}"
