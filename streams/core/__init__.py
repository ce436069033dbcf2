"""The shared kernel every layer builds on, the store included.

- `documents`: the domain's documents (Scope, Observation, Job, ...) and their converters;
  `documents_audit`: the audit entry's document.
- `exceptions`: the one exception family (`MemoryServiceError`, `InvalidInput`, ...).
- `ids`: 24-hex ids at the boundary; `pagination`: opaque cursors and bounded pages.
- `contradictions`: the deterministic check of two texts giving different values for
  one thing (pure text: the guard and the offline model both use it).
- `xml_text`: text as the context XML holds it (written by the context, sought by its scrub).
"""
