"""The guard on every observation write: detectors, redaction, and what waits for review.

`screen_observations` runs inside the write's transaction (`observations_append`), on
every write path: formation, propagation, manual and batch adds, moves, import and
migration (an import re-derives every status the document claims: `_screen_import`).
Hand-written text (pins, hand edits) passes `screen_scope_text`; every repository method
that stores memory text takes only the `ScreenedText` this module makes.
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

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from streams.core.documents import Observation, Scope
from streams.core.exceptions import InvalidInput
from streams.core.flag_kinds import HELD_FLAGS
from streams.core.instruction_policy import DEFAULT_INSTRUCTION_POLICY, InstructionPolicy
from streams.core.screened import ScreenedText
from streams.guard.detectors import Detection, detect_and_redact

WriteOrigin = Literal[
    "extraction", "propagation", "api", "operator", "migration", "import", "move", "restore"
]
SHARED_SCOPE_TYPES = frozenset({"group", "collective"})
# What a shared scope refuses from a hand-written text (pins, hand edits) unless a person
# confirms it (the UI's "Save anyway"): the kinds of severity "hold"
# (`streams.core.flag_kinds`); secrets are redacted, never refused.
REFUSED_FLAGS = HELD_FLAGS


class Flagged(InvalidInput):
    """A text for a shared scope holds personal data or an instruction (422 `flagged`)."""

    code = "flagged"


def screen_text(text: str) -> tuple[ScreenedText, Detection]:
    """The one screen of memory text: secrets redacted, and its detection (on that text)."""
    content, detection = detect_and_redact(text)
    return ScreenedText(content), detection


def screened(text: str) -> ScreenedText:
    """`text` with its secrets redacted: what a caller sent (a message, a context call's
    message, a chat turn) and a model's own output, before they are stored."""
    if isinstance(text, ScreenedText):
        return text
    return screen_text(text)[0]


def screen_scope_text(
    *,
    scope: Scope,
    text: str,
    origin: WriteOrigin,
    override: bool = False,
    field: str | None = None,
) -> tuple[ScreenedText, list[str]]:
    """A hand-written text for `scope` (a pin, a hand edit): secrets redacted; in a shared
    scope a text flagged `pii:*` or `instruction` is refused (`Flagged`, with its flags
    and spans) unless a person (not an API key) confirms it with `override`. Returns the
    text and the flags the override let through (for the audit entry)."""
    content, detection = screen_text(text)
    refused = [f for f in detection.flags if f in REFUSED_FLAGS]
    if scope.scope_type not in SHARED_SCOPE_TYPES or not refused:
        return content, []
    if override and origin != "api":
        return content, refused
    details: dict[str, object] = {
        "flags": refused,
        "spans": [[s.start, s.end] for s in detection.spans if s.flag in REFUSED_FLAGS],
    }
    if field is not None:
        details["field"] = field
    raise Flagged(
        f"the text holds {', '.join(refused)}; a shared scope takes it only when a person "
        "confirms it",
        details=details,
    )


def screen_pins(
    *, scope: Scope, pins: Sequence[str], origin: WriteOrigin, override: bool = False
) -> tuple[list[ScreenedText], list[str]]:
    """Each pin screened for `scope` (see `screen_scope_text`); the flags let through."""
    out: list[ScreenedText] = []
    let_through: list[str] = []
    for n, pin in enumerate(pins):
        text, flags = screen_scope_text(
            scope=scope, text=pin, origin=origin, override=override, field=f"pins.{n}"
        )
        out.append(text)
        let_through += flags
    return list(dict.fromkeys(out)), list(dict.fromkeys(let_through))


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
    content, detection = screen_text(observation.content)
    observation.content = content
    observation.flags = list(detection.flags)
    observation.flag_spans = [span.to_dict() for span in detection.spans]
    if origin == "import":  # before the claimed `consolidated`: a claim skips nothing
        held = held_flags(scope=scope, flags=detection.flags, instruction_policy=instruction_policy)
        _screen_import(scope, observation, tuple(held), now)
        return
    if observation.consolidated or observation.review_status == "rejected":
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
    """An import re-derives every status from the target scope's rules: what a document
    claims (pending, consolidated, approved by a person) is never trusted, so a flagged
    text in a shared scope waits for a person, and so does a propagated copy in a scope
    that reviews them. A held, candidate or rejected one keeps its status and record
    (stricter than the rule). The scope's review mode `all` is not applied to what was
    live already."""
    if observation.review_status is not None:
        return
    # `flags` are those that hold a write into this scope (`held_flags`).
    reasons = [f"flag:{flag}" for flag in flags]
    if observation.propagated_from is not None and scope.review_mode in ("propagated", "all"):
        reasons.append("propagated")
    if not reasons:
        return
    observation.consolidated = False
    observation.review_status = "in_review"
    observation.review = {"reasons": reasons, "since": now, "supporting_group_ids": []}


def origin_of(actor: str | None) -> WriteOrigin:
    """The origin of a manual add by its actor: an API key, or a person (UI, command)."""
    return "api" if actor is not None and actor.startswith("api:") else "operator"
