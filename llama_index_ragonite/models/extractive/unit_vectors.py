"""``UnitVectors``: the answerer's cache of unit embeddings, per embedding model, safe across threads.

Why: a conversation's turns revisit the same pages, so a unit is embedded once and read back; one
answerer may serve many threads (``Settings.llm``), so the cache is read and written under a lock,
and the model is called outside it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Dict, List, Sequence

__all__ = ["UnitVectors"]


class UnitVectors:
    """Embeddings by text for one model at a time (a new model starts a new cache), at most ``size``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._owner: Any = None
        self._cache: "OrderedDict[str, List[float]]" = OrderedDict()

    def get(self, texts: Sequence[str], model: Any) -> List[List[float]]:
        """The vector of each text: cached, else embedded now in one batch."""
        with self._lock:
            if self._owner is not model:
                self._cache, self._owner = OrderedDict(), model
            found: Dict[str, List[float]] = {t: self._cache[t] for t in texts if t in self._cache}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(zip(missing, model.get_text_embedding_batch(missing)))
        with self._lock:
            if self._owner is model:
                for text in texts:
                    self._cache[text] = found[text]
                    self._cache.move_to_end(text)
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        return [found[t] for t in texts]
