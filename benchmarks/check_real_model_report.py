"""The report `check_real_model` prints: the server's terms, the calls per task, what the
checks refused per shape, what held, and the end-to-end quality figures."""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.harness import print_table

TIMEOUT_SLACK = 1.0  # seconds a call may run past its timeout (the client's own clock)


def limits_broken(calls: list[Any]) -> list[str]:
    """Calls sent without max_tokens, answers past it, calls past their timeout."""
    broken = []
    for call in calls:
        limit = call.sent.get("max_tokens")
        if not isinstance(limit, int):
            broken.append(f"{call.task}: sent without max_tokens")
        elif call.completion_tokens > limit:
            broken.append(f"{call.task}: {call.completion_tokens} tokens past max_tokens {limit}")
        retries = 1 + 2  # the client's own attempts (MEMORY_LLM_MAX_RETRIES at most 2 here)
        if call.timeout and call.seconds > call.timeout * retries + TIMEOUT_SLACK:
            broken.append(f"{call.task}: {call.seconds:.1f} s past its {call.timeout:g} s timeout")
    return broken


def _call_rows(calls: list[Any]) -> list[list[object]]:
    rows: list[list[object]] = []
    for task in dict.fromkeys(c.task for c in calls):
        mine = [c for c in calls if c.task == task]
        failures = Counter(c.failure for c in mine if c.failure)
        sent = mine[-1].sent
        response_format = (sent.get("response_format") or {}).get("type", "none (text)")
        rows.append(
            [
                task,
                len(mine),
                response_format,
                sent.get("temperature", "not sent"),
                max(c.sent.get("max_tokens") or 0 for c in mine),
                max(c.completion_tokens for c in mine),
                f"{max(c.seconds for c in mine):.1f} / {mine[-1].timeout:g}",
                failures.get("cut", 0),
                failures.get("timeout", 0),
                failures.get("error", 0),
            ]
        )
    return rows


CALL_HEADERS = [
    "task",
    "calls",
    "response_format",
    "temperature",
    "max_tokens",
    "most tokens answered",
    "slowest s / timeout s",
    "cut",
    "timed out",
    "other errors",
]


def _print_quality(quality: Any) -> None:
    print_table(
        "Quality end to end on the LoCoMo questions the set answers (benchmarks.end_to_end)",
        ["questions", "evidence cited", "any evidence", "key terms stated", "context tokens"],
        [
            [
                quality.questions,
                f"{quality.evidence:.3f}",
                f"{quality.hit:.3f}",
                f"{quality.terms:.3f}",
                f"{quality.tokens:.0f}",
            ]
        ],
    )


def print_report(
    *,
    base_url: str | None,
    models: tuple[str, str],
    terms: dict[str, Any],
    calls: list[Any],
    counts: Counter[str],
    unlisted: list[str],
    refused: list[str],
    quality: Any,
    seconds: float,
    command: str,
) -> bool:
    """Print it all; True when everything held."""
    print(f"\ncheck_real_model: {command} against {base_url} (models {models[0]} / {models[1]})")
    print(
        f"negotiated: response_format {terms['output']}, temperature "
        f"{'sent' if terms['temperature'] else 'refused, not sent'}"
    )
    for warning in terms.get("warnings") or []:
        print(f"warning: {warning}")
    print_table(
        "Calls per task (what was sent; the slowest call against its timeout)",
        CALL_HEADERS,
        _call_rows(calls),
    )
    print_table(
        "What the model answered and what the checks did with it",
        ["outcome", "count"],
        [[name, count] for name, count in sorted(counts.items())],
    )
    broken = limits_broken(calls)
    held: list[tuple[str, bool, list[str]]] = [
        ("every stored observation in a scope the prompts listed", not unlisted, unlisted),
        ("nothing committed that the answer checks refuse", not refused, refused),
        ("limits kept (max_tokens on every call, none past it or its timeout)", not broken, broken),
    ]
    print_table(
        "What held",
        ["check", "held", "exceptions"],
        [[name, "yes" if ok else "NO", "; ".join(why)[:120] or "-"] for name, ok, why in held],
    )
    _print_quality(quality)
    ok = all(row[1] for row in held)
    print(f"\n{'HELD' if ok else 'DID NOT HOLD'} ({len(calls)} model calls, {seconds:.0f} s)")
    return ok
