"""Stage 3: what is persisted: BM25 (lexical), latent terms and the Chroma-backed evidence store."""
