"""One registry per kind (issue 41): the flag kinds the detectors raise, the job kinds the
runner runs and the webhook events the code emits are each declared once in
`streams/core/`, and every reader (the UI, the API schema, docs/kinds.md) takes them from
there. Each test fails when one side names a kind the other does not."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from streams.core.documents import JobKind as DocumentsJobKind
from streams.core.documents import Observation
from streams.core.flag_kinds import (
    BLOCKING_FLAGS,
    FLAG_KINDS,
    FLAGS,
    HELD_FLAGS,
    flag_label,
    flags_described,
)
from streams.core.job_kinds import JOB_KIND_NAMES, JOB_KINDS, JobKind
from streams.core.webhook_events import EVENTS, REMOVAL_FIELDS, WEBHOOK_EVENTS

ROOT = Path(__file__).resolve().parents[3]
DETECTORS = ROOT / "streams" / "guard" / "detectors.py"


def detector_kinds(source: str) -> set[str]:
    """The kinds the detector module raises: the literal first argument of each `Span(...)`."""
    return {
        node.args[0].value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Span"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


def emitted_events(root: Path) -> set[str]:
    """Every `event="..."` literal handed to a call in `streams/` (the emitting sites)."""
    found: set[str] = set()
    for path in (root / "streams").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "event" and isinstance(kw.value, ast.Constant):
                        found.add(str(kw.value.value))
    return found


# -- flag kinds -------------------------------------------------------------------------


def test_every_detector_kind_is_in_the_registry_and_back():
    assert detector_kinds(DETECTORS.read_text(encoding="utf-8")) == set(FLAGS)


def test_a_kind_the_registry_misses_is_caught():
    planted = DETECTORS.read_text(encoding="utf-8") + '\n\nSpan("pii:passport", 0, 1)\n'
    assert detector_kinds(planted) - set(FLAGS) == {"pii:passport"}


def test_every_flag_kind_says_what_it_is():
    assert len(FLAGS) == len(set(FLAGS))
    for kind in FLAG_KINDS:
        assert kind.label.strip() and kind.description.strip(), kind
        assert kind.severity in ("redact", "hold")


def test_the_sets_the_screen_and_propagation_use_come_from_the_registry():
    assert {"pii:email", "pii:phone", "pii:iban", "pii:card", "secret"} == BLOCKING_FLAGS
    assert {"pii:email", "pii:phone", "pii:iban", "pii:card", "instruction"} == HELD_FLAGS
    from streams.guard import detectors, screening

    assert detectors.FLAGS == FLAGS and detectors.BLOCKING_FLAGS == BLOCKING_FLAGS
    assert screening.REFUSED_FLAGS == HELD_FLAGS


def test_a_flag_the_registry_does_not_know_is_shown_by_its_name():
    assert flag_label("pii:email") == "email"
    assert flag_label("pii:passport") == "pii:passport"


@pytest.mark.parametrize("flag", [*FLAGS, "pii:from-an-old-document"])
def test_the_review_queue_never_titles_a_span_none(flag):
    from memory_admin.ui.review import highlighted

    observation = Observation(
        scope_id="s",
        agent_id="a",
        content="before FLAGGED after",
        flags=[flag],
        flag_spans=[{"flag": flag, "start": 7, "end": 14}],
    )
    [marked] = [s for s in highlighted(observation) if s["flag"]]
    assert marked["label"] == flag_label(flag)
    assert marked["label"] not in (None, "None", "")


def test_the_api_schema_describes_the_flags_from_the_registry():
    from memory_admin.api.v1 import api

    schema = api.get_openapi_schema()
    described = schema["components"]["schemas"]["ObservationOut"]["properties"]["flags"]
    assert flags_described() in described["description"]
    for kind in FLAG_KINDS:
        assert f"{kind.name} ({kind.label})" in described["description"]


# -- job kinds --------------------------------------------------------------------------


def test_the_job_kind_type_and_the_registry_name_the_same_kinds():
    assert DocumentsJobKind is JobKind
    assert tuple(k.name for k in JOB_KINDS) == JOB_KIND_NAMES == get_args(JobKind)
    for kind in JOB_KINDS:
        assert kind.label.strip() and kind.description.strip(), kind


def test_every_job_kind_has_a_runner_and_every_runner_a_kind():
    from memory_admin.jobs.tasks import TASKS_BY_KIND

    assert set(TASKS_BY_KIND) == set(JOB_KIND_NAMES)


def test_the_api_schema_describes_the_job_kinds_from_the_registry():
    from memory_admin.api.v1 import api

    schema = api.get_openapi_schema()
    kind = schema["components"]["schemas"]["JobOut"]["properties"]["kind"]
    for info in JOB_KINDS:
        assert f"{info.name}: {info.description}" in kind["description"]


# -- webhook events ---------------------------------------------------------------------


def test_every_emitted_event_is_declared_and_every_declared_one_emitted():
    assert emitted_events(ROOT) == set(EVENTS)
    assert tuple(e.name for e in WEBHOOK_EVENTS) == EVENTS


def test_removal_events_keep_only_the_fields_the_registry_names():
    from streams.records import webhooks

    assert webhooks.REMOVAL_FIELDS is REMOVAL_FIELDS
    assert set(REMOVAL_FIELDS) == {"observation.deleted", "user.forgotten"}


def test_the_api_accepts_exactly_the_declared_events():
    from memory_admin.api.v1.webhooks import WebhookIn

    events = WebhookIn.model_json_schema()["properties"]["events"]
    assert set(events["items"]["enum"]) == set(EVENTS)
    for event in WEBHOOK_EVENTS:
        assert event.name in events["description"]
