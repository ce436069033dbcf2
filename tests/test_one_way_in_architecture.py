"""One way in, checked on the code (issue 37): no repository method stores memory text
that skipped the screen.

Memory text reaches the store only through repository methods (pymongo is imported in
`streams/store/` alone: `tests/test_architecture.py`). Each method that writes a text
field of memory calls `require_screened` on that text, which refuses anything but the
`ScreenedText` that `streams.guard.screening` alone makes. The syntax check below finds
every repository method that writes (a pymongo write, a write batch, the write-behind
queue) and names a text field of memory (a key or a parameter: content, consolidation,
pins, text, messages, the call logs' message fields); each one must call
`require_screened`, or be listed in `NOT_MEMORY_TEXT` with the reason. Planted
violations (a new method, a guard taken out, a `ScreenedText` made outside the screen)
show that the check sees them.
"""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest
from bson import ObjectId

from streams.core.documents import ConsolidationVersion, Observation
from streams.core.screened import ScreenedText, UnscreenedText
from streams.guard.screening import screened
from streams.store import MemoryStore

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "streams" / "store"
TEXT_FIELDS = frozenset(
    {
        "content",
        "consolidation",
        "pins",
        "text",
        "messages",
        "message",
        "user_message",
        "answer_preview",
    }
)
TEXT_PARAMS = TEXT_FIELDS | {"observations", "entry", "versions", "screened", "fields", "doc"}
WRITE_CALLS = frozenset(
    {
        "insert_one",
        "insert_many",
        "update_one",
        "update_many",
        "replace_one",
        "find_one_and_update",
        "find_one_and_replace",
        "bulk_write",
        "write_now",
    }
)
WRITE_NAMES = frozenset({"InsertOne", "UpdateOne", "UpdateMany", "ReplaceOne"})
# Methods the check finds that store no memory text, each with the reason.
NOT_MEMORY_TEXT: dict[str, str] = {
    "agents.py:AgentRepository.adjust_counters": "counters (a `messages` count)",
    "agents.py:AgentRepository.set_counters": "counters",
    "audit.py:AuditRepository.insert": "entries hold digests of memory text, never the text",
    "prompt_checks.py:PromptCheckRepository.insert": "an operator's prompt check, not memory",
    "prompt_experiments.py:PromptExperimentRepository.insert": (
        "a prompt experiment: a draft and model answers kept as evidence, never memory (its "
        "answers are shown only while their sources are visible)"
    ),
    "prompts.py:PromptRepository.insert": "a prompt template, not memory",
    "questions.py:QuestionRepository.insert": (
        "an operator's questions memory must answer, not memory (the answers pass the screen)"
    ),
    "usage.py:UsageRepository.top_replace": "counts",
    "webhooks.py:WebhookRepository.insert": "event bodies made from stored (screened) memory",
    "webhooks.py:WebhookRepository.record_attempt": "a delivery attempt's status",
    "webhooks.py:WebhookRepository.update": "a webhook's settings",
    "text_history.py:TextHistoryRepository.insert": "the text an observation held before",
    "privacy.py:PrivacyRepository.redact_versions": "replaces removed text, never adds it",
    "quoted.py:QuotedText.scrub": "replaces removed text in the call logs",
    "sessions.py:SessionRepository.forget_speaker": "deletes a person's messages",
    "sessions.py:SessionRepository.mark_formed": "flags on messages stored already",
    "sessions.py:SessionRepository.recount": "a buffer's counters",
    "rescans.py:RescanRepository.save_checkpoint": "a rescan's position and counts",
    "seeding.py:SeedingRepository.insert_one": (
        "the benchmarks' raw seeding; no service calls it (test_store_handles_architecture)"
    ),
}


