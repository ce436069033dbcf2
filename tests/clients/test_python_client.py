"""The Python client (`clients/python`, `memory_admin_client`) against the live server:
typed answers, pagination, the envelope as exceptions, safe retries, Retry-After."""

from __future__ import annotations

import inspect
import re
import socket
from typing import Any

import pytest
from django.core.cache import cache
from memory_admin_client import (
    API_VERSION,
    NO_RETRY,
    AsyncMemoryClient,
    Conflict,
    MemoryClient,
    NotFound,
    PermissionDenied,
    RateLimited,
    RetryPolicy,
    TransportError,
    Unauthorized,
    ValidationFailed,
    __version__,
    operations,
    operations_admin,
)
from memory_admin_client.models import Observation, Scope

from tests.clients import aio
from tests.clients.conftest import AGENT, AsyncDropAfterSend, DropAfterSend


def group_scope(memory: MemoryClient, group_id: str = "g-eden") -> Scope:
    return memory.create_group_scope(agent_id=AGENT, group_id=group_id, display_name="Eden")


def test_operations_answer_typed_models(memory: MemoryClient) -> None:
    assert memory.health().status == "ok"
    scope = group_scope(memory)
    assert isinstance(scope, Scope) and scope.scope_type == "group"
    added = memory.add_observation(scope_id=scope.id, content="The team ships Rust on Fridays")
    assert isinstance(added, Observation) and added.status == "pending"
    assert memory.get_observation(observation_id=added.id).content == added.content
    hits = memory.search(agent_id=AGENT, q="rust", group_id="g-eden")
    assert [hit.observation.id for hit in hits.items] == [added.id]
    edited = memory.update_observation(observation_id=added.id, private=True)
    assert edited.private is True
    ingest = memory.ingest_messages(
        agent_id=AGENT,
        session_id="s-1",
        user_id="u-gene",
        user_name="Gene",
        messages=[{"id": "m-1", "role": "user", "content": "I like tea"}],
    )
    assert ingest.accepted == 1 and ingest.session_id == "s-1"
    context = memory.get_context(
        agent_id=AGENT, user_id="u-gene", message="what do you remember?", groups=[{"id": "g-eden"}]
    )
    assert context.context.startswith("<MemoryContext")
    assert memory.delete_observation(observation_id=added.id) is None
    assert memory.get_observation(observation_id=added.id).deleted is True


def test_iterators_follow_every_page(memory: MemoryClient) -> None:
    scope = group_scope(memory)
    batch = memory.add_observations(
        scope_id=scope.id, items=[{"content": f"fact number {i} about tea"} for i in range(5)]
    )
    assert batch.created == 5 and all(item.client_id for item in batch.items)
    first = memory.list_observations(scope_id=scope.id, limit=2)
    assert len(first.items) == 2 and first.next_cursor
    seen = [o.id for o in memory.iter_observations(scope_id=scope.id, limit=2)]
    assert sorted(seen) == sorted(item.id for item in batch.items)
    assert [s.id for s in memory.iter_scopes(agent_id=AGENT, limit=1)] == [scope.id]


def test_every_4xx_keeps_the_envelopes_code_and_message(
    live_server: Any, memory: MemoryClient, make_key: Any
) -> None:
    with pytest.raises(NotFound) as missing:
        memory.get_scope(scope_id="0" * 24)
    assert missing.value.status_code == 404 and missing.value.code == "not_found"
    assert missing.value.message
    scope = group_scope(memory)
    with pytest.raises(ValidationFailed) as invalid:
        memory.add_observation(scope_id=scope.id, content="   ")
    assert invalid.value.code and invalid.value.details
    with pytest.raises(Conflict) as twice:
        group_scope(memory)
    assert twice.value.status_code == 409
    first = memory.add_observation(scope_id=scope.id, content="likes green tea", client_id="k1")
    with pytest.raises(Conflict) as reused:
        memory.add_observation(scope_id=scope.id, content="likes coffee", client_id="k1")
    assert reused.value.code == "client_id_reused"
    assert reused.value.details["observation_id"] == first.id
    stranger = MemoryClient(live_server.url, api_key="mem_not_a_key")
    with stranger, pytest.raises(Unauthorized) as unknown:
        stranger.get_scope(scope_id=scope.id)
    assert unknown.value.status_code == 401
    reader = MemoryClient(live_server.url, api_key=make_key(permissions=["read"]))
    with reader, pytest.raises(PermissionDenied) as denied:
        reader.add_observation(scope_id=scope.id, content="not allowed")
    assert denied.value.status_code == 403 and "write" in denied.value.message


