"""The guard on shared memory: what it must not take in, and what waits for a person.

- `detectors`: deterministic flags and redaction; `screening`: the guard on every write.
- `review`: the review queue, decisions, and releasing what waited.
(The contradiction check itself is pure text: `streams.core.contradictions`.)
"""
