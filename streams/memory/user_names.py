"""The findable name of an individual scope's user, kept in `memory_user_names`.

Written when the scope is created or renamed (`streams.memory.scopes`) and searched by
`streams.people.user_find`; apart from both so that neither imports the other.
"""

from __future__ import annotations

import unicodedata

from streams.core.documents import Scope
from streams.store import MemoryStore, StoreSession


def normalize(text: str) -> str:
    """Case-, accent- and space-insensitive: "  Génè  W." → "gene w."."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def name_keys(display_name: str | None) -> list[str]:
    """The whole normalized name and each tail starting at a later word."""
    words = normalize(display_name or "").split(" ")
    return [" ".join(words[i:]) for i in range(len(words)) if words[i]]


def user_name_record(
    *, store: MemoryStore, scope: Scope, session: StoreSession | None = None
) -> None:
    """Keep the findable name of an individual scope's user (other scopes have none).

    With `session` it is written in the caller's transaction, beside the scope it names,
    so an aborted action leaves no name behind."""
    if scope.scope_type != "individual" or not scope.user_id:
        return
    store.user_names.upsert(
        agent_id=scope.agent_id,
        user_id=scope.user_id,
        scope_id=scope.id,
        display_name=scope.display_name,
        name_keys=name_keys(scope.display_name),
        user_key=normalize(scope.user_id),
        session=session,
    )
