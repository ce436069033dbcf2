"""The deterministic detectors: precision and recall per kind on a labelled table, and
what detection costs per observation.

The table (`benchmarks.detector_cases`) holds emails, phone numbers in several
countries' formats, IBANs and cards that pass their checksums, secrets, instructions
aimed at the agent, and look-alikes that must raise nothing (versions, dates, order ids,
prices, code identifiers). Cost: `detect_and_redact` as the write path runs it, on every
sentence of the table and on typical observations without anything to find (most
writes), p50 / p95 / mean per observation. No store, no model.
"""

from __future__ import annotations

import time

from benchmarks.detector_cases import CASES
from benchmarks.harness import print_table, summary_ms
from streams.core.flag_kinds import FLAG_KINDS
from streams.guard.detectors import detect, detect_and_redact

REPEAT = 20
PLAIN = [
    "Gene prefers short answers and replies in the morning.",
    "The Eden Team ships on Fridays after the review meeting.",
    "Customers on the Pro plan asked for CSV exports twice this month.",
    "The staging cluster was upgraded to Postgres 16 on 2025-01-12.",
    "Ana leads the billing migration and expects it done by March.",
    "The onboarding checklist has 14 steps; step 9 (SSO) fails most often.",
]


def quality() -> list[list[object]]:
    rows = []
    for flag in (k.name for k in FLAG_KINDS):  # the registry: a new kind gets its row
        tp = fp = fn = 0
        for text, labels in CASES:
            found = flag in detect(text).flags
            expected = flag in labels
            tp += found and expected
            fp += found and not expected
            fn += expected and not found
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        rows.append([flag, tp + fn, tp, fp, fn, f"{precision:.3f}", f"{recall:.3f}"])
    return rows


def cost() -> list[list[object]]:
    rows = []
    for name, texts in (("labelled table", [t for t, _ in CASES]), ("plain observations", PLAIN)):
        samples = []
        for _ in range(REPEAT):
            for text in texts:
                started = time.perf_counter()
                detect_and_redact(text)
                samples.append(time.perf_counter() - started)
        p50, p95, mean = summary_ms(samples)
        rows.append([name, len(samples), f"{p50:.3f}", f"{p95:.3f}", f"{mean:.3f}"])
    return rows


def run(sizes: list[int] | None = None) -> None:
    del sizes  # the table is the size
    print_table(
        f"Detectors on {len(CASES)} labelled sentences (goal: precision and recall >= 0.95)",
        ["flag", "labelled", "found", "false +", "missed", "precision", "recall"],
        quality(),
    )
    print_table(
        "Detection cost per observation, ms (goal: <= 1 ms)",
        ["texts", "runs", "p50", "p95", "mean"],
        cost(),
    )


if __name__ == "__main__":
    run()
