"""The totals of a prompt experiment: per side over the inputs it covered, and what it
covered of its plan; and the outcome of a side that had nothing to run."""

from __future__ import annotations

from typing import Any


def skipped_side(why: str) -> dict[str, Any]:
    return {
        "text": None,
        "error": why,
        "items": [],
        "stored": 0,
        "flags": 0,
        "duplicates": 0,
        "words": 0,
        "fidelity": None,
        "coverage": None,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_micro_usd": None,
        "model": None,
        "calls": 0,
    }


SUMMED = ("stored", "words", "flags", "duplicates", "prompt_tokens", "completion_tokens", "calls")


def experiment_summary(
    outcomes: list[dict[str, Any]], *, planned: int, stopped: str | None, budget: int
) -> dict[str, Any]:
    """Per side totals over the inputs covered, and what the run covered of its plan."""

    def total(which: str) -> dict[str, Any]:
        sides = [o[which] for o in outcomes]
        found: dict[str, Any] = {key: sum(s[key] for s in sides) for key in SUMMED}
        found["errors"] = sum(1 for s in sides if s["error"])
        costs = [s["cost_micro_usd"] for s in sides if s["calls"]]
        found["cost_micro_usd"] = None if None in costs or not costs else sum(costs)
        weighed = [s["fidelity"] for s in sides if s["fidelity"]]
        found["fidelity"] = (
            {
                "weighed": sum(f["weighed"] for f in weighed),
                "unstated": sum(f["unstated"] for f in weighed),
                "dropped_sentences": sum(f["dropped_sentences"] for f in weighed),
            }
            if weighed
            else None
        )
        counted = [s["coverage"] for s in sides if s["coverage"]]
        found["coverage"] = (
            {k: sum(c.get(k, 0) for c in counted) for k in counted[0]} if counted else None
        )
        return found

    return {
        "planned": planned,
        "covered": len(outcomes),
        "stopped": stopped,
        "budget_tokens": budget,
        "spent_tokens": sum(o["tokens"] for o in outcomes),
        "failed_units": sum(1 for o in outcomes if o["failed"]),
        "routing_changes": sum(o["routing_changes"] for o in outcomes),
        "draft": total("draft"),
        "in_effect": total("in_effect"),
    }
