"""A test that walks every path (issue 37, 9): a Hypothesis state machine over the public
API with a rule for every write action, on all four scope types, writing texts that carry
emails, phones, IBANs, secrets, instructions and unique markers. After each step it reads
every surface (API answers, exports, UI pages, webhook bodies) and checks the four
invariants of `tests/every_path/invariants.py`.

CI runs it derandomized with a small budget; `make every-path` (or
MEMORY_EVERY_PATH_EXAMPLES / MEMORY_EVERY_PATH_STEPS) runs it longer. It prints the
rules fired per scope type. MEMORY_EVERY_PATH_INVARIANTS (comma-separated names) checks
only some invariants, MEMORY_EVERY_PATH_RULES only lets some rules fire: both are for
finding one shrunk counterexample per invariant (docs/every-path.md).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis.stateful import (
    run_state_machine_as_test,
)

from memory_admin.models import ApiKey
from tests.api.conftest import bearer_client
from tests.every_path.machine import COVERAGE, EXAMPLES, SCOPE_TYPES, STEPS
from tests.every_path.removal_rules import RemovalRules
from tests.every_path.supersession_rules import SupersessionRules
from tests.every_path.world import Http, Receiver, copying_model
from tests.every_path.write_rules import WriteRules
from tests.ui.people import create_user

pytestmark = pytest.mark.django_db


class EveryPath(WriteRules, RemovalRules, SupersessionRules):
    """Every rule, on one agent per example."""


def _coverage_table() -> str:
    rules = sorted({r for r, _ in COVERAGE})
    lines = [f"{'rule':<16}" + "".join(f"{t:>12}" for t in SCOPE_TYPES)]
    for r in rules:
        lines.append(f"{r:<16}" + "".join(f"{COVERAGE[(r, t)]:>12}" for t in SCOPE_TYPES))
    lines.append(
        f"{'all rules':<16}"
        + "".join(f"{sum(n for (_, t), n in COVERAGE.items() if t == s):>12}" for s in SCOPE_TYPES)
    )
    return "\n".join(lines)


def test_every_path(
    db, fake_openai, run_tasks, settings, client, django_user_model, capsys
) -> None:
    settings.MEMORY_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMORY_WEBHOOK_TIMEOUT_SECONDS = 2
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    fake_openai.set_responder(copying_model)
    client.force_login(create_user(django_user_model, username="every-path-admin", role="admin"))
    receiver = Receiver().start()
    EveryPath.http = Http(
        api=bearer_client(ApiKey.generate(name="every-path", agent_ids=[])[1]),
        ui=client,
        tasks=run_tasks,
    )
    EveryPath.receiver = receiver
    COVERAGE.clear()
    try:
        run_state_machine_as_test(
            EveryPath,
            settings=settings_for_run(),
        )
    finally:
        receiver.stop()
        with capsys.disabled():
            print(f"\nevery path: rules fired per scope type ({EXAMPLES} examples x {STEPS} steps)")
            print(_coverage_table())


def settings_for_run() -> hsettings:
    return hsettings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.function_scoped_fixture,
        ],
    )
