"""Schemathesis against the live test server: the whole OpenAPI, bounded and reproducible.

One run per key kind (an admin key, a key bound to one agent), each with a fixed
seed, a few examples per operation and every phase including the stateful one
(schemathesis chains operations through the links it infers). It asserts that no
request gets a server error, that every answer's status, headers, content type and
body match the document, and that every error body is the envelope
(tests/api/schemathesis_hooks.py). Generic on purpose: new endpoints are covered
as soon as they are in the OpenAPI.

`positive_data_acceptance` is left out: some valid-looking input is refused on
purpose by rules a JSON schema cannot state (a cursor not handed out by the
server, `observed_after` later than `observed_before`, a shard's guidance limit).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_admin.models import ApiKey

ROOT = Path(__file__).resolve().parent.parent.parent
SEED = 20261125
EXAMPLES = 5
CHECKS_LEFT_OUT = "positive_data_acceptance"


# Every phase for the key that sees everything; a key bound to one agent is fuzzed
# without the coverage phase (the same boundary values again, two minutes of CI):
# what it adds is how each endpoint answers for an agent the key may not see.
PHASES = {"admin": "examples,coverage,fuzzing,stateful", "agent-bound": "examples,fuzzing,stateful"}


def run_schemathesis(base_url: str, raw_key: str, report_dir: Path, phases: str) -> tuple[int, str]:
    st = Path(sys.executable).with_name("st")
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [
            str(st),
            "run",
            f"{base_url}/api/v1/openapi.json",
            "--header",
            f"Authorization: Bearer {raw_key}",
            "--max-examples",
            str(EXAMPLES),
            "--seed",
            str(SEED),
            "--generation-deterministic",
            "--checks",
            "all",
            "--exclude-checks",
            CHECKS_LEFT_OUT,
            "--phases",
            phases,
            "--workers",
            "1",
            "--request-timeout",
            "30",
            "--no-color",
            "--report",
            "junit",
            "--report-dir",
            str(report_dir),
        ],
        cwd=report_dir,  # its caches (.hypothesis, .schemathesis) stay out of the repository
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


def summary(output: str) -> str:
    generated = re.search(r"(\d+) generated", output)
    failures = re.search(r"(\d+) found (\d+) unique failures", output)
    return (
        f"{generated.group(1) if generated else '?'} cases generated, "
        f"{failures.group(2) if failures else 0} unique failures "
        "(server errors, responses outside the schema, errors outside the envelope)"
    )


@pytest.mark.parametrize("key_kind", ["admin", "agent-bound"])
def test_the_api_holds_to_its_openapi_under_fuzzing(
    live_server, transactional_db, tmp_path, key_kind
):
    agent_ids = [] if key_kind == "admin" else ["a1"]
    _, raw_key = ApiKey.generate(name=f"schemathesis-{key_kind}", agent_ids=agent_ids)
    returncode, output = run_schemathesis(live_server.url, raw_key, tmp_path, PHASES[key_kind])
    print(f"schemathesis, {key_kind} key: {summary(output)}")
    assert returncode == 0, output[-6000:]
    assert "Stateful" in output and "❌" not in output, output[-6000:]
    assert int(re.search(r"(\d+) generated", output).group(1)) >= 100, output[-3000:]
