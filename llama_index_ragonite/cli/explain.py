"""``ragonite explain``: answer one question over a store, then explain the answer by one method.

``counterfactual`` (the paper's attribution), ``naive`` (similarity), ``surrogate``
(ContextCite-style) attribute the answer to its evidences; ``combinations`` and
``permutations`` are RAGE's explanations (with the answer-counterfactuals table and the answer
distribution). The text view is printed; ``--chart`` writes the chart (PNG or SVG).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, Type

from llama_index_ragonite.cli.models import add_model_arguments
from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec

__all__ = ["METHODS", "add_arguments", "build_explainer", "run"]

METHODS = ("counterfactual", "naive", "surrogate", "combinations", "permutations")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("question")
    p.add_argument("--store", required=True, help="index folder built by `ragonite index`")
    p.add_argument("--method", choices=METHODS, default="counterfactual", help="default: %(default)s")
    p.add_argument("--chart", default=None, metavar="FILE", help="also write the chart (.png or .svg)")
    add_model_arguments(p)
    rage = p.add_argument_group("combinations and permutations")
    rage.add_argument("--mode", choices=["top-down", "bottom-up"], default="top-down", help="combinations")
    rage.add_argument(
        "--target", default=None, help="the answer to reach (bottom-up default: the original; top-down: any change)"
    )
    rage.add_argument(
        "--strategy", choices=["kendall", "random", "optimal", "optimal+random"], default="kendall", help="permutations"
    )
    rage.add_argument(
        "--distribution-size", type=int, default=2, metavar="M", help="answer distribution up to size M (0: none)"
    )
    rage.add_argument("--sample", type=int, default=None, metavar="S", help="a random sample of S for the distribution")
    rage.add_argument("--seed", type=int, default=0)
    rage.add_argument(
        "--max-answer-tokens", type=int, default=None, metavar="N", help="the LLM's max_tokens per regenerated answer"
    )
    rage.add_argument("--relevance", choices=["retrieval", "attention", "none"], default="retrieval")
    rage.add_argument(
        "--attention-model",
        default=None,
        metavar="NAME_OR_DIR",
        help="Transformers causal LM for --relevance attention",
    )


def build_explainer(args: argparse.Namespace, engine: Any) -> Any:
    """The explainer ``args.method`` names, on the chat engine's own LLM and answer prompt."""
    if args.method in ("counterfactual", "naive", "surrogate"):
        from llama_index_ragonite.explain.attribution import BaseAttributor, CounterfactualAttributor
        from llama_index_ragonite.explain.similarity import SimilarityAttributor
        from llama_index_ragonite.explain.surrogate import SurrogateAttributor

        attributor: Dict[str, Type[BaseAttributor]] = {
            "counterfactual": CounterfactualAttributor,
            "naive": SimilarityAttributor,
            "surrogate": SurrogateAttributor,
        }
        return attributor[args.method].from_engine(engine)
    attention = None
    if args.relevance == "attention" and args.attention_model:
        from llama_index_ragonite.explain.attention import AttentionRelevance

        attention = AttentionRelevance.from_pretrained(args.attention_model)
    common = {"llm": engine.llm, "prompt": engine.answer_prompt, "relevance": args.relevance, "attention": attention}
    common.update(distribution_size=args.distribution_size, distribution_sample=args.sample, seed=args.seed)
    common.update(max_answer_tokens=args.max_answer_tokens)
    if args.method == "combinations":
        from llama_index_ragonite.explain.combinations import CombinationExplainer

        return CombinationExplainer(mode=args.mode, target=args.target, **common)
    from llama_index_ragonite.explain.permutations import PermutationExplainer

    return PermutationExplainer(strategy=args.strategy, **common)


def run(args: argparse.Namespace) -> int:
    from llama_index_ragonite.chat.engine import RagoniteChatEngine

    llm, embed_model = llm_from_spec(args.llm), embedding_from_spec(args.embedding)
    engine = RagoniteChatEngine.from_store(args.store, llm=llm, embed_model=embed_model)
    explainer = build_explainer(args, engine)  # option errors before the question is answered
    response = engine.chat(args.question)
    print(f"Completed question: {response.completed_question}")
    print(f"Answer: {response.response}")
    if not response.source_nodes:
        print("No evidence was retrieved: there is nothing to explain.")
        return 0
    result = explainer.explain(response.completed_question, response.source_nodes, response.response)
    print(result.to_text())
    for i, hit in enumerate(response.source_nodes, 1):
        meta = hit.node.metadata
        where = " > ".join(x for x in (meta.get("title"), meta.get("heading_path")) if x)
        print(f"  Evidence {i} = {where} ({meta.get('evidence_type', 'text')}) {meta.get('url') or ''}".rstrip())
    if args.chart:
        print(f"Chart: {result.plot(args.chart)}")
    return 0