def test_a_dropped_connection_on_an_add_is_retried_with_the_same_client_id(
    live_server: Any, api_key: str
) -> None:
    transport = DropAfterSend(drops=0)
    waits: list[float] = []
    with MemoryClient(
        live_server.url, api_key=api_key, transport=transport, sleep=waits.append
    ) as memory:
        scope = memory.create_group_scope(agent_id=AGENT, group_id="g-1")
        transport.drops = 1
        kept = memory.add_observation(scope_id=scope.id, content="The office moved to Lyon")
        stored = list(memory.iter_observations(scope_id=scope.id))
    adds = [
        b
        for method, path, b in transport.sent
        if method == "POST" and path.endswith("/observations")
    ]
    assert len(adds) == 2 and adds[0]["client_id"] == adds[1]["client_id"]
    assert [o.id for o in stored] == [kept.id]  # stored once
    assert len(waits) == 1


def test_a_dropped_connection_on_a_call_that_is_not_idempotent_is_not_sent_again(
    live_server: Any, api_key: str
) -> None:
    transport = DropAfterSend(drops=1)
    memory = MemoryClient(live_server.url, api_key=api_key, transport=transport)
    with memory, pytest.raises(TransportError):
        memory.create_group_scope(agent_id=AGENT, group_id="g-1")
    assert [method for method, _, _ in transport.sent] == ["POST"]


def test_a_429_waits_for_retry_after_then_succeeds(
    live_server: Any, api_key: str, settings: Any
) -> None:
    settings.MEMORY_API_RATE_LIMIT = 2
    cache.clear()
    waits: list[float] = []

    def minute_passes(seconds: float) -> None:
        waits.append(seconds)
        cache.clear()  # the rate window the server counts in ends

    with MemoryClient(live_server.url, api_key=api_key, sleep=minute_passes) as memory:
        for _ in range(2):
            memory.list_scopes(agent_id=AGENT)
        assert memory.list_scopes(agent_id=AGENT).items == []
    assert len(waits) == 1 and 1 <= waits[0] <= 60
    cache.clear()
    with MemoryClient(live_server.url, api_key=api_key, retry=NO_RETRY) as once:
        for _ in range(2):
            once.list_scopes(agent_id=AGENT)
        with pytest.raises(RateLimited) as limited:
            once.list_scopes(agent_id=AGENT)
    assert limited.value.code == "rate_limited" and limited.value.retry_after >= 1
    cache.clear()


def test_the_async_client_has_every_operation_and_retries_the_same_way(
    live_server: Any, api_key: str
) -> None:
    sync_ops = {n for n in dir(MemoryClient) if not n.startswith("_")}
    async_ops = {n for n in dir(AsyncMemoryClient) if not n.startswith("_")}
    assert sync_ops - {"__enter__", "__exit__"} == async_ops

    async def scenario() -> tuple[list[str], list[Any], str, str]:
        transport = AsyncDropAfterSend(drops=0)

        async def no_wait(_: float) -> None:
            return None

        async with AsyncMemoryClient(
            live_server.url, api_key=api_key, transport=transport, sleep=no_wait
        ) as memory:
            scope = await memory.create_group_scope(agent_id=AGENT, group_id="g-async")
            transport.drops = 1
            kept = await memory.add_observation(scope_id=scope.id, content="Async facts stay")
            ids = [o.id async for o in memory.iter_observations(scope_id=scope.id, limit=1)]
            adds = [b for verb, path, b in transport.sent if verb == "POST" and "/obs" in path]
            try:
                await memory.get_job(job_id="f" * 24)
            except NotFound as error:
                code = error.code
            return ids, adds, kept.id, code

    ids, adds, kept_id, code = aio.run(scenario())
    assert ids == [kept_id] and adds[0]["client_id"] == adds[1]["client_id"]
    assert code == "not_found"


def test_the_client_is_versioned_with_the_api(memory: MemoryClient) -> None:
    served = memory.request("GET", "/api/v1/openapi.json")
    assert API_VERSION == "v1" and __version__.split(".")[0] == served["info"]["version"]


