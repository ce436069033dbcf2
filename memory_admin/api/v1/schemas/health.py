"""`GET /health`."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema


class HealthOut(Schema):
    status: Literal["ok"]
    store: Literal["ok"]
    llm: str
    queue: Literal["eager", "broker"]
    store_mode: str
    # With a model server: {"output": "json_schema"|"json_object"|"text", "temperature": bool}.
    llm_output: dict[str, Any] | None = None
    warnings: list[str] = []
    rate_limit: Literal["off", "per_process", "shared", "per_process_fallback"] = Field(
        description="How the per-key limit is counted: `per_process_fallback` while the "
        "shared cache (Redis) is down; never unlimited"
    )
