"""The memory domain, in packages by capability (docs/architecture.md is the map).

`actions/` (one write path per action) over `context/`, `drafts/`, `people/`, `legacy/`,
`memory/`, `guard/`, `prompts/`, `search/`, `jobs.py`, `records/`, `selectors.py`; then
`store/` (every pymongo call), `llm/` (the LLM port) and `core/` (documents, errors, ids).
Nothing here imports Django, ninja, Celery or `memory_admin` (import-linter checks it).
"""
