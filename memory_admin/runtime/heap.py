"""The garbage collector and a long-lived process: the startup heap set aside once.

A loaded web worker holds some 180,000 objects that live as long as it does (Django,
the apps, pymongo, the stemmer's tables). A search among 100,000 observations allocates
tens of thousands of short-lived ones (postings, candidates), and some live through the
young collections and count towards a full one: every tenth search or so then paid a
full collection that walked the whole heap, about 100 ms of CPU, which was the whole p95
(`benchmarks/search_scale`). Frozen (`gc.freeze`), the startup objects are never walked
again; what a request leaves behind is still collected.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect once, then move every object alive now out of the collector's reach: call
    when a process is loaded and before it serves (a gunicorn worker after the app)."""
    gc.collect()
    gc.freeze()
