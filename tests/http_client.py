"""A small HTTP client over urllib for tests that talk to a served app (gunicorn)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any


@dataclass
class HttpResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass
class HttpClient:
    base: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 10.0

    def request(
        self, method: str, path: str, *, json_body: Any = None, params: dict | None = None
    ) -> HttpResponse:
        url = self.base + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None
        headers = dict(self.headers)
        if json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return HttpResponse(answer.status, dict(answer.headers), answer.read())
        except urllib.error.HTTPError as error:
            return HttpResponse(error.code, dict(error.headers), error.read())

    def get(self, path: str, params: dict | None = None) -> HttpResponse:
        return self.request("GET", path, params=params)

    def post(self, path: str, json: Any = None) -> HttpResponse:
        return self.request("POST", path, json_body=json)

    def wait_until_up(self, path: str, *, within: float) -> None:
        deadline = time.monotonic() + within
        while True:
            try:
                if self.get(path).status_code == 200:
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.base}{path} did not answer 200 within {within}s")
            time.sleep(0.2)
