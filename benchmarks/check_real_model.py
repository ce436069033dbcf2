"""`make check-real-model`: what holds when a real model answers (issue 39, item 5).

A short set runs through formation, consolidation, propagation and a contradiction
against the OpenAI-compatible server the settings name (`OPENAI_BASE_URL`,
`OPENAI_API_KEY`, `MEMORY_LLM_MODEL_FAST` / `_SLOW`, the per-task timeouts), in a
throwaway store (a fresh embedded store in a temporary directory, removed after): the
first sessions of a LoCoMo dev conversation and a support conversation built from the
demo's lines, in which a team's standup moves from Mondays to Tuesdays. Then it prints:

- the server's terms as negotiated (`response_format` mode, `temperature`, warnings);
- per task: calls, what was sent (max_tokens, temperature), the slowest call against its
  timeout, the calls cut at max_tokens or timed out;
- what the checks refused, per shape (empty extractions, dropped items, refused
  consolidations by check, rejected contradiction pairs, parse failures and repairs);
- what held: every stored observation in a scope the prompts listed, no committed
  version that the answer checks refuse, the limits kept (a `max_tokens` on every call,
  no answer past it, no call past its timeout);
- the end-to-end quality figures (`benchmarks.end_to_end`) on the LoCoMo questions
  whose evidence the set holds.

It needs no model weights: bring any server (docs/real-model.md shows llama.cpp's,
Ollama and vLLM). Exit status 1 when something did not hold.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bson import ObjectId

from benchmarks.end_to_end import AGENT, LOCOMO, questions_for, score_pipeline
from benchmarks.pipeline import Pipeline, Session, Turn, locomo_sessions
from streams.llm.negotiation import terms_for
from streams.llm.port import LLMError, LLMRequest, LLMResult
from streams.memory.answer_checks import AnswerRefused, consolidation_answer_check
from streams.prompts.defaults import CONSOLIDATION
from streams.store import MemoryStore

TEAM = {"id": "eden-team", "name": "Eden Team"}
DEMO = [  # Gene's support conversation, from the demo's lines (memory_admin/demo/data.py)
    [
        "Please give me answers as short numbered steps.",
        "I'm in the Eden Team and I manage the billing settings for our account.",
        "I use the desktop app on Linux, not the web version.",
        "The Eden Team is migrating its services to Kubernetes this quarter.",
        "The Eden Team's standup is on Mondays at 10:00.",
        "We're on the Pro plan; it renews in March.",
    ],
    [
        "From next week the Eden Team's standup moves to Tuesdays at 10:00.",
        "The Eden Team's on-call rotation changes every Wednesday.",
        "Desktop app 4.2 crashes on Linux with Wayland for me.",
        "You can talk to me informally, no formal tone.",
    ],
]


def demo_sessions() -> list[Session]:
    start = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    sessions = []
    for n, lines in enumerate(DEMO, start=1):
        at = start + timedelta(days=7 * (n - 1))
        turns = [Turn(f"demo-s{n}-{i}", "gene", "Gene", text, at) for i, text in enumerate(lines)]
        sessions.append(Session(f"demo-s{n}", turns, groups=[TEAM]))
    return sessions


@dataclass
class Call:
    task: str
    sent: dict[str, Any]
    seconds: float
    timeout: float
    completion_tokens: int = 0
    failure: str | None = None


@dataclass
class Recorder:
    """The provider, each call recorded with what was sent and how long it took."""

    inner: Any
    calls: list[Call] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, request: LLMRequest) -> LLMResult:
        started = time.monotonic()
        try:
            result = self.inner.complete(request)
        except LLMError as exc:
            message = str(exc)
            failure = (
                "cut"
                if "max_tokens" in message
                else "timeout"
                if "timed out" in message
                else "error"
            )
            self._record(request, started, 0, failure)
            raise
        self._record(request, started, result.completion_tokens)
        return result

    def _record(
        self, request: LLMRequest, started: float, tokens: int, failure: str | None = None
    ) -> None:
        timeout = float(getattr(self.inner, "timeout_for", lambda _: 0.0)(request.task))
        elapsed = time.monotonic() - started
        self.calls.append(
            Call(request.task, self._sent(request), elapsed, timeout, tokens, failure)
        )

    def _sent(self, request: LLMRequest) -> dict[str, Any]:
        options = getattr(self.inner, "options_for", None)
        return options(request) if callable(options) else {"max_tokens": request.max_tokens}


def shape_counts(pipeline: Pipeline) -> Counter[str]:
    """What the checks refused, by shape, from the jobs' results and errors."""
    counts: Counter[str] = Counter()
    for o in pipeline.outcomes:
        r = o.result
        if o.kind == "formation":
            counts["formation: observations stored"] += int(r.get("observations", 0) or 0)
            counts["formation: items dropped (unknown label, invented)"] += int(
                r.get("dropped", 0) or 0
            )
            if r.get("outcome") == "empty":
                counts["formation: empty (offline rules find facts)"] += 1
        elif o.kind == "consolidation":
            if o.status == "succeeded" and r.get("version"):
                counts["consolidation: versions committed"] += 1
            if r.get("outcome") == "refused":
                counts[f"consolidation: refused ({r.get('refused')})"] += 1
            counts["contradiction: pairs recorded"] += len(r.get("contradictions") or [])
            counts["contradiction: pairs rejected (no shared subject)"] += int(
                r.get("contradictions_rejected", 0) or 0
            )
            counts["contradiction: held for review"] += len(r.get("held_for_review") or [])
        elif o.kind == "propagation":
            counts["propagation: copies stored"] += int(r.get("copied", 0) or 0)
            counts["propagation: items dropped"] += int(r.get("dropped", 0) or 0)
            if r.get("outcome") == "empty":
                counts["propagation: empty (nothing shared of what was offered)"] += 1
        if o.status == "failed" and o.error and "max_tokens" in o.error:
            counts[f"{o.kind}: cut at max_tokens"] += 1
        elif o.status == "failed" and o.error and "timed out" in o.error:
            counts[f"{o.kind}: timed out"] += 1
        elif o.status == "failed" and o.error and "not valid JSON" in o.error:
            counts[f"{o.kind}: parse failure"] += 1
    return counts


