"""Removed text leaves the context log too: a logged call never keeps what staff took out.

"Logged" here is both copies of a context given to an agent: the context log
(`memory_context_calls`) and the chat proxy's call records (`memory_chat_calls`, whose
injected context is kept even when the log is off); one loop scrubs both.

A context call quotes observations (recent and retrieved) and consolidation versions,
in sections other users see as well (a group's, the collective's, a shard's). When an
observation's text is removed (delete, bulk delete or private, forget-user, an edit's
old text) or a rebuild redacts the versions that held it, every logged record quoting
it, whoever the call was for, gets that text replaced by `REMOVED` in its XML. The
records are found by index: each call lists what it quoted (`quoted_observation_ids`,
`quoted_versions`, written with the record), and a scrubbed record drops those entries,
so the work is done once. Records still queued behind the hot path are written first.

Replay (streams/context/replay.py) is computed from history and redacts on its own;
this keeps the log view, which shows the XML as it was sent, in step with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

from bson import ObjectId

from streams.core.documents import Observation, utcnow
from streams.core.xml_text import SENTENCE_END, xml_text
from streams.store import MemoryStore, write_behind
from streams.store.quoted import QuotedRecord, QuotedText

REMOVED = "[removed]"
BATCH = 200  # records rewritten per round
MAX_ROUNDS = 10_000  # a bound on the loop: each round takes its records off the index
ID_CHUNK = 200  # ids per `$in`


def context_log_forget_observations(
    *,
    store: MemoryStore,
    texts: Iterable[tuple[str, str]],
    except_user_id: str | None = None,
) -> int:
    """Scrub `(observation id, removed text)` from every logged call that quoted it, but
    calls of `except_user_id` (an observation made private stays in its owner's own
    memory); how many records were rewritten."""
    removed = {i: t for i, t in texts if ObjectId.is_valid(i)}
    if not removed:
        return 0

    def scrubbed(record: QuotedRecord) -> QuotedRecord:
        hit = [i for i in record.observation_ids if i in removed]
        text = record.text
        for observation_id in hit:
            text = _without(text, _bullet_text(removed[observation_id]))
        return QuotedRecord(id=record.id, text=text, observation_ids=hit, versions=[])

    return _scrub_everywhere(
        store,
        sorted(removed),
        lambda quoted, chunk: quoted.quoting(
            observation_ids=chunk, except_user_id=except_user_id, limit=BATCH
        ),
        scrubbed,
    )


def context_log_forget_versions(*, store: MemoryStore, scope_id: str, texts: dict[int, str]) -> int:
    """Scrub these consolidation versions' texts (`{version: text}`, read before a
    rebuild redacted them) from every logged call that showed one; records rewritten."""
    keys = {f"{scope_id}:{version}": text for version, text in texts.items() if text}
    if not keys:
        return 0

    def scrubbed(record: QuotedRecord) -> QuotedRecord:
        hit = [v for v in record.versions if v in keys]
        text = record.text
        for key in hit:
            text = _without_consolidation(text, keys[key])
        return QuotedRecord(id=record.id, text=text, observation_ids=[], versions=hit)

    return _scrub_everywhere(
        store,
        sorted(keys),
        lambda quoted, chunk: quoted.quoting(versions=chunk, limit=BATCH),
        scrubbed,
    )


def _scrub_everywhere(
    store: MemoryStore,
    wanted: list[str],
    find: Callable[[QuotedText, list[str]], list[QuotedRecord]],
    scrubbed: Callable[[QuotedRecord], QuotedRecord],
) -> int:
    """The one scrub loop, over every collection keeping a copy of the context: the
    context log and the chat proxy's calls (kept even with the log off). Records still
    queued behind the hot path are written first; each round takes its records off the
    index, so the loop ends."""
    write_behind.flush()
    rewritten = 0
    for quoted in (store.context_calls.quoted, store.chat_calls.quoted):
        for start in range(0, len(wanted), ID_CHUNK):
            chunk = wanted[start : start + ID_CHUNK]
            for _ in range(MAX_ROUNDS):
                records = find(quoted, chunk)
                rewritten += quoted.scrub([scrubbed(r) for r in records], utcnow())
                if len(records) < BATCH:
                    break
    return rewritten


def quoted_digest(text: str) -> str:
    """What a catch-up job carries of a quoted text: a digest, never the words."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def chat_catch_up(
    *, store: MemoryStore, call_id: str, digests: dict[str, str], versions: list[str]
) -> int:
    """The `chat_catch_up` job, written with the chat call's record in its transaction
    (so a crash after the commit still runs it): a removal made while the upstream was
    answering scrubbed only the records written by then. By ids and digests only: each
    quoted observation is read now; one deleted (its text kept with it) or made private
    (but in its owner's own calls) is scrubbed from this record; one whose text is gone
    or changed (purged, forgotten, edited) or a version redacted since leaves words
    this job cannot name, so the record's whole context is removed. Records rewritten."""
    record = store.chat_calls.quoted_record(ObjectId(call_id))
    if record is None or not record.get("context"):
        return 0
    ids = [ObjectId(i) for i in digests if ObjectId.is_valid(i)]
    current = {o.id: o for o in store.observations.get_many(ids)}
    text: str = record["context"]
    hit: list[str] = []
    whole = False
    for observation_id, digest in digests.items():
        o = current.get(observation_id)
        if o is None or quoted_digest(o.content) != digest:
            whole = True
        elif o.deleted_at is not None or (
            o.private and private_owner(store, o.scope_id) != record.get("user_id")
        ):
            text, hit = _without(text, _bullet_text(o.content)), [*hit, observation_id]
    for key in versions:
        scope_id, _, version = key.rpartition(":")
        if ObjectId.is_valid(scope_id) and version.isdigit():
            entry = store.consolidations.get(ObjectId(scope_id), int(version))
            whole = whole or entry is None or entry.redacted
    if whole:
        text = REMOVED
    if text == record["context"]:
        return 0
    change = QuotedRecord(id=record["_id"], text=text, observation_ids=hit, versions=[])
    return store.chat_calls.quoted.scrub([change], utcnow())


