"""Stage 4: hybrid retrieval: the rankings of the index fused by RRF and optionally reranked."""
