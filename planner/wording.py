"""The proposal's fixed words in the requester's language (English and Korean; any other
language gets English, said once by the spec's reading): headings, the understanding's labels,
the instructions derived from the spec. Commands, file names, column names and values are
never translated. Plain data; `words(language)` picks the table.
"""

from __future__ import annotations

ENGLISH: dict[str, str] = {
    # the document
    "title": "# Proposal for run {run_id}",
    "offline": "> Made offline by the builtin engine: no language model is configured.",
    "summary": "## What will be done",
    "summary_more": "- … and {count} more: the table below",
    "answer_line": (
        "Answer: `multiverse confirm {run_id}`, `multiverse modify {run_id} \"…\"` or "
        "`multiverse cancel {run_id}` (more at the end)."
    ),
    "edit_hint": (
        "Correct any line by MODIFY, or edit this table before you confirm: what is in it when "
        "you confirm is what is done."
    ),
    "understood": "## How I understood the request",
    "instructions": "## Proposed instructions",
    "conflicts": "## Conflicts with earlier instructions",
    "learning": "## Learning context",
    "answer": "## How to answer",
    "no_conflicts": "None: no ACTIVE instruction of an earlier run is contradicted.",
    "superseded_on_confirm": "On CONFIRM these become SUPERSEDED: {ids}.",
    "conflict": (
        '{kind}: {old_id} of {run} says "{old}" but the proposal says "{new}"; {old_id} would '
        "be superseded."
    ),
    "first_run": "First run: no past runs.",
    "past_runs": "Past runs with the most similar requests (BM25 score, higher is closer):",
    "confirm": "Confirm",
    "modify": "Ask for changes",
    "what_to_change": "…what to change…",
    "cancel": "Cancel",
    "or_write": "Or write one of these into `runs/{run_id}/user_response.md`:",
    "answers": "`CONFIRM`, `MODIFY: <what to change>`, or `CANCEL`.",
    # the understanding
    "read_by_rules": "Read offline by fixed rules; each line says which words chose it.",
    "research_not_asked": (
        "No web search in this run: the request asks for no outside information."
    ),
    "research_not_asked_why": (
        "An earlier run's web search instruction is still ACTIVE; this request differs from it."
    ),
    "read_by_model": (
        "Read by the model into the request spec below, checked against the files; every "
        "instruction is derived from that spec."
    ),
    "deliverable": "Deliverable",
    "length": "Length",
    "language": "Language",
    "audience": "Audience",
    "sources": "Sources",
    "left_out": "Left out",
    "charts": "Charts",
    "questions": "Questions",
    "web_search": "Web search",
    "format_rules": "Format rules",
    "not_understood": "Not understood (nothing was guessed)",
    "modifications": "Your modifications",
    "why_run": "Why a run",
    "past_work": (
        "**Past work reused** (the deliverables of similar past runs, read as references):"
    ),
    "past_item": "- `{path}` (run {run}, BM25 {score})",
    "from": 'from {origin}: "{phrase}"',
    "default": "default: nothing said",
    "origin_request": "the request",
    "written_in": "the request is written in {name}",
    "files": "{count} file(s): {files}",
    "none": "none",
    "drawn": "{title} (`{file}`): {preview}",
    "undrawable": '"{phrase}" cannot be drawn: {reason}; instead: {alternative} (offered, not '
    "promised)",
    "undrawable_only": '"{phrase}" cannot be drawn: {reason}; no chart of the sources can be '
    "drawn instead",
    "unanswerable": "cannot be answered: {reason}",
    "search_asked": 'asked ("{phrase}"); provider: {provider}',
    "search_no_provider": (
        'asked ("{phrase}"), but no web search provider is configured in `runtime-mapping.yaml`: '
        "nothing will be searched, and the deliverable says so"
    ),
    "search_not_asked": "not asked: nothing will be searched",
    "applied": "applied: {detail}",
    "not_applied": "not applied: {detail}",
    "nothing_missed": "nothing: every part of the request was read",
    "learning_line": (
        "Past runs: {past} similar; {agree} earlier instruction(s) agree, {conflicts} conflict."
    ),
    # the instructions
    "goal_why": "The request as written is the run's goal.",
    "deliverable_asked": (
        "A {kind}, written offline as an evidence brief, as `report.md` and `report.html` in "
        "`outputs/{run_id}/`."
    ),
    "deliverable_default": (
        "An evidence brief (nothing else named), as `report.md` and `report.html` in "
        "`outputs/{run_id}/`."
    ),
    "length_value": "{label}, ±15 %.",
    "language_value": "Write in {name}.",
    "sources_value": "Work from {files}.",
    "sources_none": "No source files: work from the request text alone.",
    "sources_left_out": " Left out: {files}.",
    "sources_why": "The files of `assets/`.",
    "sources_why_less": "The files of `assets/`, less what you asked to leave out.",
    "leave_out_value": "Never use {files}.",
    "chart_value": "{head}: {title}, from `{file}` ({columns}), {aggregation}{extras}.",
    "by": "{measures} by {dimension}",
    "and": " and ",
    "time": "time",
    "only": ", only {column} = {values}",
    "series": ", one series per `{column}`",
    "top": ", the top {count}",
    "kind_aggregation": "aggregated by the measure's kind",
    "question_value": "Answer: {phrase} — {answer}",
    "question_open": "Answer: {phrase} — not answerable now: {reason}",
    "research_value": "Search the web ({provider}) for outside information: {queries}.",
    "research_none": (
        "Outside information was asked for, but no web search provider is configured: nothing "
        "will be searched, and the deliverable says so."
    ),
    "format_value": "Markdown in short sections; every fact with its source and location.",
    "format_rules_value": " Obey: {rules}.",
    "format_why": "House default.",
    "format_why_rules": "House default and the format rules found.",
    "style_value": "Follow the format and style rules of {files}.",
    "style_why": "Guideline documents present.",
    "modification_why": "Your modifications, verbatim and in order.",
    # format rules
    "no_tables": "no tables",
    "bullets": "bullet points",
    "no_charts": "no charts",
    "no_headings": "no headings",
    "max_words": "at most {value} words",
    "item_words": "at most {value} words an item",
    # aggregations and frequencies
    "mean": "mean",
    "sum": "sum",
    "last": "last value of each period",
    "count": "count",
    "decade": "decade",
    "year": "year",
    "quarter": "quarter",
    "month": "month",
    "week": "week",
    "day": "day",
}

