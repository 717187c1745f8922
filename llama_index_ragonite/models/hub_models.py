"""The paper's hub models: BAAI/bge-m3 embeddings and the BAAI/bge-reranker-v2-m3 cross-encoder.

Optional extra ``[bge]`` (FlagEmbedding, sentence-transformers, torch). Nothing here is
imported until used, so ``import llama_index_ragonite`` works without the extra. Every
``model`` argument also takes a local folder, for machines without hub access.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import Any, List, Optional, cast

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

BGE_M3 = "BAAI/bge-m3"
BGE_RERANKER = "BAAI/bge-reranker-v2-m3"
EXTRA_HINT = 'pip install "llama-index-ragonite[bge]"'


def on_cuda(device: Optional[str]) -> bool:
    """Whether a model loaded for ``device`` runs on a CUDA GPU (None: the loaders pick CUDA when there is one)."""
    if device is None:
        import torch

        return torch.cuda.is_available()
    return str(device).strip().lower().startswith("cuda")


def half_precision(device: Optional[str], use_fp16: Optional[bool] = None) -> bool:
    """fp16 on CUDA unless told otherwise (faster, scores within rounding), fp32 elsewhere.

    An explicit ``use_fp16`` wins; None decides by ``device`` (see ``on_cuda``).
    """
    return on_cuda(device) if use_fp16 is None else bool(use_fp16)


def _dtype_argument() -> str:
    """transformers 4.56 renamed ``torch_dtype`` to ``dtype`` (and 5.x warns about the old name)."""
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def bge_m3_embedding(
    model_name: str = BGE_M3,
    device: Optional[str] = None,
    max_length: Optional[int] = 512,
    use_fp16: Optional[bool] = None,
    **kwargs: Any,
) -> BaseEmbedding:
    """bge-m3 dense embeddings through LlamaIndex's ``HuggingFaceEmbedding`` (sentence-transformers).

    Pooling (CLS for bge-m3) and normalization come from the model folder's sentence-transformers
    config; vectors are L2-normalized; bge-m3 takes no query or passage prefix.

    Args:
        model_name: hub id or local sentence-transformers folder.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``…; None picks the best available (CUDA, else
            Apple's MPS, else the CPU).
        max_length: tokens per text. bge-m3 accepts 8192, but evidences (context header +
            evidence) are short and attention cost grows with the square of the length; None
            keeps the model's own limit.
        use_fp16: load the weights in half precision; None: on CUDA yes, elsewhere no
            (``half_precision``). The store records the model, not its precision: fp16 and fp32
            vectors of one model agree to about 1e-3 and can be mixed.
        **kwargs: passed to ``HuggingFaceEmbedding`` (e.g. ``embed_batch_size``, ``cache_folder``).
    """
    try:
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    except ImportError as err:
        raise ImportError(f"bge_m3_embedding needs llama-index-embeddings-huggingface: {EXTRA_HINT}") from err
    kwargs.setdefault("query_instruction", "")
    kwargs.setdefault("text_instruction", "")
    if half_precision(device, use_fp16):
        import torch

        kwargs["model_kwargs"] = {**kwargs.get("model_kwargs", {}), _dtype_argument(): torch.float16}
    return HuggingFaceEmbedding(model_name=model_name, device=device, max_length=max_length, normalize=True, **kwargs)


def _flag_reranker_class():
    try:
        from FlagEmbedding import FlagReranker
    except ImportError as err:
        raise ImportError(f"BGEReranker needs FlagEmbedding: {EXTRA_HINT}") from err
    return FlagReranker


class BGEReranker(BaseNodePostprocessor):
    """Cross-encoder reranking with FlagEmbedding's ``FlagReranker`` (default: bge-reranker-v2-m3).

    Scores ``(query, node.get_content(MetadataMode.EMBED))`` — the same context + evidence text
    that BM25 and the embeddings see — and returns the nodes by descending score, each node's
    ``score`` replaced by the reranker's. ``HybridRetriever`` hands rerankers copies, so its own
    lexical and dense scores are kept.
    """

    model: str = Field(default=BGE_RERANKER, description="Hub id or local folder of a cross-encoder.")
    top_n: Optional[int] = Field(default=None, gt=0, description="Keep the best n; None keeps all.")
    use_fp16: Optional[bool] = Field(
        default=None,
        description="Half precision; None: on CUDA yes, elsewhere no. FlagEmbedding ignores it on the CPU.",
    )
    batch_size: int = Field(default=32, gt=0, description="(query, text) pairs per forward pass.")
    max_length: int = Field(default=512, gt=0, description="Tokens per pair; the text is cut, not the query.")
    normalize: bool = Field(default=False, description="Sigmoid of the logit: scores in (0, 1).")
    device: Optional[str] = Field(default=None, description="'cpu', 'cuda:0'…; None: every GPU, else the CPU.")

    _reranker: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def class_name(cls) -> str:
        return "BGEReranker"

    def load(self, source: Optional[str] = None) -> "BGEReranker":
        """Load the model now (once; later calls do nothing). ``source`` overrides where from."""
        with self._lock:
            if self._reranker is None:
                self._reranker = _flag_reranker_class()(
                    source or self.model,
                    use_fp16=half_precision(self.device, self.use_fp16),
                    devices=self.device,
                    batch_size=self.batch_size,
                    max_length=self.max_length,
                    normalize=self.normalize,
                )
        return self

    def score(self, query: str, texts: List[str]) -> List[float]:
        """Cross-encoder scores of ``(query, text)`` pairs: logits, or their sigmoid with ``normalize``."""
        if not texts:
            return []
        scores = self.load()._reranker.compute_score([[query, t] for t in texts])
        return [float(s) for s in scores]

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("BGEReranker needs the query (query_bundle)")
        if not nodes:
            return []
        scores = self.score(query_bundle.query_str, [n.node.get_content(MetadataMode.EMBED) for n in nodes])
        for node, score in zip(nodes, scores):
            node.score = score
        ranked = sorted(nodes, key=lambda n: -cast(float, n.score))  # stable: ties keep the incoming order
        return ranked[: self.top_n] if self.top_n else ranked

    # FlagReranker is blocking torch code: a thread keeps the event loop free.
    async def _apostprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        return await asyncio.to_thread(self._postprocess_nodes, nodes, query_bundle)


def default_reranker(model: str = BGE_RERANKER, timeout: float = 5.0, **kwargs: Any) -> Optional[BGEReranker]:
    """A loaded ``BGEReranker`` when FlagEmbedding is installed and ``model`` is at hand, else None.

    None (with a logged reason) tells the caller to fuse by RRF alone. ``model`` is at hand when
    it is a local folder, is in the Hugging Face cache (loaded from there, no network), or — unless
    ``HF_HUB_OFFLINE`` is set — the hub answers for it within ``timeout`` seconds (then it is
    downloaded). So an offline machine gets its answer at once, and an unreachable hub costs at
    most ``timeout`` seconds before any download starts (plus, once per process, the 3 s that
    huggingface_hub 2.x may spend fetching its telemetry agent list; HF_HUB_DISABLE_TELEMETRY=1
    skips it).
    """
    if importlib.util.find_spec("FlagEmbedding") is None:
        logger.info("No reranker: FlagEmbedding is not installed (%s); fusing by RRF", EXTRA_HINT)
        return None
    source, why_not = _locate(model, timeout)
    if source is None:
        logger.info("No reranker: %s; fusing by RRF", why_not)
        return None
    try:
        return BGEReranker(model=model, **kwargs).load(source)
    except Exception as err:  # a broken download or folder, an incompatible library version
        logger.info("No reranker: loading %s failed (%s: %s); fusing by RRF", source, type(err).__name__, err)
        return None


def _offline() -> bool:
    from huggingface_hub import constants

    flags = (os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE"))
    return constants.HF_HUB_OFFLINE or any(f and f.upper() in ("1", "ON", "YES", "TRUE") for f in flags)


def _locate(model: str, timeout: float) -> tuple[Optional[str], str]:
    """Where to load ``model`` from: ``(folder or hub id, "")``, or ``(None, why not)``."""
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser()), ""
    from huggingface_hub import HfApi, snapshot_download

    try:
        return snapshot_download(model, local_files_only=True), ""
    except Exception:  # not cached (or not a valid repo id)
        pass
    if _offline():
        return None, f"{model!r} is neither a local folder nor in the Hugging Face cache, and HF_HUB_OFFLINE is set"
    try:
        HfApi().model_info(model, timeout=timeout)
    except Exception as err:
        return None, f"{model!r} is not cached and the hub did not answer for it ({type(err).__name__}: {err})"
    return model, ""
