"""The four promises, each its own function: each returns the broken cases (empty when it
holds), so a failing step names the invariant, the text, the path that wrote it and
the surface that showed it."""

from __future__ import annotations

from tests.every_path.ledger import Entry, Snapshot
from tests.every_path.texts import PII_KINDS

FLAGGED_KINDS = PII_KINDS | {"instruction"}
READ_PATHS = ("context", "search")


def no_live_personal_data_or_secret_in_shared_scopes(
    entries: list[Entry], snap: Snapshot
) -> list[str]:
    """Flagged personal data and instructions are never live in a shared scope's context,
    search or consolidation (unless a person approved them); a rejected text is live
    nowhere; a secret is shown by no surface at all (it is redacted in every scope)."""
    broken = []
    for e in entries:
        if e.text.kind == "secret":
            where = snap.holding(e.text.value) + snap.webhooks_holding(e.text.value, since=0)
            if where:
                broken.append(f"secret of {e.describe()} shown by {where}")
        elif e.text.kind in FLAGGED_KINDS and not e.approved:
            where = snap.holding(e.text.value, shared_only=True)
            if where:
                broken.append(f"{e.describe()} live in {where}")
        if e.rejected and not e.approved:
            where = snap.holding(e.text.marker, shared_only=True)
            where += [s for s in snap.holding(e.text.marker) if s.startswith("context")]
            if where:
                broken.append(f"rejected {e.describe()} live in {sorted(set(where))}")
    return broken


def removed_marker_appears_nowhere(entries: list[Entry], snap: Snapshot) -> list[str]:
    """A deleted text appears in no API answer, no UI page, no export and no webhook body
    sent from its removal on; an expired one in no context, search or consolidation (the
    third-wave contract lists it, marked `expired`, until the sweep purges it)."""
    broken = []
    for e in entries:
        if e.removed_at is None:
            continue
        where = snap.holding(e.text.marker)
        if e.removed_by == "expiry":
            where = [
                w for w in where if w.startswith(("context", "search")) or "consolidation" in w
            ]
        where += snap.webhooks_holding(e.text.marker, since=e.removed_at)
        if where:
            shown = snap.excerpt(e.text.marker, where[0]) if where else ""
            broken.append(
                f"{e.describe()}, removed by {e.removed_by} at step {e.removed_at}, in {where}"
                f" (there: …{shown}…)"
            )
    return broken


def forgotten_user_appears_nowhere(entries: list[Entry], snap: Snapshot) -> list[str]:
    """A forgotten user's texts (and anything sent for them after the forget) appear on
    no surface and in no webhook body sent after the forget."""
    broken = []
    for e in entries:
        if e.forgotten_at is None:
            continue
        where = snap.holding(e.text.marker) + snap.webhooks_holding(
            e.text.marker, since=e.forgotten_at
        )
        if where:
            broken.append(
                f"{e.describe()} of forgotten {e.owner} (step {e.forgotten_at}) in {where}"
            )
    return broken


def acknowledged_write_exists_once(entries: list[Entry], snap: Snapshot) -> list[str]:
    """Every acknowledged observation write (not since removed) is one stored observation,
    whatever its status; every acknowledged pin is in its scope's pins once."""
    broken = []
    for e in entries:
        if e.live_observation:
            found = [o["id"] for o in snap.observations if e.text.marker in (o["content"] or "")]
            if len(found) != 1:
                broken.append(f"{e.describe()} stored {len(found)} times: {found}")
        elif e.what == "pin" and e.acked and not e.replaced and e.forgotten_at is None:
            count = sum(e.text.marker in p for p in snap.pins.get(e.scope_id, []))
            if count != 1:
                broken.append(f"{e.describe()} in the pins {count} times")
    return broken


def superseded_is_kept_not_current(entries: list[Entry], snap: Snapshot) -> list[str]:
    """A superseded observation is not removed (`acknowledged_write_exists_once` still
    finds it in the log, once) but not current: no search answer holds it (the context's
    consolidation may, until the next consolidation folds the newer fact in)."""
    broken = []
    for e in entries:
        if e.superseded_at is None or not e.live_observation:
            continue
        where = [w for w in snap.holding(e.text.marker) if w.startswith("search")]
        if where:
            broken.append(f"superseded {e.describe()} (step {e.superseded_at}) in {where}")
    return broken


INVARIANTS = {
    f.__name__: f
    for f in (
        no_live_personal_data_or_secret_in_shared_scopes,
        removed_marker_appears_nowhere,
        forgotten_user_appears_nowhere,
        acknowledged_write_exists_once,
        superseded_is_kept_not_current,
    )
}