def _names(node: ast.AST) -> set[str]:
    """String constants, attribute and parameter names a function mentions."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value.split(".")[0])
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)  # `scope.consolidation`, `o.content`
        elif isinstance(sub, ast.arg):
            found.add(sub.arg)
    return found


def _calls(node: ast.AST) -> set[str]:
    called: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Attribute):
                called.add(func.attr)
                if func.attr == "add" and isinstance(func.value, ast.Name):
                    called.add(f"{func.value.id}.add")  # writes.add, write_behind.add
            elif isinstance(func, ast.Name):
                called.add(func.id)
    return called


def text_writers(root: Path) -> dict[str, bool]:
    """Every repository method under `root` that writes and names a text field of memory
    -> whether it calls `require_screened`."""
    found: dict[str, bool] = {}
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
            for method in cls.body:
                if not isinstance(method, ast.FunctionDef):
                    continue
                calls = _calls(method)
                writes = calls & WRITE_CALLS or calls & WRITE_NAMES
                writes = writes or {"writes.add", "write_behind.add"} & calls
                params = {a.arg for a in method.args.args + method.args.kwonlyargs}
                texts = (_names(method) & TEXT_FIELDS) or (params & TEXT_PARAMS)
                if writes and texts:
                    key = f"{path.name}:{cls.name}.{method.name}"
                    found[key] = "require_screened" in calls
    return found


def unguarded(root: Path) -> list[str]:
    return sorted(
        name for name, guarded in text_writers(root).items()
        if not guarded and name not in NOT_MEMORY_TEXT
    )  # fmt: skip


def screened_made_outside_the_screen(root: Path) -> list[str]:
    """Files that make a `ScreenedText` other than the screen (and its definition)."""
    allowed = {root / "guard" / "screening.py", root / "core" / "screened.py"}
    bad = []
    for path in sorted(root.rglob("*.py")):
        if path in allowed:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ScreenedText":
                bad.append(str(path.relative_to(root)))
    return bad


def test_every_repository_method_that_stores_memory_text_requires_screened_text():
    writers = text_writers(STORE)
    guarded = sorted(name for name, ok in writers.items() if ok)
    # The text writes of memory, each guarded (a rename or a lost guard shows here).
    assert guarded == [
        "bulk.py:BulkRepository.move",
        "chat_calls.py:ChatCallRepository.insert",
        "consolidations.py:ConsolidationRepository.insert",
        "context_calls.py:ContextCallRepository.record",
        "exchange.py:ExchangeRepository.insert_versions",
        "observation_states.py:ReviewQueries.set_review_status",
        "observation_states.py:ReviewQueries.undo_decision",
        "observations.py:ObservationRepository.insert_many",
        "observations.py:ObservationRepository.update_fields",
        "rescans.py:RescanRepository.set_consolidation_text",
        "scopes.py:ScopeRepository.commit_consolidation",
        "scopes.py:ScopeRepository.insert",
        "scopes.py:ScopeRepository.set_pins",
        "scopes.py:ScopeRepository.update_fields",
        "sessions.py:SessionRepository.ingest",
        "sessions.py:SessionRepository.insert_messages",
    ]
    assert unguarded(STORE) == []
    stale = sorted(set(NOT_MEMORY_TEXT) - set(writers))
    assert stale == [], "NOT_MEMORY_TEXT names methods the check no longer finds"


def test_only_the_screen_makes_screened_text():
    assert screened_made_outside_the_screen(ROOT / "streams") == []


PLANTED_METHOD = """

class PlantedRepository:
    def __init__(self, db):
        self.collection = db["memory_observations"]

    def set_content(self, observation_id, content, *, session=None):
        self.collection.update_one(
            {"_id": observation_id}, {"$set": {"content": content}}, session=session
        )
"""


def test_a_planted_text_write_without_the_guard_fails_the_check(tmp_path):
    copy = tmp_path / "store"
    copy.mkdir()
    for path in STORE.glob("*.py"):
        (copy / path.name).write_text(path.read_text())
    (copy / "planted.py").write_text(PLANTED_METHOD)
    assert unguarded(copy) == ["planted.py:PlantedRepository.set_content"]

    # A guard taken out of a real method is seen too.
    (copy / "planted.py").unlink()
    versions = copy / "consolidations.py"
    source = versions.read_text()
    guard = 'require_screened(entry.text, what="consolidation text")'
    assert source.count(guard) == 1
    versions.write_text(source.replace(guard, "pass"))
    assert unguarded(copy) == ["consolidations.py:ConsolidationRepository.insert"]


def test_a_planted_screened_text_outside_the_screen_fails_the_check(tmp_path):
    root = tmp_path / "streams"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "planted.py").write_text(
        "from streams.core.screened import ScreenedText\nTEXT = ScreenedText('sk-...')\n"
    )
    assert screened_made_outside_the_screen(root) == ["memory/planted.py"]


def test_the_repositories_refuse_text_that_skipped_the_screen(store: MemoryStore):
    """At run time too: a plain `str` never reaches the collection."""
    scope_id = ObjectId()
    plain = "Deploy with sk-proj-abcdefghijklmnopqrstuvwx123."
    now = datetime.now(UTC)
    attempts = [
        lambda: store.scopes.set_pins(scope_id, [plain]),
        lambda: store.scopes.update_fields(scope_id, {"consolidation": plain}),
        lambda: store.scopes.commit_consolidation(
            scope_id, expected_version=0, text=plain, absorbed_ids=[], actor=None, now=now
        ),
        lambda: store.observations.insert_many(
            [Observation(scope_id=str(scope_id), agent_id="a", content=plain)]
        ),
        lambda: store.observations.update_fields(ObjectId(), {"content": plain}, scope_id=scope_id),
        lambda: store.consolidations.insert(
            ConsolidationVersion(
                scope_id=str(scope_id), agent_id="a", version=1, text=plain, trigger="t"
            )
        ),
        lambda: store.context_calls.record({"_id": ObjectId(), "message": plain}),
        lambda: store.chat_calls.insert({"_id": ObjectId(), "user_message": plain}),
    ]
    for attempt in attempts:
        with pytest.raises(UnscreenedText):
            attempt()
    stored = screened(plain)
    assert isinstance(stored, ScreenedText) and "sk-proj" not in stored
    assert store.scopes.set_pins(scope_id, [stored]) is False  # passes the guard; no scope
