"""The local provider: the packaged all-MiniLM-L6-v2 loads and embeds with no network.

Needs the `local-embeddings` extra (marker `local_embeddings`: deselected without it, see
tests/conftest.py; `make test-local-embeddings`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.local_embeddings

SCRIPT = """
import json, socket
def no_network(*args, **kwargs):
    raise OSError("network disabled in this test")
socket.socket.connect = no_network  # any download attempt fails loudly
socket.create_connection = no_network
from streams.search.local_embeddings import LocalEmbedder
vectors = LocalEmbedder(threads=1).embed([
    "Where has Melanie camped?",
    "Melanie: we went camping at the beach near the lake last summer",
    "Caroline: I bought a new car for my commute",
])
print(json.dumps(vectors))
"""


def test_the_local_model_loads_offline_and_ranks_a_paraphrase_first() -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": "/nonexistent",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    question, camping, car = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(question) == 384
    dot = lambda a, b: sum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731 (unit vectors)
    assert dot(question, camping) > dot(question, car) + 0.1


def test_a_large_scope_is_searched_through_hnsw_once_built(monkeypatch) -> None:
    import time

    import numpy as np
    from bson import ObjectId

    from streams.search import vectors as module

    monkeypatch.setattr(module, "HNSW_FROM", 50)
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((200, 8)).astype(np.float32)
    scope = module.ScopeVectors()
    ids = [ObjectId() for _ in range(200)]
    scope.add([(oid, row.tobytes()) for oid, row in zip(ids, rows, strict=True)])
    query = rows[7].tolist()
    exact = scope.nearest(query, 5)  # exact, and starts the build
    assert exact[0][0] == ids[7]
    for _ in range(200):
        if scope.hnsw is not None:
            break
        time.sleep(0.05)
    assert scope.hnsw is not None
    scope.add([(ids[7], (-rows[7]).tobytes())])  # re-embedded: the index takes the new one
    approximate = scope.nearest(query, 5)
    assert ids[7] not in [oid for oid, _ in approximate]
    assert scope.nearest((-rows[7]).tolist(), 1)[0][0] == ids[7]
