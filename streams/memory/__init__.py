"""Memory: scopes and what they remember, from messages to consolidated text.

- `scopes` (and `user_names`, the findable user of an individual scope).
- `observations`, `observation_batch`: the log and its writes; `text_history`, `pins`,
  `feedback`, `provenance`, `lifecycle` (expiry, retention), `bulk`, `dedup_backfill`.
- `formation` (buffering, the formation job) with `extraction` (its one LLM call) and
  `large_work` (the hook large writes take turns through).
- `consolidation` (versions), `consolidation_jobs` (when a run is queued),
  `consolidation_runs` (the run; `consolidation_contradictions`: pairs its model reports),
  `propagation` (one level up), `rebuild` (derived memory
  follows its sources), `source_change` (that follow-up as the change's outbox job).
"""