KOREAN: dict[str, str] = {
    "title": "# 실행 {run_id} 제안서",
    "offline": "> 언어 모델 없이 내장 엔진이 오프라인으로 만든 제안서입니다.",
    "summary": "## 할 일",
    "summary_more": "- … 그 밖에 {count}건: 아래 표",
    "answer_line": (
        "답하기: `multiverse confirm {run_id}`, `multiverse modify {run_id} \"…\"` 또는 "
        "`multiverse cancel {run_id}` (자세한 방법은 맨 아래)."
    ),
    "edit_hint": (
        "고칠 줄이 있으면 MODIFY로 알려 주시거나, 확정하기 전에 이 표를 고쳐 주세요. 확정할 때 "
        "표에 있는 내용대로 진행합니다."
    ),
    "understood": "## 요청을 이해한 방식",
    "instructions": "## 제안하는 지침",
    "conflicts": "## 이전 지침과의 충돌",
    "learning": "## 학습 맥락",
    "answer": "## 답하는 방법",
    "no_conflicts": "없음: 이전 실행의 ACTIVE 지침과 어긋나는 것이 없습니다.",
    "superseded_on_confirm": "CONFIRM하면 다음 지침이 SUPERSEDED가 됩니다: {ids}.",
    "conflict": (
        '{kind}: {run}의 {old_id}는 "{old}"라고 하지만 제안은 "{new}"입니다. {old_id}는 '
        "대체됩니다."
    ),
    "first_run": "첫 실행: 과거 실행이 없습니다.",
    "past_runs": "요청이 가장 비슷한 과거 실행 (BM25 점수, 높을수록 가깝습니다):",
    "confirm": "확정",
    "modify": "변경 요청",
    "what_to_change": "…바꿀 내용…",
    "cancel": "취소",
    "or_write": "또는 `runs/{run_id}/user_response.md`에 다음 중 하나를 적어 주세요:",
    "answers": "`CONFIRM`, `MODIFY: <바꿀 내용>`, `CANCEL`.",
    "read_by_rules": "정해진 규칙으로 오프라인에서 읽었습니다. 각 줄에 근거가 된 말을 적었습니다.",
    "read_by_model": (
        "모델이 요청을 아래 명세로 읽었고 파일과 대조해 확인했습니다. 모든 지시는 이 명세에서 "
        "나왔습니다."
    ),
    "research_not_asked": (
        "이번 실행에서는 웹 검색을 하지 않습니다. 요청이 바깥 정보를 요구하지 않습니다."
    ),
    "research_not_asked_why": (
        "이전 실행의 웹 검색 지시가 아직 유효해서, 이번 요청과 다르다는 것을 밝힙니다."
    ),
    "deliverable": "결과물",
    "length": "분량",
    "language": "언어",
    "audience": "대상 독자",
    "sources": "자료",
    "left_out": "제외한 파일",
    "charts": "차트",
    "questions": "질문",
    "web_search": "웹 검색",
    "format_rules": "형식 규칙",
    "not_understood": "이해하지 못한 것 (추측하지 않았습니다)",
    "modifications": "수정 요청",
    "why_run": "실행이 된 이유",
    "past_work": "**다시 쓰는 과거 결과물** (비슷한 과거 실행의 결과물, 참고 자료로 읽음):",
    "past_item": "- `{path}` (실행 {run}, BM25 {score})",
    "from": '{origin}의 "{phrase}"에서',
    "default": "기본값: 요청에 언급 없음",
    "origin_request": "요청",
    "written_in": "요청이 {name}로 쓰였습니다",
    "files": "파일 {count}개: {files}",
    "none": "없음",
    "drawn": "{title} (`{file}`): {preview}",
    "undrawable": '"{phrase}": 그릴 수 없음: {reason}; 대신: {alternative} (제안일 뿐 약속하지 '
    "않습니다)",
    "undrawable_only": '"{phrase}": 그릴 수 없음: {reason}; 대신 그릴 수 있는 차트도 없습니다',
    "unanswerable": "답할 수 없음: {reason}",
    "search_asked": '요청함 ("{phrase}"); 검색 제공자: {provider}',
    "search_no_provider": (
        '요청함 ("{phrase}"). 그러나 `runtime-mapping.yaml`에 웹 검색 제공자가 없어 아무것도 '
        "검색하지 않으며, 결과물에 그렇게 밝힙니다"
    ),
    "search_not_asked": "요청하지 않음: 아무것도 검색하지 않습니다",
    "applied": "적용함: {detail}",
    "not_applied": "적용하지 못함: {detail}",
    "nothing_missed": "없음: 요청의 모든 부분을 읽었습니다",
    "learning_line": (
        "과거 실행: 비슷한 실행 {past}건; 이전 지침 {agree}건 일치, {conflicts}건 충돌."
    ),
    "goal_why": "요청 원문이 이 실행의 목표입니다.",
    "deliverable_asked": (
        "{kind}: 오프라인에서 증거 브리프로 써서 `outputs/{run_id}/`에 `report.md`와 "
        "`report.html`로 냅니다."
    ),
    "deliverable_default": (
        "증거 브리프 (따로 요청한 형식 없음): `outputs/{run_id}/`에 `report.md`와 `report.html`로 "
        "냅니다."
    ),
    "length_value": "{label}, ±15 %.",
    "pages": "{pages}페이지 (약 {words}단어)",
    "pages_default": "{pages}페이지 (약 {words}단어; 기본값)",
    "language_value": "{name}로 씁니다.",
    "sources_value": "{files} 파일로 작업합니다.",
    "sources_none": "원본 파일이 없습니다: 요청 글만으로 작업합니다.",
    "sources_left_out": " 제외: {files}.",
    "sources_why": "`assets/`의 파일.",
    "sources_why_less": "`assets/`의 파일 중 제외를 요청한 파일을 뺀 것.",
    "leave_out_value": "{files} 파일은 쓰지 않습니다.",
    "chart_value": "{head}: {title}, `{file}`에서 ({columns}), {aggregation}{extras}.",
    "by": "{dimension}별 {measures}",
    "and": ", ",
    "time": "시간",
    "only": ", {column} = {values}만",
    "series": ", `{column}`마다 한 계열",
    "top": ", 상위 {count}개",
    "kind_aggregation": "측정값의 종류에 따라 집계",
    "question_value": "답할 질문: {phrase} — {answer}",
    "question_open": "답할 질문: {phrase} — 지금은 답할 수 없음: {reason}",
    "research_value": "웹 검색({provider})으로 바깥 정보를 찾습니다: {queries}.",
    "research_none": (
        "바깥 정보를 요청했지만 웹 검색 제공자가 없어 아무것도 검색하지 않으며, 결과물에 그렇게 "
        "밝힙니다."
    ),
    "format_value": "마크다운, 짧은 절; 모든 사실에 출처와 위치를 밝힙니다.",
    "format_rules_value": " 지킬 규칙: {rules}.",
    "format_why": "기본 형식.",
    "format_why_rules": "기본 형식과 찾은 형식 규칙.",
    "style_value": "{files}의 형식과 문체 규칙을 따릅니다.",
    "style_why": "지침 문서가 있습니다.",
    "modification_why": "요청하신 수정 사항, 원문 그대로 순서대로.",
    "no_tables": "표 없음",
    "bullets": "글머리 기호 목록",
    "no_charts": "차트 없음",
    "no_headings": "제목 없음",
    "max_words": "최대 {value}단어",
    "item_words": "항목마다 최대 {value}단어",
    "mean": "평균",
    "sum": "합계",
    "last": "기간마다 마지막 값",
    "count": "개수",
    "decade": "10년 단위",
    "year": "연도",
    "quarter": "분기",
    "month": "월",
    "week": "주",
    "day": "일",
}

LANGUAGE_NAMES = {
    "en": {"en": "English", "ko": "Korean"},
    "ko": {"en": "영어", "ko": "한국어"},
}
TABLES = {"en": ENGLISH, "ko": KOREAN}


def words(language: str) -> dict[str, str]:
    """The fixed words in `language`, English when the engine has no texts for it."""
    return TABLES.get(language, ENGLISH)


def language_name(code: str, language: str) -> str:
    """A language's name ("Korean", "한국어") in the words of `language`."""
    names = LANGUAGE_NAMES.get(language, LANGUAGE_NAMES["en"])
    return names.get(code, code)
