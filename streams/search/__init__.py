"""Search: the text index, ranking and reranking, embeddings, when to search."""
