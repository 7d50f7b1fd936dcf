"""The cells of EVALS.md: one result case said in a few words per column."""

from __future__ import annotations

from typing import Any

from multiverse.gateway import ENOUGH_FINISH, REPEAT_FINISH, TABLE_FINISH

_PHASES = ("intake", "P0", "P1", "P2", "P3", "P4", "closing")


def duration(seconds: float | None) -> str:
    """1h02m, 3m10s, 12s, 0.4s; an em dash when unknown."""
    if seconds is None:
        return "—"
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def cell(text: Any) -> str:
    """Text safe inside a markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _mark(passed: bool | None) -> str:
    return {True: "✓", False: "✗", None: "—"}[passed]


def outcome(case: dict[str, Any]) -> str:
    """The outcome and, when not completed, where and why."""
    text = str(case.get("outcome", "?"))
    failure = case.get("failure") or {}
    where = "/".join(str(failure[k]) for k in ("phase_id", "stage_id", "task_id", "tool_task_id")
                     if failure.get(k))  # fmt: skip
    if failure:
        role = f" {failure['role']}" if failure.get("role") else ""
        text += f" at {where or '?'}{role}: {str(failure.get('error', ''))[:240]}"
    elif case.get("direct_answer"):
        kind, path = case["direct_answer"]
        said = f"{kind}: answered without a run ({path})"
        text = said if text == kind else f"{text}; {said}"
    elif case.get("outcome") not in ("COMPLETED", None):
        at = case.get("at_stop") or {}
        pointer = "/".join(str(at[k]) for k in ("current_phase_id", "current_stage_id",
                                                 "current_task_id") if at.get(k))  # fmt: skip
        step = (case.get("timing") or {}).get("last_step")
        text += f" ({at.get('status', '?')} at {pointer or '?'}; step in flight: {step or '?'})"
        text += f" {case.get('note', '')}"
    return text


def calls(case: dict[str, Any]) -> str:
    """Calls per role (usage.json, else the log), repair attempts, constrained, invalid JSON."""
    model = case.get("model") or {}
    roles = model.get("by_role")
    per_role = (
        {role: usage.get("calls", 0) for role, usage in roles.items()}
        if roles
        else model.get("calls_by_role_logged") or {}
    )
    logged = model.get("calls_logged", 0)
    failed = (model.get("events") or {}).get("llm_call_failed", 0)
    given_up = f"; {failed} call(s) given up (llm_call_failed)" if failed else ""
    if not per_role and not logged:
        return ("no call answered" if failed else "no model call") + given_up
    constrained = model.get("constrained")
    parts = [
        ", ".join(f"{role} {n}" for role, n in sorted(per_role.items())) or "—",
        f"repair attempts {model.get('repair_attempts', 0)}/{logged}"
        + (f" (repairs per call: {spread})" if (spread := _spread(model)) else ""),
        f"invalid JSON {model.get('events', {}).get('llm_json_invalid', 0)}",
        "constrained " + ("n/a" if constrained is None else f"{constrained}/{logged}"),
        f"cut at max_tokens {model.get('finish_length', 0)}"
        + (f" ({continued} continued)" if (continued := model.get("continued")) else ""),
    ]
    return "; ".join(parts) + given_up


def _spread(model: dict[str, Any]) -> str:
    """How many calls needed how many repairs, e.g. "0×40 1×3 2×1"."""
    per = model.get("repairs_per_call") or {}
    return " ".join(f"{k}×{v}" for k, v in per.items())


def tokens(case: dict[str, Any]) -> str:
    """Prompt + completion tokens (usage.json, else summed from the log); with the prompt tokens
    the provider's prompt cache served and their share, when the result knows them."""
    model = case.get("model") or {}
    usage = model.get("usage") or {}
    prompt = usage.get("prompt_tokens", model.get("prompt_tokens", 0))
    completion = usage.get("completion_tokens", model.get("completion_tokens", 0))
    if not prompt and not completion:
        return "0"
    cached = usage.get("cached_prompt_tokens", model.get("cached_tokens"))
    if cached is None:  # a result from before it was measured
        return f"{prompt:,} + {completion:,}"
    share = f", {round(100 * cached / prompt)} %" if prompt else ""
    return f"prompt {prompt:,} (cached {cached:,}{share}) + completion {completion:,}" + unreported(
        model.get("calls") or []
    )


CLOSED_EARLY = (REPEAT_FINISH, ENOUGH_FINISH, TABLE_FINISH)  # a stream closed early


def unreported(calls: list[dict[str, Any]]) -> str:
    """What the totals cannot say when answers stopped early (at a repeat, or at the words asked)
    carry no cache report: a server sends no usage for a stream closed early, and only a
    llama-server asked for its timings in every chunk (since 69184bd) reports one; those without
    (cached tokens 0) are counted apart, and the cached share is also given over the others."""
    stopped = [call for call in calls
               if call.get("finish_reason") in CLOSED_EARLY and not call.get("cached_tokens")]
    if not stopped:
        return ""
    reported = [call for call in calls if call not in stopped]
    prompt = sum(call.get("prompt_tokens") or 0 for call in reported)
    cached = sum(call.get("cached_tokens") or 0 for call in reported)
    share = f" ({round(100 * cached / prompt)} %)" if prompt else ""
    return (f"; {len(stopped)} answer(s) stopped early report no usage (cache unknown); "
            f"the {len(reported)} others: cached {cached:,} of {prompt:,}{share}")  # fmt: skip


