"""The deterministic detectors (`streams.guard.detectors`): flags, spans, redaction."""

from __future__ import annotations

import pytest

from benchmarks.detector_cases import CASES
from streams.guard.detectors import FLAGS, REDACTED, detect, detect_and_redact


@pytest.mark.parametrize("flag", FLAGS)
def test_each_kind_holds_precision_and_recall_on_the_labelled_table(flag):
    found = [(flag in detect(text).flags, flag in labels) for text, labels in CASES]
    tp = sum(1 for f, e in found if f and e)
    fp = sum(1 for f, e in found if f and not e)
    fn = sum(1 for f, e in found if e and not f)
    assert tp / (tp + fp) >= 0.95 and tp / (tp + fn) >= 0.95, (tp, fp, fn)


def test_the_table_holds_at_least_200_sentences_with_look_alikes():
    assert len(CASES) >= 200
    assert sum(1 for _, labels in CASES if not labels) >= 60


def test_spans_point_at_what_raised_the_flag():
    text = "Mail gene@example.com or call +44 20 7946 0958."
    detection = detect(text)
    spans = {s.flag: text[s.start : s.end] for s in detection.spans}
    assert spans == {"pii:email": "gene@example.com", "pii:phone": "+44 20 7946 0958"}


def test_numbers_failing_their_checksum_raise_nothing():
    assert detect("Card 4111 1111 1111 1112 on file.").flags == ()
    assert detect("Pay to DE89 3704 0044 0532 0130 01 please.").flags == ()


def test_secrets_are_redacted_and_the_marker_keeps_the_flag():
    stored, detection = detect_and_redact('Deploy with password = "Tr0ub4dor&3" tonight.')
    assert stored == f"Deploy with password = {REDACTED} tonight."
    assert detection.flags == ("secret",)
    assert detect(stored).flags == ("secret",)  # a copy of the redacted text is flagged too
    text = "Keys: sk-proj-abcdefghijklmnopqrstuvwx123 and AKIAIOSFODNN7EXAMPLE."
    stored, _ = detect_and_redact(text)
    assert "sk-proj" not in stored and "AKIA" not in stored
    assert stored.count(REDACTED) == 2


def test_text_without_findings_is_stored_as_it_is():
    text = "The Eden Team ships release 4.0.1 on 2025-03-07."
    assert detect_and_redact(text) == (text, detect(text))
    assert detect(text).flags == ()
