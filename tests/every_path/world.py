"""What the every-path machine acts through: the public HTTP API (an admin key), the UI
(a signed-in admin), a local webhook receiver, and a fake model that copies what it is
given, so that text which reaches a model's input shows up in its output."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from django.test import Client

from tests.fakes.openai_wire import RecordedRequest, consolidation_lines, prompt_lines

API = "/api/v1"
JSON = "application/json"
GROUP_ID = "g1"
GROUP_NAME = "Team One"
SHARD = "notes"
USERS = {"u1": "Gene", "u2": "Ana"}
ROUTES = {"i": "individual", "g": f"group:{GROUP_NAME}", "c": "collective", "s": f"shard:{SHARD}"}
MARKER = re.compile(r"\bzq[a-z0-9]{2}\d{4}([igcs])x\b")
_CURRENT = re.compile(r"# The current memory\n(.*?)\n\n# ", re.S)


def copying_model(request: RecordedRequest) -> str:
    """Extraction: one observation per conversation line, in the scope its marker names.
    Consolidation: the current memory and every new observation, word for word.
    Propagation and anything else: nothing to add."""
    if request.task == "extraction":
        items = []
        for line in prompt_lines(request):
            match = MARKER.search(line.text)
            if match:
                items.append(
                    {"content": line.text, "scope": ROUTES[match[1]], "sources": [line.message_id]}
                )
        return json.dumps({"observations": items})
    if request.task == "consolidation":
        prompt = "\n".join(
            str(m.get("content") or "") for m in (request.body or {}).get("messages") or []
        )
        current = _CURRENT.search(prompt)
        kept = current[1].strip() if current else ""
        parts = [] if kept.startswith("(no consolidation") else [kept]
        parts += list(consolidation_lines(request).values())
        return " ".join(p for p in parts if p) or "Nothing yet."
    return json.dumps({"observations": []})


@dataclass
class Receiver:
    """A webhook endpoint on loopback that keeps every body it was sent, with the step."""

    bodies: list[tuple[float, str]] = field(default_factory=list)
    step: float = 0
    _server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace")
                receiver.bodies.append((receiver.step, body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@dataclass
class Http:
    """The API and UI clients; every write runs its jobs before it returns (`tasks`)."""

    api: Client
    ui: Client
    tasks: Callable[[], AbstractContextManager[Any]]

    def write(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        with self.tasks():
            call = getattr(self.api, method)
            if body is None:
                response = call(f"{API}{path}")
            else:
                response = call(f"{API}{path}", json.dumps(body), content_type=JSON)
        return response.status_code, _body(response)

    def read(self, path: str, params: dict[str, Any] | None = None) -> tuple[int, Any]:
        response = self.api.get(f"{API}{path}", params or {})
        return response.status_code, _body(response)

    def post_read(self, path: str, body: Any) -> tuple[int, Any]:
        """A POST that reads (context): its log write runs like any other job."""
        return self.write("post", path, body)

    def page(self, path: str, params: dict[str, Any] | None = None) -> tuple[int, str]:
        response = self.ui.get(path, params or {})
        return response.status_code, response.content.decode("utf-8", "replace")


def _body(response: Any) -> Any:
    if not response.content:
        return None
    if response.get("Content-Type", "").startswith("application/json"):
        return json.loads(response.content)
    return response.content.decode("utf-8", "replace")


def walk_pages(http: Http, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item of a cursor-paginated list."""
    cursor = None
    for _ in range(50):
        status, page = http.read(
            path, {**params, "limit": 200, **({"cursor": cursor} if cursor else {})}
        )
        if status != 200:
            return
        yield from page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            return