def phases(case: dict[str, Any]) -> str:
    """Wall time per phase from the log, the confirmation wait, and the harness's own clock."""
    timing = case.get("timing") or {}
    names = case.get("phase_names") or {}
    spent = timing.get("phases") or {}
    parts = [f"{names.get(p, p)} {duration(spent[p])}" for p in _PHASES if p in spent]
    parts += [f"{p} {duration(v)}" for p, v in spent.items() if p not in _PHASES]
    if timing.get("waiting_s"):
        parts.append(f"waiting for confirmation {duration(timing['waiting_s'])}")
    parts.append(f"total {duration(case.get('total_s'))}")
    return ", ".join(parts) or "—"


def checklist(case: dict[str, Any]) -> str:
    """Figures found/total, chart, words/target, recommendation with reasons."""
    check = case.get("checklist")
    if not check:
        return "no deliverable"
    if not check.get("deliverable"):
        return "no deliverable in outputs/"
    fig, length, rec, chart = (check.get(k) or {} for k in
                               ("figures", "length", "recommendation", "chart"))  # fmt: skip
    missing = ", ".join(fig.get("missing", [])[:6])
    parts = [f"figures {fig.get('found')}/{fig.get('total')} {_mark(fig.get('passed'))}"
             + (f" (not in assets: {missing})" if missing else "")]  # fmt: skip
    if check.get("chart") is not None:
        parts.append(
            f"chart {_mark(chart.get('passed'))} ({chart.get('charts', 0)} found; best: "
            f"{', '.join(chart.get('countries_found') or []) or 'no country'}, "
            f"{chart.get('values_found', 0)}/{chart.get('values_total', 0)} values)"
        )
    target = length.get("target")
    parts.append(f"words {length.get('words')}" + (f"/{target}" if target else "")
                 + f" {_mark(length.get('passed'))}")  # fmt: skip
    rec_state = "no recommendation" if not rec.get("recommendation") else (
        "with reason" if rec.get("reason") else "no reason given")  # fmt: skip
    parts.append(f"recommendation {_mark(rec.get('passed'))} ({rec_state})")
    return "; ".join(parts)


def wall_time(case: dict[str, Any]) -> str:
    """The harness's clock: submit → proposal, confirm → final, and the whole case."""
    return (f"proposal {duration(case.get('proposal_s'))}, work {duration(case.get('work_s'))}, "
            f"total {duration(case.get('total_s'))}")  # fmt: skip


def cost(case: dict[str, Any]) -> str:
    """What the deliverable cost: calls, prompt (cached) + completion tokens, answers cut at
    max_tokens, minutes in all and per phase."""
    spent = case.get("cost") or {}
    if not spent:
        return "—"
    cached = spent.get("cached_prompt_tokens")
    prompt = f"{spent.get('prompt_tokens', 0):,}" + (
        "" if cached is None else f" (cached {cached:,})")  # fmt: skip
    phases = ", ".join(f"{name} {minutes:g}" for name, minutes in
                       (spent.get("minutes_per_phase") or {}).items())  # fmt: skip
    calls = (case.get("model") or {}).get("calls") or []
    finishes = [str(call.get("finish_reason")) for call in calls]
    said = {REPEAT_FINISH: "at a repeat", ENOUGH_FINISH: "at the words asked",
            TABLE_FINISH: "at a table's rows"}  # fmt: skip
    stopped = ", ".join(f"{finishes.count(reason)} {said[reason]}"
                        for reason in CLOSED_EARLY if reason in finishes)  # fmt: skip
    repeats = f"; stopped early {stopped}" if stopped else ""
    return (f"{spent.get('calls', 0)} calls; {prompt} + {spent.get('completion_tokens', 0):,} "
            f"tokens; cut {spent.get('cut_at_max_tokens', 0)}{repeats}; "
            f"{spent.get('minutes', 0):g} min" + (f" ({phases})" if phases else ""))  # fmt: skip


def _pair(found: Any) -> str:
    return f"{found[0]}/{found[1]}" if isinstance(found, list) and len(found) == 2 else "—"


def corpus_checks(case: dict[str, Any]) -> list[str]:
    """A corpus case's checklist in columns: charts drawn, exclusions, lookups, untraced
    numbers, language and words, problems."""
    check = case.get("checklist") or {}
    judged = check.get("corpus")
    if not judged:
        said = "no deliverable" if not check else "not judged"
        return [said, "—", "—", "—", "—", said]
    values = "; ".join(f"{v['found']}/{v['total']}" for v in judged.get("chart_values") or []
                       if v.get("passed") is not None)  # fmt: skip
    charts = _pair(judged.get("charts_drawn")) + (f" ({values})" if values else "")
    charts += f", in the spec {_pair(judged.get('charts_asked'))}"
    leaked = f", {judged['leaked']} named" if judged.get("leaked") else ""
    asked = (f"{_pair(judged.get('delivered'))} in the deliverable, "
             f"{_pair(judged.get('questions'))} in the spec")  # fmt: skip
    untraced = judged.get("untraced")
    language, length = judged.get("language") or {}, judged.get("length") or {}
    words = f"{length.get('words')}" + (f"/{length['target']}" if length.get("target") else "")
    said = (f"{language.get('written') or '—'} {_mark(language.get('passed'))}, "
            f"{words} {_mark(length.get('passed'))}")  # fmt: skip
    problems = "; ".join(judged.get("problems") or []) or "none"
    return [charts, _pair(judged.get("exclusions")) + leaked, asked,
            "n/a" if untraced is None else str(untraced), said, problems[:400]]  # fmt: skip
