"""The client process of `benchmarks single_add`: reads its orders as JSON on stdin, adds
each content with one POST, alternating between a new connection for the request and
one keep-alive connection (so both modes see the same load), and prints each mode's
latencies as JSON. Only the standard library: it starts fast and stays small."""

from __future__ import annotations

import http.client
import json
import sys
import time


def main() -> None:
    orders = json.load(sys.stdin)
    port, scopes = orders["port"], orders["scope_ids"]
    headers = {"Authorization": f"Bearer {orders['api_key']}", "Content-Type": "application/json"}
    if orders.get("batch"):
        json.dump({"latencies": {"batch": [_batch(port, scopes[0], headers, orders)]}}, sys.stdout)
        return
    modes = orders.get("modes", ["new", "keep-alive"])
    kept: http.client.HTTPConnection | None = None
    latencies: dict[str, list[float]] = {mode: [] for mode in modes}
    for n, content in enumerate(orders["contents"]):
        mode = modes[n % len(modes)]
        path = f"/api/v1/scopes/{scopes[(n // len(modes)) % len(scopes)]}/observations"
        body = json.dumps({"content": content})
        t0 = time.perf_counter()
        if mode == "new":
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        else:
            kept = kept or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn = kept
        conn.request("POST", path, body, headers)
        response = conn.getresponse()
        answer = response.read()
        if mode == "new":
            conn.close()
        latencies[mode].append(time.perf_counter() - t0)
        if response.status != 201:
            sys.exit(f"add {n}: {response.status} {answer[:300]!r}")
    if kept is not None:
        kept.close()
    json.dump({"latencies": latencies}, sys.stdout)


def _batch(port: int, scope_id: str, headers: dict[str, str], orders: dict) -> float:
    """All contents in one request (`{"items": [...]}`), on a new connection."""
    items = [
        {"client_id": f"{orders['batch']}-{n}", "content": content}
        for n, content in enumerate(orders["contents"])
    ]
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request(
        "POST", f"/api/v1/scopes/{scope_id}/observations", json.dumps({"items": items}), headers
    )
    response = conn.getresponse()
    answer = response.read()
    conn.close()
    seconds = time.perf_counter() - t0
    if response.status != 201:
        sys.exit(f"batch: {response.status} {answer[:300]!r}")
    return seconds


if __name__ == "__main__":
    main()
