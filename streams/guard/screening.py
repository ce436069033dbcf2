"""The guard on every observation write: detectors, redaction, and what waits for review.

`screen_observations` runs inside the write's transaction (`observations_append`), on
every write path: formation, propagation, manual and batch adds, import and migration
(an import keeps the statuses it brings back: `_screen_import`).
For each observation it

- redacts secret spans (in every scope, the individual one included) and sets `flags`
  and `flag_spans` from the deterministic detectors (`streams.guard.detectors`);
- decides whether it waits for a person (`in_review`), with the reasons:
  `flag:<flag>` when a flagged text is written straight into a shared scope (group,
  collective, shard); `propagated` when a copy arrives in a scope whose `review_mode` is
  `propagated` or `all`; `review_mode` (extraction, migration) or `api` (an API key) in a
  scope whose mode is `all`. An operator's own add in the UI waits only for its flags.
  `flag:instruction` follows `MEMORY_INSTRUCTION_POLICY` (`InstructionPolicy`): held
  where the scope's policy is `review` (the default in shared scopes, and in a user's
  own scope when set so), never held where it is `mark` or `withhold` (the context
  marks or leaves out the text instead).

A propagated collective copy arrives as a `candidate` already (see
`streams.memory.propagation`); it stays one, its flags joining its reasons. An observation
stored as consolidated (a migration of absorbed text) is flagged but never held: its text
is in the consolidation already.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from streams.core.documents import Observation, Scope
from streams.core.instruction_policy import DEFAULT_INSTRUCTION_POLICY, InstructionPolicy
from streams.guard.detectors import detect_and_redact

WriteOrigin = Literal["extraction", "propagation", "api", "operator", "migration", "import"]
SHARED_SCOPE_TYPES = frozenset({"group", "collective"})


def screen_observations(
    *,
    scope: Scope,
    observations: list[Observation],
    origin: WriteOrigin,
    now: datetime,
    instruction_policy: InstructionPolicy = DEFAULT_INSTRUCTION_POLICY,
) -> None:
    """Redact, flag and hold `observations` (in place) for their write into `scope`."""
    for observation in observations:
        screen_one(
            scope=scope,
            observation=observation,
            origin=origin,
            now=now,
            instruction_policy=instruction_policy,
        )


def held_flags(
    *, scope: Scope, flags: tuple[str, ...] | list[str], instruction_policy: InstructionPolicy
) -> list[str]:
    """The flags that make a write into `scope` wait for a person: every flag in a shared
    scope, `instruction` only where the scope's instruction policy is `review`."""
    review = instruction_policy.for_scope(scope.scope_type) == "review"
    if scope.scope_type in SHARED_SCOPE_TYPES:
        return [f for f in flags if f != "instruction" or review]
    return ["instruction"] if review and "instruction" in flags else []


def screen_one(
    *,
    scope: Scope,
    observation: Observation,
    origin: WriteOrigin,
    now: datetime,
    instruction_policy: InstructionPolicy = DEFAULT_INSTRUCTION_POLICY,
) -> None:
    content, detection = detect_and_redact(observation.content)
    observation.content = content
    observation.flags = list(detection.flags)
    observation.flag_spans = [span.to_dict() for span in detection.spans]
    if observation.consolidated or observation.review_status == "rejected":
        return
    if origin == "import":
        held = held_flags(scope=scope, flags=detection.flags, instruction_policy=instruction_policy)
        _screen_import(scope, observation, tuple(held), now)
        return
    reasons = list((observation.review or {}).get("reasons") or [])
    held = held_flags(scope=scope, flags=detection.flags, instruction_policy=instruction_policy)
    reasons += [f"flag:{flag}" for flag in held]
    propagated = origin == "propagation" or observation.propagated_from is not None
    if propagated and scope.review_mode in ("propagated", "all"):
        reasons.append("propagated")
    elif scope.review_mode == "all" and origin != "operator":
        reasons.append("api" if origin == "api" else "review_mode")
    reasons = list(dict.fromkeys(reasons))
    if observation.review_status == "candidate":
        observation.review = {**(observation.review or {}), "reasons": reasons}
        observation.review.setdefault("since", now)
        return
    if not reasons:
        observation.review = None
    else:
        observation.review_status = "in_review"
        observation.review = {
            **(observation.review or {}),
            "reasons": reasons,
            "since": now,
        }
        observation.review.setdefault("supporting_group_ids", [])


def _screen_import(
    scope: Scope, observation: Observation, flags: tuple[str, ...], now: datetime
) -> None:
    """An import brings memory back as it was exported: a held observation keeps its
    status and review record, and so does a pending one a person approved. Any other
    pending one meets the flag rule of every write (a flagged text in a shared scope
    waits for a person); the scope's review mode is not applied again to what was
    live already."""
    if observation.review_status is not None:
        return
    if (observation.review or {}).get("decision") == "approve":
        return
    if flags:  # the flags that hold a write into this scope (`held_flags`)
        observation.review_status = "in_review"
        observation.review = {
            **(observation.review or {}),
            "reasons": [f"flag:{flag}" for flag in flags],
            "since": now,
        }
        observation.review.setdefault("supporting_group_ids", [])


def origin_of(actor: str | None) -> WriteOrigin:
    """The origin of a manual add by its actor: an API key, or a person (UI, command)."""
    return "api" if actor is not None and actor.startswith("api:") else "operator"
