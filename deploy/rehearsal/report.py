"""What the rehearsal promised callers, checked through the API, and its table."""

from __future__ import annotations

import argparse
import http.client
import json
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

FAILED = {0, 500, 502, 503, 504}


class Api:
    """A small JSON client on the standard library (a new connection per call)."""

    def __init__(self, base: str, key: str) -> None:
        url = urllib.parse.urlsplit(base)
        self.host, self.port, self.prefix, self.key = (
            url.hostname or "",
            url.port or 80,
            url.path,
            key,
        )

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=15)
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        try:
            conn.request(
                method, self.prefix + path, None if body is None else json.dumps(body), headers
            )
            answer = conn.getresponse()
            raw = answer.read()
            return answer.status, json.loads(raw) if raw else None
        except (OSError, http.client.HTTPException, ValueError):
            return 0, None
        finally:
            conn.close()

    def wait_until_up(self, within: float) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.call("GET", "/health")[0] == 200:
                return
            time.sleep(0.5)
        raise SystemExit(f"{self.host}:{self.port} answered no health check within {within:.0f}s")

    def pages(self, path: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = ""
        while True:
            sep = "&" if "?" in path else "?"
            status, page = self.call("GET", f"{path}{sep}limit=200{cursor}")
            if status != 200:
                raise SystemExit(f"GET {path}: {status} {page}")
            items += page["items"]
            if not page.get("next_cursor"):
                return items
            cursor = f"&cursor={page['next_cursor']}"


def events(folder: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                out.append(json.loads(line))
    return out


def verify(api: Api, folder: Path, *, settle: float) -> dict[str, Any]:
    """Acknowledged writes lost or doubled, jobs that never ended, removed text served."""
    seen = events(folder)
    acked = {e["marker"]: e["id"] for e in seen if e["e"] == "ack"}
    deleted = {e["marker"] for e in seen if e["e"] == "deleted"}
    jobs = {e["id"] for e in seen if e["e"] == "job"}
    # A failed job is not done with: the task's retry or the recovery sweep runs it again
    # (a store write conflict under load, `Busy`, is one attempt's failure). Only a job
    # still failed when the settling time is over counts as failed.
    waiting, deadline, statuses = set(jobs), time.monotonic() + settle, {}
    bodies: dict[str, Any] = {}
    retried: set[str] = set()
    while waiting and time.monotonic() < deadline:
        for job in list(waiting):
            status, body = api.call("GET", f"/jobs/{job}")
            if status == 200:
                statuses[job], bodies[job] = body["status"], body
                if body["status"] == "failed":
                    retried.add(job)
                if body["status"] == "succeeded":
                    waiting.discard(job)
        if waiting - {j for j, s in statuses.items() if s == "failed"}:
            time.sleep(2)
        elif waiting:
            time.sleep(5)  # only failed ones left: their retry is seconds to a minute away
    stored: list[dict[str, Any]] = []
    for scope in {e["id"] for e in seen if e["e"] == "scope"}:
        stored += api.pages(f"/scopes/{scope}/observations?status=all&include_deleted=true")
    ids = {o["id"] for o in stored}
    live = Counter()
    for o in stored:
        if not o["deleted"] and o["content"]:
            for marker in _markers(o["content"]):
                live[marker] += 1
    lost = [m for m, i in acked.items() if i not in ids or (m not in deleted and live[m] == 0)]
    doubled = [m for m in acked if live[m] > (0 if m in deleted else 1)]
    return {
        "acked": len(acked),
        "deleted": len(deleted),
        "lost": lost,
        "duplicated": doubled,
        "jobs": len(jobs),
        "stuck": {j: bodies.get(j, "unknown") for j in waiting if statuses.get(j) != "failed"},
        "failed_jobs": sum(1 for s in statuses.values() if s == "failed"),
        "failed_then_succeeded": len(retried - waiting),
        "failures": sorted({str(bodies[j].get("error"))[:200] for j in retried if j in bodies}),
        "removed_seen": [e for e in seen if e["e"] == "removed_seen"],
    }


def _markers(text: str) -> list[str]:
    return [w.rstrip(":") for w in text.split() if w.startswith("rh") and len(w.rstrip(":")) == 14]


def outages(seen: list[dict[str, Any]], faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per fault: failed requests from the kill to the next fault, and the time from the kill
    until the last of them ended (after that, every request was answered)."""
    reqs = sorted((e for e in seen if e["e"] == "req"), key=lambda e: e["t0"])
    rows = []
    for n, fault in enumerate(faults):
        end = faults[n + 1]["killed"] if n + 1 < len(faults) else float("inf")
        window = [e for e in reqs if fault["killed"] <= e["t0"] < end]
        failed = [e for e in window if e["status"] in FAILED]
        rows.append(
            {
                "host": fault["host"],
                "down_s": fault["restarted"] - fault["killed"],
                "back_s": fault["back"] - fault["killed"],
                "requests": len(window),
                "failed": len(failed),
                "until_2xx_s": max((e["t1"] for e in failed), default=fault["killed"])
                - fault["killed"],
            }
        )
    return rows


def _served(log: Path) -> int:
    """Requests a web host answered, from gunicorn's access log lines."""
    if not log.is_file():
        return 0
    return sum(
        1
        for line in log.read_text(errors="replace").splitlines()
        if '" HTTP/1.1" ' in line or 'HTTP/1.1" ' in line
    )


def report(
    folder: Path,
    faults: list[dict[str, Any]],
    checked: dict[str, Any],
    limits: list[dict[str, Any]],
    started: float,
    args: argparse.Namespace,
    load: float,
) -> str:
    seen = events(folder)
    reqs = [e for e in seen if e["e"] == "req"]
    by_op = Counter(e["op"] for e in reqs)
    hosts = {name: _served(folder.parent / "logs" / f"{name}.log") for name in ("web1", "web2")}
    limited = sum(1 for e in reqs if e["status"] == 429)
    lines = [
        f"# Rehearsal: {args.clients} clients, {args.seconds:.0f} s, load average {load:.1f}",
        "",
        f"Requests: {len(reqs)} ({', '.join(f'{k} {v}' for k, v in sorted(by_op.items()))}); "
        f"served by {', '.join(f'{h} {c}' for h, c in sorted(hosts.items()))}; "
        f"429 during the load: {limited}.",
        "",
        "| fault | down s | requests after the kill | failed | until every request 2xx, s |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in outages(seen, faults):
        lines.append(
            f"| kill {row['host']} | {row['down_s']:.1f} | {row['requests']} | "
            f"{row['failed']} | {row['until_2xx_s']:.1f} |"
        )
    lines += ["", *_promises(checked)]
    if checked.get("failures"):
        lines += ["", "Errors of jobs that failed an attempt: " + "; ".join(checked["failures"])]
    if limits:
        lines += ["", *_limits(limits)]
    lines.append("")
    lines.append(
        f"lost {len(checked['lost'])}, duplicated {len(checked['duplicated'])}, "
        f"stuck {len(checked['stuck'])}"
    )
    return "\n".join(lines) + "\n"


def _promises(checked: dict[str, Any]) -> list[str]:
    return [
        "| promise | result |",
        "|---|---|",
        f"| acknowledged writes | {checked['acked']} ({checked['deleted']} deleted after) |",
        f"| lost | {len(checked['lost'])} |",
        f"| duplicated | {len(checked['duplicated'])} |",
        f"| jobs (formation) | {checked['jobs']}, failed {checked['failed_jobs']}, "
        f"stuck {len(checked['stuck'])}, failed once and then succeeded "
        f"{checked.get('failed_then_succeeded', 0)} |",
        f"| context/search answers holding text deleted before they were asked | "
        f"{len(checked['removed_seen'])} |",
    ]


def _limits(limits: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"| rate limit: one key at {limits[0]['limit']}/min, sent to both web hosts "
        "directly (2 hosts x 2 workers) | sent | allowed in one minute | 429 | other |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in limits:
        lines.append(
            f"| {row['phase']} | {row['sent']} | {row['allowed']} | {row['limited']} | "
            f"{row['other']} |"
        )
    return lines
