"""`python -m benchmarks [NAME ...] [--sizes 1000,100000]`.

Without names, the default set runs (`main`'s list). Any other module of `benchmarks/`
with a `run` runs when named: single_add, versus_mem0, scope_lists, store_floor,
detector_table, fidelity, coverage, consolidation_chunks, concurrency, call_cpu,
end_to_end, check_real_model and the rest. Options after the name go to that benchmark's
`run(argv=...)` (`concurrency`, `call_cpu`, `end_to_end` and `check_real_model` take their
own; `--help` after the name lists them).
"""

from __future__ import annotations

import argparse
import os

import django


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument(
        "names",
        nargs="*",
        default=[
            "formation",
            "ingest",
            "consolidation",
            "read_latency",
            "retrieval_quality",
            "ui_pages",
            "privacy",
            "legacy",
            "rebuild",
            "write_throughput",
            "chat_proxy",
            "fairness",
            "load",
            "usage_pages",
            "dedup",
            "context_log",
            "detectors",
            "bulk",
        ],
    )
    parser.add_argument("--sizes", help="comma-separated observation counts, e.g. 1000,100000")
    # A benchmark's own options (`end_to_end --sessions 2`) go to its `run(argv=...)`.
    args, rest = parser.parse_known_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_admin.settings")
    django.setup()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    for name in args.names:
        module = __import__(f"benchmarks.{name}", fromlist=["run"])
        if rest:
            code = module.run(argv=rest)
        else:
            code = module.run(sizes) if sizes is not None else module.run()
        if isinstance(code, int) and code:  # check_real_model: 1 when something did not hold
            raise SystemExit(code)


if __name__ == "__main__":
    main()