def test_a_timeout_is_retried_for_a_read_and_not_for_a_create() -> None:
    """A server that accepts and never answers: the read is sent `attempts` times, then a
    TransportError; a create is sent once."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        memory = MemoryClient(
            url, api_key="k", timeout=0.3, retry=RetryPolicy(attempts=3), sleep=lambda _: None
        )
        with memory:
            with pytest.raises(TransportError, match="Timeout"):
                memory.get_scope(scope_id="0" * 24)
            reads = accepted(silent)
            with pytest.raises(TransportError):
                memory.create_group_scope(agent_id=AGENT, group_id="g-1")
            creates = accepted(silent)
    assert (reads, creates) == (3, 1)


def accepted(listener: socket.socket) -> int:
    """How many connections are waiting on the listener (each a request sent)."""
    listener.setblocking(False)
    count = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def builders() -> list[Any]:
    """Every function of the two operation modules that builds a `Call`."""
    found = []
    for module in (operations, operations_admin):
        for fn in vars(module).values():
            mine = callable(fn) and getattr(fn, "__module__", "") == module.__name__
            if mine and str(inspect.signature(fn).return_annotation).startswith("Call["):
                found.append(fn)
    return found


def dummy(annotation: str) -> Any:
    for start, value in (
        ("str", "x1"),
        ("int", 1),
        ("bool", True),
        ("list", []),
        ("Iterable", []),
        ("Mapping", {}),
    ):
        if annotation.startswith(start):
            return value
    raise AssertionError(f"no dummy for {annotation}")


def test_every_operation_the_api_serves_has_a_client_method(memory: MemoryClient) -> None:
    served = memory.request("GET", "/api/v1/openapi.json")["paths"]
    wanted = {(verb.upper(), path) for path, ops in served.items() for verb in ops}
    covered = set()
    for build in builders():
        params = inspect.signature(build).parameters.values()
        call = build(
            **{
                p.name: dummy(str(p.annotation))
                for p in params
                if p.default is inspect.Parameter.empty and p.kind == p.KEYWORD_ONLY
            }
        )
        assert hasattr(MemoryClient, build.__name__) and hasattr(AsyncMemoryClient, build.__name__)
        for verb, template in wanted:
            pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
            if verb == call.method and re.fullmatch(pattern, call.path):
                covered.add((verb, template))
    # The chat proxy is OpenAI-compatible: the `openai` package is its client.
    assert wanted - covered == {("POST", "/api/v1/agents/{agent_id}/chat/completions")}


def test_operators_tooling_through_the_client(
    live_server: Any, make_key: Any, settings: Any
) -> None:
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    with MemoryClient(live_server.url, api_key=make_key(agents=[])) as admin:  # an admin key
        scope = group_scope(admin)
        kept = admin.add_observation(scope_id=scope.id, content="Standup is at nine")
        edited = admin.update_observation(observation_id=kept.id, content="Standup is at ten")
        history = admin.observation_history(observation_id=kept.id)
        assert edited.content == "Standup is at ten"
        assert [item["content"] for item in history.items] == ["Standup is at nine"]
        dry = admin.bulk(agent_id=AGENT, filter={"scope_id": scope.id}, action="private")
        assert dry.matched == 1 and dry.job_id is None
        hook = admin.create_webhook(
            agent_id=AGENT, url="http://127.0.0.1:9/hook", events=["observation.created"]
        )
        assert hook.secret and [h.id for h in admin.iter_webhooks(agent_id=AGENT)] == [hook.id]
        assert admin.update_webhook(webhook_id=hook.id, active=False).active is False
        assert list(admin.iter_deliveries(webhook_id=hook.id)) == []
        admin.delete_webhook(webhook_id=hook.id)
        with pytest.raises(NotFound):
            admin.update_webhook(webhook_id=hook.id, active=True)
        exported = admin.export_scope(scope_id=scope.id)
        assert exported.model_dump()
        assert admin.list_prompt_checks(agent_id=AGENT).items == []
        assert admin.usage(agent_id=AGENT).model_dump()
        assert admin.retrieval_health(agent_id=AGENT, days=1).model_dump()
        assert admin.get_agent(agent_id=AGENT).memory_tool == "off"
        turned = admin.update_agent(agent_id=AGENT, memory_tool="search_memory")
        assert turned.memory_tool == "search_memory" and turned.id == AGENT
        assert admin.get_agent(agent_id=AGENT).memory_tool == "search_memory"
