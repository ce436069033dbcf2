"""Memory behaviour: formation triggers and consolidation defaults (`domain.md`)."""

from __future__ import annotations

from typing import Literal

from memory_admin.settings.env import env_bool, env_float, env_int, env_str
from streams.core.consolidate_after import ConsolidateAfterDays

MEMORY_FORMATION_MAX_MESSAGES = env_int("MEMORY_FORMATION_MAX_MESSAGES", 45)
MEMORY_FORMATION_MAX_TOKENS = env_int("MEMORY_FORMATION_MAX_TOKENS", 1000)
MEMORY_FORMATION_MIN_MESSAGES = env_int("MEMORY_FORMATION_MIN_MESSAGES", 4)
MEMORY_COLD_SESSION_MINUTES = env_int("MEMORY_COLD_SESSION_MINUTES", 10)
MEMORY_CONSOLIDATION_THRESHOLD = env_int("MEMORY_CONSOLIDATION_THRESHOLD", 10)
MEMORY_CONSOLIDATION_MAX_WORDS = env_int("MEMORY_CONSOLIDATION_MAX_WORDS", 500)
# Review of shared memory: the review_mode new group, collective and shard scopes start
# with ("off", "propagated" or "all"), and how many different groups must supply the same
# fact before a group's copy enters the collective memory without a person's approval.
MEMORY_REVIEW_MODE_SHARED = env_str("MEMORY_REVIEW_MODE_SHARED", "off")
# The key of the erasure tombstones' hash (HMAC-SHA256 of agent and user id); unset: the
# Django SECRET_KEY. Changing it makes every tombstone unmatched: set it once and keep it.
MEMORY_ERASURE_KEY = env_str("MEMORY_ERASURE_KEY", "")
if MEMORY_REVIEW_MODE_SHARED not in ("off", "propagated", "all"):
    raise ValueError("MEMORY_REVIEW_MODE_SHARED must be off, propagated or all")
MEMORY_COLLECTIVE_MIN_GROUPS = max(1, env_int("MEMORY_COLLECTIVE_MIN_GROUPS", 2))
# How long a review decision (approve, reject) can be undone; 0: never.
MEMORY_REVIEW_UNDO_SECONDS = max(0, env_int("MEMORY_REVIEW_UNDO_SECONDS", 600))
# How long after it finished a bulk action (delete, move, mark private) can be undone; 0: never.
MEMORY_BULK_UNDO_SECONDS = max(0, env_int("MEMORY_BULK_UNDO_SECONDS", 900))
# Memory is data: what the context does with instruction-flagged text ("mark": shown on
# an element with flag="instruction"; "withhold": left out; "review": held for a person
# at write). One value for every scope, or "own=mark,shared=review" (the default: a
# user's own scope, and groups, the collective and shards).
MEMORY_INSTRUCTION_POLICY = env_str("MEMORY_INSTRUCTION_POLICY", "own=mark,shared=review")
_POLICY_VALUES = {"mark", "withhold", "review"}
_policy_parts = [p.partition("=") for p in MEMORY_INSTRUCTION_POLICY.replace(" ", "").split(",")]
if not all(
    (v if sep else k) in _POLICY_VALUES and (not sep or k in ("own", "shared"))
    for k, sep, v in _policy_parts
):
    raise ValueError(
        "MEMORY_INSTRUCTION_POLICY must be mark, withhold or review, or own=...,shared=..."
    )
# Explicit forget ("forget what I said about X"): "review" holds a proposal to delete the
# matching observations of the user's own scope for a person; "apply" deletes them at once.
_forget_requests = env_str("MEMORY_FORGET_REQUESTS", "review")
if _forget_requests not in ("review", "apply"):
    raise ValueError("MEMORY_FORGET_REQUESTS must be review or apply")
