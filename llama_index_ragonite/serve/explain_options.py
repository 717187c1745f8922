"""The explain panel's methods and their options: which explainer each method is, what a user may set.

Why a list: an explanation runs many LLM calls on the server, so a request may set only the
options named here, each within the bounds named here (they keep one request's cost in reach);
everything else stays the explainer's default. The options *are* the explainers' own pydantic
fields, so their types, choices and defaults come from the classes (``option_schema`` serves them
to the page, which builds its form from them) and a value the class refuses is refused here.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Dict, Literal, Optional, Tuple, Type, Union, cast, get_args, get_origin

from llama_index.core.bridge.pydantic import TypeAdapter, ValidationError

from llama_index_ragonite.explain.attribution import BaseAttributor, CounterfactualAttributor
from llama_index_ragonite.explain.combinations import CombinationExplainer
from llama_index_ragonite.explain.permutations import PermutationExplainer
from llama_index_ragonite.explain.similarity import SimilarityAttributor
from llama_index_ragonite.explain.surrogate import SurrogateAttributor

__all__ = ["ATTRIBUTORS", "METHODS", "RAGE", "checked_options", "option_schema"]

ATTRIBUTORS: Dict[str, Type[BaseAttributor]] = {
    "counterfactual": CounterfactualAttributor,
    "naive": SimilarityAttributor,
    "surrogate": SurrogateAttributor,
}
RAGE = {"combination": CombinationExplainer, "permutation": PermutationExplainer}
METHODS = (*ATTRIBUTORS, *RAGE)

_SEED = (0, 2**31 - 1)
_SOFTMAX_T = (0.001, 10.0)
# the answer distribution costs one call per subset up to its size (210 for size 2 over 20 evidences):
# a request may shrink it or sample it, not grow it past the default
_DISTRIBUTION = {"distribution_size": (0, 2), "distribution_sample": (1, 256), "seed": _SEED}
# choices the panel offers narrower than the explainer's ("attention" needs a local Transformers LLM)
CHOICES = {"relevance": ["retrieval", "none"]}
# method -> option -> (low, high) for numbers, None for choices, booleans and short texts
OPTIONS: Dict[str, Dict[str, Optional[Tuple[float, float]]]] = {
    "counterfactual": {"rounds": (1, 5), "temperature": _SOFTMAX_T, "cluster": None, "spread": None, "claims": None},
    "naive": {"temperature": _SOFTMAX_T},
    "surrogate": {"n_masks": (4, 64), "keep_probability": (0.05, 0.95), "temperature": _SOFTMAX_T, "seed": _SEED},
    "combination": {
        "mode": None,
        "target": None,
        "relevance": None,
        "max_evaluations": (1, 256),
        "max_answer_tokens": (1, 1024),
        **_DISTRIBUTION,
    },
    "permutation": {
        "strategy": None,
        "relevance": None,
        "max_evaluations": (1, 256),
        "n_random": (0, 64),
        "n_optimal": (0, 16),
        "max_answer_tokens": (1, 1024),
        **_DISTRIBUTION,
    },
}
MAX_TEXT = 500  # a bottom-up target answer


def _explainer(method: str) -> Any:
    return ATTRIBUTORS.get(method) or RAGE[method]


def _kind(annotation: Any) -> Tuple[str, list]:
    """("choice", values) / ("boolean" | "integer" | "number" | "text", []) of a field's type (Optional unwrapped)."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Literal:
        return "choice", list(get_args(annotation))
    return {bool: "boolean", int: "integer", float: "number"}.get(annotation, "text"), []


def option_schema() -> Dict[str, Dict[str, Any]]:
    """For the page: per method, each option's kind, default, bounds or choices and description."""
    schema: Dict[str, Dict[str, Any]] = {}
    for method, allowed in OPTIONS.items():
        fields = _explainer(method).model_fields
        schema[method] = {}
        for name, bounds in allowed.items():
            kind, choices = _kind(fields[name].annotation)
            choices = CHOICES.get(name, choices)
            schema[method][name] = {
                "kind": kind,
                "default": fields[name].default,
                "choices": choices,
                "min": bounds[0] if bounds else None,
                "max": bounds[1] if bounds else None,
                "description": fields[name].description or "",
            }
    return schema


def checked_options(method: str, options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """``options`` for ``method``, checked: only the named ones, within bounds, of a type the explainer
    takes (``ValueError`` saying what is wrong otherwise). ``None`` values mean the default."""
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}: choose one of {', '.join(METHODS)}")
    allowed = OPTIONS[method]
    options = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"{method} takes no option {', '.join(unknown)}: it takes {', '.join(allowed)}")
    for name, value in options.items():
        if name in CHOICES and value not in CHOICES[name]:
            raise ValueError(f"{name} must be one of {', '.join(CHOICES[name])}")
        bounds = allowed[name]
        if isinstance(value, bool) or bounds is None:
            if isinstance(value, str) and len(value) > MAX_TEXT:
                raise ValueError(f"{name} is longer than {MAX_TEXT} characters")
            continue
        if not isinstance(value, (int, float)) or not bounds[0] <= value <= bounds[1]:
            raise ValueError(f"{name} must be a number from {bounds[0]:g} to {bounds[1]:g}")
    fields = _explainer(method).model_fields
    for name, value in options.items():  # as the explainer's own field would (type, constraints)
        field = fields[name]
        try:
            typed = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
            options[name] = TypeAdapter(cast(Any, typed)).validate_python(value, strict=True)
        except ValidationError as err:
            raise ValueError(f"{name}: {err.errors()[0]['msg']}") from None
    return options
