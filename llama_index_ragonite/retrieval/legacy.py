"""0.x's ``HybridRetriever(dense, lexical, k_lexical=..., ...)``, kept for one release (deprecated).

Why apart: the retriever now takes its sides (``BuiltInSides`` for the built-in ones); this
module turns the old arguments into those sides, with a ``DeprecationWarning``, so that the
retriever itself only composes and fuses.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, cast

from llama_index.core.base.base_retriever import BaseRetriever

from llama_index_ragonite.index.latent import LatentTermIndex
from llama_index_ragonite.index.lexical import LexicalIndex
from llama_index_ragonite.retrieval.built_in import SETTINGS, BuiltInSides, SideSettings

__all__ = ["DEPRECATED", "OldSettings", "old_arguments", "old_sides"]

OLD_KEYWORDS = ("dense", "lexical", "latent", *SETTINGS)  # HybridRetriever(dense=, lexical=, k_lexical=, ...)
OLD_POSITIONAL = (  # 0.x's parameters after ``dense``, in order
    *("lexical", "k_lexical", "k_dense", "top_n", "fusion", "reranker", "rrf_k", "corpus_language"),
    *("query_languages", "cross_lingual_lexical_weight", "latent", "k_latent", "latent_weight", "k_titles"),
    "title_weight",
)
STILL_THE_RETRIEVERS = ("fusion", "top_n", "reranker", "rrf_k")
DEPRECATED = (
    "HybridRetriever(dense, lexical, k_lexical=..., ...) is deprecated and goes in the next release: pass the "
    "built-in sides, HybridRetriever(BuiltInSides(dense, lexical, latent, SideSettings(k_lexical=...)), top_n=...), "
    "or use HybridRetriever.from_store / from_index, which keep these keywords"
)


def old_arguments(
    sides: Any, positional: Sequence[Any], kwargs: Dict[str, Any]
) -> Tuple[Optional[Mapping], Dict[str, Any], Dict[str, Any]]:
    """(the sides, 0.x's arguments that describe the built-in sides, the retriever's own given by position);
    0.x's keywords are taken out of ``kwargs``."""
    old = {name: kwargs.pop(name) for name in OLD_KEYWORDS if name in kwargs}
    if sides is not None and not isinstance(sides, Mapping):  # HybridRetriever(dense, lexical, ...)
        old["dense"], sides = sides, None
    if positional and "dense" not in old:
        raise TypeError("HybridRetriever(sides, fusion=..., top_n=..., ...): pass all but the sides by keyword")
    if len(positional) > len(OLD_POSITIONAL):
        raise TypeError(f"HybridRetriever takes at most {len(OLD_POSITIONAL) + 1} positional arguments")
    named = dict(zip(OLD_POSITIONAL, positional))
    own = {name: named.pop(name) for name in STILL_THE_RETRIEVERS if name in named}
    return sides, {**old, **named}, own


def old_sides(old: Dict[str, Any], own: Optional[Mapping]) -> Tuple[Optional[BuiltInSides], Mapping]:
    """The built-in sides 0.x's arguments describe (None without ``dense``), and your ``own``; warns."""
    warnings.warn(DEPRECATED, DeprecationWarning, stacklevel=3)
    dense, lexical, latent = old.pop("dense", None), old.pop("lexical", None), old.pop("latent", None)
    if (dense is None) != (lexical is None):
        raise ValueError("pass both dense and lexical (the built-in sides), or neither and only sides=")
    if dense is None:
        return None, own or {}
    settings = SideSettings(**old)
    sides = BuiltInSides(
        cast(BaseRetriever, dense), cast(LexicalIndex, lexical), cast(LatentTermIndex, latent), settings
    )
    return sides, own or {}


def _old_setting(name: str) -> property:
    def read(self: Any) -> Any:
        warnings.warn(
            f"HybridRetriever.{name} is deprecated and goes in the next release: read retriever.built_in.settings.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        if self.built_in is None:
            raise AttributeError(f"{name}: this retriever has no built-in sides")
        return getattr(self.built_in.settings, name)

    return property(read, doc=f"0.x's ``{name}`` (deprecated): ``built_in.settings.{name}``.")


class OldSettings:
    """0.x's settings attributes (``retriever.k_lexical``, ``retriever.lexical_weight(q)``, ...), read-only and
    deprecated for one release: they now live on the built-in sides' ``SideSettings``."""

    built_in: Any

    def lexical_weight(self, query: str) -> float:
        warnings.warn(
            "HybridRetriever.lexical_weight is deprecated and goes in the next release: "
            "retriever.built_in.settings.lexical_weight(query)",
            DeprecationWarning,
            stacklevel=2,
        )
        if self.built_in is None:
            raise AttributeError("lexical_weight: this retriever has no built-in sides")
        return self.built_in.settings.lexical_weight(query)


for _name in SETTINGS:
    setattr(OldSettings, _name, _old_setting(_name))
