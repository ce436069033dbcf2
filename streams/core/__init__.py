"""The shared kernel every layer builds on, the store included.

- `documents`: the domain's documents (Scope, Observation, Job, ...) and their converters;
  `documents_audit`: the audit entry's document.
- `exceptions`: the one exception family (`MemoryServiceError`, `InvalidInput`, ...).
- `ids`: 24-hex ids at the boundary; `pagination`: opaque cursors and bounded pages.
"""