MEMORY_FORGET_REQUESTS: Literal["review", "apply"] = (
    "apply" if _forget_requests == "apply" else "review"
)
# Consolidation by age: a scope whose oldest pending observation waited this many days is
# consolidated below its threshold. One number for every scope (0: off), or per kind:
# "individual=7,group=14,collective=30,shard=30"; a scope's consolidate_after_days wins.
MEMORY_CONSOLIDATE_AFTER_DAYS = env_str("MEMORY_CONSOLIDATE_AFTER_DAYS", "7")
ConsolidateAfterDays.parse(MEMORY_CONSOLIDATE_AFTER_DAYS)  # a bad value fails at start
# A consolidation run holds its scope's lease this long; a job "running" longer is
# taken over (its worker died). Both only bound recovery time: safety comes from the
# version check in the commit.
MEMORY_CONSOLIDATION_LEASE_SECONDS = env_int("MEMORY_CONSOLIDATION_LEASE_SECONDS", 300)
# Consolidation in chunks: each call's prompt at most this many (estimated) tokens; a
# pending set beyond it folds chunk after chunk into one version. 6000 leaves room for
# the answer in an 8k-context local model; a large-context model can take far more.
MEMORY_CONSOLIDATION_CHUNK_TOKENS = max(1000, env_int("MEMORY_CONSOLIDATION_CHUNK_TOKENS", 6000))
# A consolidation answer stating less than this share of the observations it absorbs
# is not committed (`streams.memory.answer_checks`); 0 turns the floor off.
MEMORY_FIDELITY_FLOOR = env_float("MEMORY_FIDELITY_FLOOR", 0.5)
# A running job renews its lease (and a formation its session's claim) every third of
# this; a job not renewed for this long is taken over (its worker died).
MEMORY_JOB_STALE_SECONDS = env_int("MEMORY_JOB_STALE_SECONDS", 30)
# Bulk actions by filter: at most this many observations per action (more: 422), applied
# by a `bulk` job in batches of MEMORY_BULK_BATCH (one transaction each).
MEMORY_BULK_MAX = env_int("MEMORY_BULK_MAX", 10_000)
MEMORY_BULK_BATCH = env_int("MEMORY_BULK_BATCH", 200)
# Ingest: one message's content at most this many characters (422 naming the message).
MEMORY_MESSAGE_MAX_CHARS = env_int("MEMORY_MESSAGE_MAX_CHARS", 32000)
# Requests per minute per API key (429 with Retry-After); 0 = no limit (the default).
MEMORY_API_RATE_LIMIT = env_int("MEMORY_API_RATE_LIMIT", 0)
# Request bodies over this many bytes take one of MEMORY_LARGE_REQUEST_SLOTS slots shared
# by the host's web processes, waiting up to MEMORY_LARGE_REQUEST_WAIT_SECONDS (then 503):
# big payloads take turns and leave the other cores to everyone else. 0 slots: no gate.
MEMORY_LARGE_REQUEST_BYTES = env_int("MEMORY_LARGE_REQUEST_BYTES", 65536)
MEMORY_LARGE_REQUEST_SLOTS = env_int("MEMORY_LARGE_REQUEST_SLOTS", 1)
MEMORY_LARGE_REQUEST_WAIT_SECONDS = env_int("MEMORY_LARGE_REQUEST_WAIT_SECONDS", 30)
# Context calls count an access of each observation they retrieve; the counts are
# summed per observation and written at most this many seconds later (0: each call
# writes its own, unawaited). A process killed in between loses that second's counts.
MEMORY_ACCESS_FLUSH_SECONDS = env_float("MEMORY_ACCESS_FLUSH_SECONDS", 1.0)
# Lifecycle: an expired observation is purged for good this many days after it expired
# (until then it stays in the log, marked expired, out of every context and search).
MEMORY_EXPIRED_KEEP_DAYS = env_int("MEMORY_EXPIRED_KEEP_DAYS", 7)
# The context log (what each context call gave the agent) keeps records this many days;
# 0 turns it off (`context_call_id` is then null). Written behind like access counts.
MEMORY_CONTEXT_LOG_DAYS = env_int("MEMORY_CONTEXT_LOG_DAYS", 7)
# Webhooks: a delivery waits this long for an answer; private and loopback URLs are
# refused unless MEMORY_WEBHOOK_ALLOW_PRIVATE (tests, single-host deployments).
MEMORY_WEBHOOK_TIMEOUT_SECONDS = env_float("MEMORY_WEBHOOK_TIMEOUT_SECONDS", 5.0)
# Delivery runs on threads of its own, each agent at most this many at once (issue 44).
MEMORY_WEBHOOK_CONNECT_TIMEOUT_SECONDS = env_float("MEMORY_WEBHOOK_CONNECT_TIMEOUT_SECONDS", 2.0)
MEMORY_WEBHOOK_THREADS = env_int("MEMORY_WEBHOOK_THREADS", 8)
MEMORY_WEBHOOK_AGENT_CONCURRENCY = env_int("MEMORY_WEBHOOK_AGENT_CONCURRENCY", 2)
MEMORY_WEBHOOK_ALLOW_PRIVATE = env_bool("MEMORY_WEBHOOK_ALLOW_PRIVATE", default=False)
# Embedded default (no broker): jobs run in this many background threads of the web
# process, at most MEMORY_INPROCESS_QUEUE waiting (more wait for the retry sweep).
# 0 runs them synchronously after the request (the test suite's mode).
MEMORY_INPROCESS_WORKERS = env_int("MEMORY_INPROCESS_WORKERS", 1)
MEMORY_INPROCESS_QUEUE = env_int("MEMORY_INPROCESS_QUEUE", 1000)
# "process": each pool thread runs its jobs in a child process at OS niceness
# MEMORY_INPROCESS_NICENESS (no GIL or core taken from requests); "thread": in the
# pool thread itself.
MEMORY_INPROCESS_ISOLATION = env_str("MEMORY_INPROCESS_ISOLATION", "process")
MEMORY_INPROCESS_NICENESS = env_int("MEMORY_INPROCESS_NICENESS", 19)
