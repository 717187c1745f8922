"""A persistent embedding cache keyed by (embedding model, text sha256), shared by all configurations.

Why: embedding the ConfQuestions corpus takes minutes on a CPU, and most benchmark
configurations embed the same texts (BEF/AFT add neighbours only to the BM25/LLM view;
another linearizer changes only table texts; a corpus subset is a subset). LlamaIndex's
``IngestionCache`` keys whole node batches by the transformation chain, so it cannot share
single texts across chains; a small SQLite table can. Vectors are stored as float32, and
every vector a benchmark uses comes out of the cache, so a rerun sees identical numbers.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Dict, List, Sequence, Union, cast

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

_IGNORED_FIELDS = {"embed_batch_size", "num_workers", "num_threads", "class_name", "callback_manager"}


def model_key(model: BaseEmbedding) -> str:
    """Class, model name and every setting that changes a vector (not batch size or threads), and the
    model's ``vector_revision`` where it has one (its arithmetic changed under the same settings)."""
    settings = {k: v for k, v in model.to_dict().items() if k not in _IGNORED_FIELDS}
    if getattr(model, "vector_revision", None):
        settings["vector_revision"] = cast(Any, model).vector_revision
    return f"{model.class_name()}:{json.dumps(settings, sort_keys=True, default=str)}"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class EmbeddingCache:
    """``embed(model, texts)`` -> float32 matrix; computes only the texts not cached yet."""

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=60)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, kind TEXT, sha TEXT, vector BLOB, "
            "PRIMARY KEY (model, kind, sha))"
        )
        self._db.commit()

    def _lookup(self, model: str, kind: str, shas: Sequence[str]) -> dict:
        found = {}
        unique = list(dict.fromkeys(shas))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            rows = self._db.execute(
                f"SELECT sha, vector FROM vectors WHERE model=? AND kind=? AND sha IN ({','.join('?' * len(chunk))})",
                [model, kind, *chunk],
            )
            found.update({sha: np.frombuffer(blob, dtype=np.float32) for sha, blob in rows})
        return found

    def embed(
        self, model: BaseEmbedding, texts: Sequence[str], kind: str = "text", batch: int = 64, progress=None
    ) -> np.ndarray:
        """One row per text (``kind``: "text" for evidences, "query" for questions).

        ``progress``: optional callable(n) told how many texts were just embedded.
        """
        key = model_key(model)
        shas = [_sha(t) for t in texts]
        found = self._lookup(key, kind, shas)
        todo = [(sha, text) for sha, text in dict(zip(shas, texts)).items() if sha not in found]
        for start in range(0, len(todo), batch):
            part = todo[start : start + batch]
            if kind == "query":
                vectors = [model.get_query_embedding(text) for _, text in part]
            else:
                vectors = model.get_text_embedding_batch([text for _, text in part])
            rows = [(key, kind, sha, np.asarray(v, dtype=np.float32).tobytes()) for (sha, _), v in zip(part, vectors)]
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.commit()  # a crash loses at most one batch
            found.update({sha: np.frombuffer(blob, dtype=np.float32) for _, _, sha, blob in rows})
            if progress is not None:
                progress(len(part))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[sha] for sha in shas])

    def query(self, model: BaseEmbedding, text: str) -> np.ndarray:
        return self.embed(model, [text], kind="query")[0]

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]

    def close(self) -> None:
        self._db.close()


def texts_missing(cache: EmbeddingCache, model: BaseEmbedding, texts: Sequence[str]) -> List[str]:
    """Texts ``embed`` would compute (to size a progress bar)."""
    shas = [_sha(t) for t in texts]
    found = cache._lookup(model_key(model), "text", shas)
    return [t for s, t in dict(zip(shas, texts)).items() if s not in found]


class CachedEmbedding(BaseEmbedding):
    """Delegates to ``inner`` and remembers every vector by (kind, text) for the run, in memory.

    Why: several attributors explaining the same answer embed the same answer texts; the
    vectors are the inner model's, so results do not change.
    """

    _inner: BaseEmbedding = PrivateAttr()
    _cache: Dict[tuple, List[float]] = PrivateAttr(default_factory=dict)

    def __init__(self, inner: BaseEmbedding, **kwargs: Any) -> None:
        super().__init__(model_name=getattr(inner, "model_name", "cached"), embed_batch_size=64, **kwargs)
        self._inner = inner

    @classmethod
    def class_name(cls) -> str:
        return "CachedEmbedding"

    def _texts(self, texts: List[str]) -> List[List[float]]:
        missing = list(dict.fromkeys(t for t in texts if ("text", t) not in self._cache))
        if missing:
            for t, v in zip(missing, self._inner.get_text_embedding_batch(missing)):
                self._cache[("text", t)] = v
        return [self._cache[("text", t)] for t in texts]

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._texts([text])[0]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._texts(texts)

    async def _aget_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._texts(texts)

    def _get_query_embedding(self, query: str) -> List[float]:
        if ("query", query) not in self._cache:
            self._cache[("query", query)] = self._inner.get_query_embedding(query)
        return self._cache[("query", query)]

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)
