"""Search: the text index, its ranking, embeddings, and when the hot path searches.

- `index`: `search_in_scopes`, and the index kept on write (`search_index_add/remove`).
- `text`: text to terms; `dedup`: the normalized text and key of one fact per scope.
- `ranking`, `rerank`, `ranking_lifecycle`: how candidates are ordered, stage by stage.
- `embeddings`: the optional semantic rerank; `retrieval`: when to search (heuristics).
- `index_rebuild`: the index rebuilt from the observations (the reference and repair).
"""
