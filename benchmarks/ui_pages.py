"""UI page renders at scale: the scope browser and scope detail (and the dashboard),
view + template, timed in-process, with the store commands each render sends.

Each size seeds a fresh database (`seed`: individual scopes holding the observations;
no search index, the pages do not search), then gives one scope in the middle a
consolidation history and pending observations, as an operator would open it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from bson import ObjectId
from django.conf import settings
from django.test import RequestFactory
from django.urls import resolve

from benchmarks.harness import CommandCounter, embedded_server, print_row, print_table, summary_ms
from benchmarks.seed import seed
from streams.memory.consolidation import consolidation_edit
from streams.memory.observations import observation_add
from streams.store import MemoryStore
from streams.store.client import close_clients, get_client

SIZES = [(1_000, 10_000), (100_000, 1_000_000)]  # (scopes, observations)
CALLS = 50
AGENT = "bench-agent"


class BenchUser:
    """An authenticated superuser (admin role) without the auth database."""

    is_authenticated = True
    is_active = True
    is_superuser = True
    pk = 1

    def get_username(self) -> str:
        return "bench"


def pages(scope_id: str, middle_user: str) -> dict[str, tuple[str, dict[str, str]]]:
    """label -> (path, extra headers)."""
    htmx = {"HX-Request": "true"}
    browse = f"/scopes/?agent={AGENT}"
    return {
        "scope browser": (browse, {}),
        "scope browser, type filter": (f"{browse}&type=individual", {}),
        "scope browser, user filter": (f"{browse}&user={middle_user}", {}),
        "scope browser, name text (rare)": (f"{browse}&q={middle_user}", {}),
        "scope browser, consolidation text (htmx)": (
            f"{browse}&q=lisbon&within=consolidation",
            htmx,
        ),
        "scope browser, oldest first": (f"{browse}&sort=oldest", {}),
        "scope detail": (f"/scopes/{scope_id}/", {}),
        "scope detail, log pending (htmx)": (f"/scopes/{scope_id}/?status=pending", htmx),
        "scope detail, log text (htmx)": (f"/scopes/{scope_id}/?text=tea", htmx),
        "consolidation diff": (f"/scopes/{scope_id}/consolidation/compare/?a=1&b=2", {}),
        "dashboard": ("/", {}),
    }


def render(factory: RequestFactory, path: str, headers: dict[str, str]) -> Any:
    request = factory.get(path, headers=headers)
    request.user = BenchUser()  # type: ignore[assignment]  # stands in for User, duck-typed
    match = resolve(request.path_info)
    request.resolver_match = match
    response = match.func(request, *match.args, **match.kwargs)
    assert response.status_code == 200, (path, response.status_code)
    return response


def _prepare(store: MemoryStore, scopes: int) -> tuple[str, str]:
    """A scope in the middle with three versions and 12 pending observations."""
    seq = max(1, scopes // 2)
    doc = store.seeding.find_one("scopes", {"agent_id": AGENT, "seq": seq})
    assert doc is not None
    scope = store.scopes.get(doc["_id"])
    assert scope is not None
    for version, text in enumerate(
        ("Likes tea.", "Likes green tea; lives in Lisbon.", "Likes green tea; moved to Porto."),
    ):
        scope = store.scopes.get(ObjectId(scope.id))
        assert scope is not None
        consolidation_edit(
            store=store, scope=scope, text=text, expected_version=version, actor="bench"
        )
    scope = store.scopes.get(ObjectId(scope.id))
    assert scope is not None
    for i in range(12):
        observation_add(store=store, scope=scope, content=f"Pending observation {i} about tea.")
    return scope.id, scope.user_id or ""


def measure(call: Callable[[], Any], counter: CommandCounter) -> tuple[list[float], float]:
    """CALLS timed calls after a warm-up, and the store commands each sent on average."""
    call()  # warm templates and connections
    samples: list[float] = []
    counter.reset()
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples, counter.count / CALLS


def seeded_store(client: Any, db: str, scopes: int, observations: int) -> MemoryStore:
    """The benchmark database, seeded on first use (kept between runs: seeding is slow)."""
    store = MemoryStore(client, db)
    if store.agents.get(AGENT) is None:
        seconds = seed(
            store, agent_id=AGENT, scopes=scopes, observations=observations, search_index=False
        )
        print(f"seeded {scopes:,} scopes, {observations:,} observations in {seconds:.0f} s")
    return store


def run(sizes: list[int] | None = None) -> None:
    """`sizes` (observation counts) picks among SIZES; each keeps 10 observations per scope."""
    chosen = [(max(1, n // 10), n) for n in sizes] if sizes else SIZES
    rows: list[list[object]] = []
    factory = RequestFactory()
    with embedded_server() as server:
        counter = CommandCounter()
        close_clients()
        client = get_client(server.uri, event_listeners=[counter])
        settings.MONGODB_URI = server.uri
        for scopes, observations in chosen:
            db = f"bench_ui_{observations}"
            settings.MONGODB_DB = db
            store = seeded_store(client, db, scopes, observations)
            scope_id, user = _prepare(store, scopes)
            for label, (path, headers) in pages(scope_id, user).items():
                samples, commands = measure(partial(render, factory, path, headers), counter)
                p50, p95, mean = summary_ms(samples)
                rows.append(
                    [
                        f"{scopes:,}",
                        f"{observations:,}",
                        label,
                        CALLS,
                        f"{p50:.1f}",
                        f"{p95:.1f}",
                        f"{mean:.1f}",
                        f"{commands:g}",
                    ]
                )
                print_row(rows[-1])
        close_clients()
    print_table(
        "UI page renders (view + template, in-process) on the embedded store, 2 cores",
        [
            "scopes",
            "observations",
            "page",
            "renders",
            "p50 ms",
            "p95 ms",
            "mean ms",
            "store commands/render",
        ],
        rows,
    )
