"""One rehearsal client, in its own process: a user with a group, sending a mixed load.

Run by deploy/rehearsal/rehearse.py, 16 of them at once, through nginx. Standard library
only, so a client costs the hosts nothing they would not pay for a real caller.

Every write carries a key of its own (a `client_id` for adds, message ids for ingest) and
is retried with that same key until it is acknowledged (a 2xx) or the run ends, as a
careful caller would. Each line of the output file is one event (JSON):

- `{"e": "req", "op", "t0", "t1", "status"}`: every request and its answer;
- `{"e": "ack", "kind": "add", "id", "marker"}`: an acknowledged observation;
- `{"e": "deleted", "id", "marker", "t"}`: an acknowledged delete;
- `{"e": "removed_seen", "op", "marker", "t0", "held"}`: an answer, asked after the
  delete was acknowledged, that still held the deleted text;
- `{"e": "scope", "id"}`: the client's group scope, where its adds go;
- `{"e": "job", "id"}`: a job id an answer named (formation), checked for being stuck.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import time
import urllib.parse
import uuid
from typing import Any

WORDS = (  # noqa: SIM905 (a word list reads better as prose)
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kelp lantern meadow "
    "nectar orchid pepper quartz raven saffron thistle umber velvet willow yarrow zephyr "
    "anchor bramble canyon dune estuary falcon glacier heron island jasmine kestrel lagoon "
    "marble nutmeg olive pebble quill reef sierra tundra urchin violet walnut xenon yew zinc"
).split()
RETRYABLE = {0, 429, 502, 503, 504}


class Api:
    """A keep-alive connection to nginx, reopened after any failure."""

    def __init__(self, base: str, key: str, out: Any) -> None:
        url = urllib.parse.urlsplit(base)
        self.host, self.port, self.prefix = url.hostname or "", url.port or 80, url.path
        self.key, self.out = key, out
        self.conn: http.client.HTTPConnection | None = None

    def call(self, op: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, parsed body); status 0 when the connection failed."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        t0 = time.time()
        status, parsed = 0, None
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=15)
            self.conn.request(method, self.prefix + path, body=data, headers=headers)
            answer = self.conn.getresponse()
            raw = answer.read()
            status = answer.status
            if raw:
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
            if answer.getheader("Connection", "").lower() == "close":
                self._drop()
        except (OSError, http.client.HTTPException):
            self._drop()
        self.emit(e="req", op=op, t0=t0, t1=time.time(), status=status)
        return status, parsed

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def emit(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")


class Client:
    def __init__(self, api: Api, agent: str, n: int, deadline: float) -> None:
        self.api, self.agent, self.deadline = api, agent, deadline
        self.user, self.group = f"rh-u{n}", f"rh-g{n}"
        self.rng = random.Random(n)
        self.scope_id = ""
        self.live: list[tuple[str, str]] = []  # (observation id, marker)
        self.removed: list[tuple[str, float]] = []  # (marker, acknowledged at)
        self.seq = 0

    def text(self, marker: str) -> str:
        words = " ".join(self.rng.sample(WORDS, 7))
        return f"Rehearsal note {marker}: {self.user} keeps {words} in mind."

    def until_acked(self, op: str, method: str, path: str, body: Any) -> tuple[int, Any]:
        """Retry a keyed write until a non-retryable answer or the deadline (plus grace)."""
        while True:
            status, parsed = self.api.call(op, method, path, body)
            if status not in RETRYABLE or time.time() > self.deadline + 30:
                return status, parsed
            time.sleep(0.3)

    def set_up(self) -> None:
        a = self.agent
        body = {"scope_type": "group", "group_id": self.group, "display_name": self.group}
        self.until_acked("set_up", "POST", f"/agents/{a}/scopes", body)
        path = f"/agents/{a}/scopes?scope_type=group&group_id={self.group}"
        status, parsed = self.until_acked("set_up", "GET", path, None)
        if status != 200 or not parsed or not parsed.get("items"):
            raise SystemExit(f"{self.user}: no group scope ({status})")
        self.scope_id = parsed["items"][0]["id"]
        self.api.emit(e="scope", id=self.scope_id)

    def add(self) -> None:
        self.seq += 1
        marker = f"rh{uuid.uuid4().hex[:12]}"
        body = {"content": self.text(marker), "client_id": marker}
        status, parsed = self.until_acked(
            "add", "POST", f"/scopes/{self.scope_id}/observations", body
        )
        if status in (200, 201) and parsed:
            self.api.emit(e="ack", kind="add", id=parsed["id"], marker=marker)
            self.live.append((parsed["id"], marker))

    def batch(self) -> None:
        markers = [f"rh{uuid.uuid4().hex[:12]}" for _ in range(3)]
        body = {"items": [{"content": self.text(m), "client_id": m} for m in markers]}
        status, parsed = self.until_acked(
            "batch", "POST", f"/scopes/{self.scope_id}/observations", body
        )
        if status in (200, 201) and parsed:
            for item, marker in zip(parsed.get("items", []), markers, strict=True):
                self.api.emit(e="ack", kind="batch", id=item["id"], marker=marker)
                self.live.append((item["id"], marker))

    def delete(self) -> None:
        if len(self.live) < 4:
            return self.add()
        obs_id, marker = self.live.pop(self.rng.randrange(len(self.live)))
        status, _ = self.until_acked("delete", "DELETE", f"/observations/{obs_id}", None)
        if status in (204, 404):  # 404: a retried delete whose first try had landed
            now = time.time()
            self.api.emit(e="deleted", id=obs_id, marker=marker, t=now)
            self.removed.append((marker, now))

    def ingest(self) -> None:
        self.seq += 1
        session = f"rh-s-{self.user}-{self.seq // 5}"
        body = {
            "user_id": self.user,
            "user_name": self.user,
            "groups": [{"id": self.group, "name": self.group}],
            "messages": [
                {"id": f"{session}-{self.seq}-{i}", "role": role, "content": content}
                for i, (role, content) in enumerate(
                    (
                        ("user", f"I moved my {self.rng.choice(WORDS)} lessons to Tuesdays."),
                        ("assistant", "Noted, Tuesdays it is."),
                    )
                )
            ],
        }
        path = f"/agents/{self.agent}/sessions/{session}/messages"
        status, parsed = self.until_acked("ingest", "POST", path, body)
        if status == 202 and parsed and parsed.get("formation_job_id"):
            self.api.emit(e="job", id=parsed["formation_job_id"])
        if self.seq % 5 == 4:  # the session's end: form what it said
            path = f"/agents/{self.agent}/sessions/{session}/form"
            status, parsed = self.until_acked("form", "POST", path, None)
            if status == 202 and parsed:
                self.api.emit(e="job", id=parsed["job_id"])

    def read(self, op: str) -> None:
        t0 = time.time()
        if op == "context":
            body = {
                "user_id": self.user,
                "groups": [{"id": self.group, "name": self.group}],
                "message": "what did I tell you about rehearsal notes?",
            }
            status, parsed = self.api.call(op, "POST", f"/agents/{self.agent}/context", body)
        else:
            path = f"/agents/{self.agent}/search?q=rehearsal+note&group_id={self.group}&limit=20"
            status, parsed = self.api.call(op, "GET", path)
        if status != 200 or parsed is None:
            return
        answer = json.dumps(parsed)
        for marker, acked in self.removed:
            if acked < t0 and marker in answer:
                at = answer.index(marker)  # what held it: an observation, a consolidation
                self.api.emit(
                    e="removed_seen", op=op, marker=marker, t0=t0, held=answer[at - 400 : at + 60]
                )

    def run(self) -> None:
        self.set_up()
        ops = (
            ["add"] * 4 + ["batch"] + ["delete"] + ["ingest"] * 2 + ["context"] * 4 + ["search"] * 2
        )
        while time.time() < self.deadline:
            op = self.rng.choice(ops)
            if op in ("context", "search"):
                self.read(op)
            else:
                getattr(self, op)()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="nginx's /api/v1 URL")
    parser.add_argument("--key", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--until", type=float, required=True, help="epoch seconds")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.out, "w", buffering=1) as out:
        Client(Api(args.base, args.key, out), args.agent, args.n, args.until).run()


if __name__ == "__main__":
    main()
