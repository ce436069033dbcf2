"""Search: the text index, its ranking, embeddings, and when the hot path searches.

- `index`: `search_in_scopes`, and the index kept on write (`search_index_add/remove`).
- `text`: text to terms; `dedup`: the normalized text and key of one fact per scope.
- `ranking`, `rerank`, `ranking_lifecycle`: how candidates are ordered, stage by stage.
- `embeddings`: the semantic candidates fused with the text ones; `vectors`: nearest
  neighbours per scope (exact, HNSW past a size); `local_embeddings`: the packaged model.
- `query_understanding`, `understood`: dates, multi-hop parts and RM3 expansion.
- `retrieval`: when the hot path searches (heuristics).
- `index_rebuild`: the index rebuilt from the observations (the reference and repair).
"""