def unlisted_scopes(pipeline: Pipeline, sessions: list[Session]) -> list[str]:
    """Scopes the set wrote to that no prompt offered (a label check that let one by)."""
    speakers = {t.user_id for s in sessions for t in s.turns}
    groups = {g["id"] for s in sessions for g in s.groups}
    wrong = []
    for scope in pipeline.scopes():
        if scope.scope_type == "individual" and scope.user_id not in speakers:
            wrong.append(f"individual:{scope.user_id}")
        elif scope.scope_type == "group" and scope.group_id not in groups:
            wrong.append(f"group:{scope.group_id}")
        elif scope.scope_type == "collective" and scope.name:
            wrong.append(f"shard:{scope.name}")  # the set offers no shard
    return wrong


def refused_versions(store: MemoryStore, pipeline: Pipeline) -> list[str]:
    """Committed versions that the answer checks would refuse now (should be none)."""
    found = []
    for scope in pipeline.scopes():
        previous = None
        for number in range(1, scope.consolidation_version + 1):
            version = store.consolidations.get(ObjectId(scope.id), number)
            if version is None:
                continue
            absorbed = store.observations.get_many(
                [ObjectId(i) for i in version.absorbed_observation_ids]
            )
            try:
                consolidation_answer_check(
                    answer=version.text,
                    text=version.text,
                    template=CONSOLIDATION,
                    previous=previous,
                    absorbed=[(o.id, o.content) for o in absorbed],
                )
            except AnswerRefused as exc:
                found.append(f"{scope.scope_type} v{number}: {exc.code}")
            previous = version.text
    return found


def run(
    sizes: list[int] | None = None,
    *,
    argv: list[str] | None = None,
    make_store: Callable[[str], MemoryStore] | None = None,
) -> int:
    del sizes
    parser = argparse.ArgumentParser(prog="python -m benchmarks check_real_model")
    parser.add_argument("--sessions", type=int, default=2, help="LoCoMo sessions (default 2)")
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument(
        "--attempts", type=int, default=3, help="runs of a failed job (the worker retries)"
    )
    args = parser.parse_args(argv or [])
    from django.conf import settings

    from memory_admin.integrations.llm import get_llm_provider

    if not settings.OPENAI_BASE_URL and not os.environ.get("OPENAI_BASE_URL"):
        print("check_real_model: set OPENAI_BASE_URL (and the model settings) first")
        return 2
    settings.MEMORY_LLM_PROVIDER = "openai"
    # A local server (llama.cpp, Ollama, vLLM) takes any key; the client needs one.
    settings.OPENAI_API_KEY = settings.OPENAI_API_KEY or "local"
    recorder = Recorder(get_llm_provider())
    path = LOCOMO / f"{args.conversation}.json"
    sessions = locomo_sessions(path, limit=args.sessions) + demo_sessions()
    if make_store is not None:
        return _check(make_store("check_real_model"), recorder, sessions, path, args)
    from pymongo import MongoClient

    from benchmarks.harness import embedded_server

    with embedded_server() as server:
        client: MongoClient[dict[str, Any]] = MongoClient(server.uri, tz_aware=True)
        try:
            return _check(MemoryStore(client, "check_real_model"), recorder, sessions, path, args)
        finally:
            client.close()


def _check(
    store: MemoryStore, recorder: Recorder, sessions: list[Session], path: Path, args: Any
) -> int:
    from django.conf import settings

    from benchmarks.check_real_model_report import print_report

    store.ensure_indexes()
    started = time.perf_counter()
    pipeline = Pipeline(
        store=store,
        llm=recorder,
        agent_id=AGENT,
        attempts=args.attempts,
    )
    for session in sessions:
        pipeline.ingest(session)
    pipeline.consolidate_all()
    locomo = [s for s in sessions if not s.id.startswith("demo")]
    speakers = {t.user_id: t.user_name for s in locomo for t in s.turns}
    quality = score_pipeline(
        store, questions_for(path, locomo), speakers, now=locomo[-1].turns[-1].at
    )
    terms = terms_for(settings.OPENAI_BASE_URL).as_dict()
    held = print_report(
        base_url=settings.OPENAI_BASE_URL,
        models=(settings.MEMORY_LLM_MODEL_FAST, settings.MEMORY_LLM_MODEL_SLOW),
        terms=terms,
        calls=recorder.calls,
        counts=shape_counts(pipeline),
        unlisted=unlisted_scopes(pipeline, sessions),
        refused=refused_versions(store, pipeline),
        quality=quality,
        seconds=time.perf_counter() - started,
        command=f"python -m benchmarks check_real_model --sessions {args.sessions} "
        f"--conversation {args.conversation} --attempts {args.attempts}",
    )
    sys.stdout.flush()
    return 0 if held else 1