def private_owner(store: MemoryStore, scope_id: str) -> str | None:
    """Whose calls keep a private observation of this scope: the user of an individual
    scope (their own memory still shows it); None for shared scopes (nobody's)."""
    scope = store.scopes.get(ObjectId(scope_id))
    return scope.user_id if scope is not None and scope.scope_type == "individual" else None


def removed_texts(observations: Iterable[Observation]) -> list[tuple[str, str]]:
    return [(o.id, o.content) for o in observations]


def _bullet_text(content: str) -> str:
    """As `streams.context` renders an observation's line (spacing folded, escaped)."""
    return xml_text(" ".join(content.split()))


def _without(xml: str, rendered: str) -> str:
    return xml.replace(rendered, REMOVED) if rendered else xml


MIN_SCRUBBED_SENTENCE = 12  # shorter ones ("Yes.") are sought only with their neighbours


def _without_consolidation(xml: str, text: str) -> str:
    """The text whole, or (a budget cuts the user's own from its end, by sentences) its
    longest leading sentences that the XML holds; then any sentence of it still there
    (`MEMORY_INSTRUCTION_POLICY=withhold` shows it without its instruction-like ones)."""
    whole = xml_text(text)
    if whole and whole in xml:
        return xml.replace(whole, REMOVED)
    sentences = SENTENCE_END.split(text.strip())
    for keep in range(len(sentences) - 1, 0, -1):
        part = xml_text(" ".join(sentences[:keep]))
        if part and part in xml:
            xml = xml.replace(part, REMOVED)
            break
    for sentence in sentences:
        part = xml_text(sentence)
        if len(part) >= MIN_SCRUBBED_SENTENCE and part in xml:
            xml = xml.replace(part, REMOVED)
    return xml
