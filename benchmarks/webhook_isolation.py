"""One agent's slow webhook receivers against another agent's deliveries and the sweeps
(issue 44), before (each pass delivers inline, in the periodic thread) and after (the
pass claims and hands deliveries to the pool, each agent capped), in one run.

Loopback only, bounded: TICKS periodic ticks a second apart per case; each tick adds an
event for agent B's one receiver and, under load, for agent A's 30 receivers, which each
take SLOW_SECONDS to answer. Per tick the periodic thread runs the delivery pass and then
the job-recovery sweep; the figures: B's delivery latency (entry written -> received),
p95, and the recovery sweep's lag (tick start -> the sweep runs), worst."""

from __future__ import annotations

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_RECEIVERS = 30
SLOW_SECONDS = float(os.environ.get("BENCH_SLOW_SECONDS", "1"))
TICKS = int(os.environ.get("BENCH_TICKS", "3"))


class _Receivers:
    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path.startswith("/slow/"):
                    time.sleep(SLOW_SECONDS)
                else:
                    receivers.arrived[body.decode()] = time.monotonic()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"


def _case(store, receivers: _Receivers, *, pooled: bool, loaded: bool) -> list[str]:
    from benchmarks.harness import percentile
    from memory_admin.integrations import webhooks
    from streams.records.webhooks import webhook_create, webhook_outbox_add

    store.seeding.delete_all("webhooks")
    store.seeding.delete_all("webhook_deliveries")
    from streams.store.webhooks import forget_cached

    forget_cached(store.name)
    webhooks._pool = None
    agent_a, agent_b = f"a-{time.monotonic_ns()}", f"b-{time.monotonic_ns()}"

    def hook(agent_id: str, url: str) -> None:
        webhook_create(
            store=store,
            agent_id=agent_id,
            url=url,
            events=["observation.created"],
            actor="bench",
            allow_private=True,
        )

    if loaded:
        for n in range(SLOW_RECEIVERS):
            hook(agent_a, f"{receivers.base}/slow/{n}")
    hook(agent_b, f"{receivers.base}/fast")
    written: dict[str, float] = {}
    lags = []
    for tick in range(TICKS):
        began = time.monotonic()
        if loaded:
            webhook_outbox_add(store=store, agent_id=agent_a, event="observation.created",
                               objects=[(f"observation:a{tick}", {"id": f"a{tick}"})],
                               session=None)  # fmt: skip
        key = f"b{tick}-{agent_b}"
        webhook_outbox_add(store=store, agent_id=agent_b, event="observation.created",
                           objects=[(f"observation:{key}", {"k": key})], session=None)  # fmt: skip
        written[key] = time.monotonic()
        (webhooks.dispatch_due if pooled else webhooks.deliver_due)(store)
        lags.append(time.monotonic() - began)  # the recovery sweep runs now
        time.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not all(
        any(k in body for body in receivers.arrived) for k in written
    ):
        (webhooks.dispatch_due if pooled else webhooks.deliver_due)(store)
        time.sleep(0.2)
    latencies = []
    for key, at in written.items():
        got = [t for body, t in receivers.arrived.items() if key in body]
        latencies.append((got[0] - at) if got else float("inf"))
    if webhooks._pool is not None:
        webhooks._pool.executor.shutdown(wait=False, cancel_futures=True)
    return [f"{percentile(latencies, 95) * 1000:.0f}", f"{max(lags) * 1000:.0f}"]


def main() -> None:
    from benchmarks.harness import embedded_server, print_table

    with embedded_server() as server:
        os.environ.update(
            MONGODB_URI=server.uri,
            MONGODB_DB=f"bench_hooks_{int(time.time())}",
            MEMORY_WEBHOOK_ALLOW_PRIVATE="true",
            MEMORY_WEBHOOK_TIMEOUT_SECONDS="5",
        )
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")
        import django

        django.setup()
        from memory_admin.stores import get_store

        store = get_store()
        receivers = _Receivers()
        rows = []
        for pooled in (False, True):
            for loaded in (False, True):
                figures = _case(store, receivers, pooled=pooled, loaded=loaded)
                rows.append([
                    "after: pool, per-agent cap" if pooled else "before: inline in the sweep",
                    f"{SLOW_RECEIVERS} slow receivers of agent A" if loaded else "quiet",
                    *figures,
                ])  # fmt: skip
    print_table(
        f"Webhook isolation: {TICKS} ticks a second apart; agent A's {SLOW_RECEIVERS} "
        f"receivers answer after {SLOW_SECONDS:g} s; agent B has one fast receiver",
        ["delivery", "load", "B delivery p95 ms", "recovery sweep lag, worst ms"],
        rows,
    )


if __name__ == "__main__":
    main()
