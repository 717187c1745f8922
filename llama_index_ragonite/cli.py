"""``ragonite`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from llama_index.core.schema import MetadataMode

from llama_index_ragonite.contextualizer import SETTINGS, EvidenceContextualizer
from llama_index_ragonite.linearize import LINEARIZERS
from llama_index_ragonite.loaders import PageLoadError, load_pages
from llama_index_ragonite.parser import HTMLEvidenceParser
from llama_index_ragonite.store import StoreError


def _parse_command(args: argparse.Namespace) -> int:
    docs = load_pages(args.path)
    parser, contextualizer = _pipeline_args(args)
    nodes = contextualizer(parser.get_nodes_from_documents(docs, show_progress=len(docs) > 20))
    for node in nodes:
        meta = node.metadata
        if args.json:
            record = {"id": node.node_id, "text": node.get_content(), "metadata": meta}
            record["contextualized"] = node.get_content(MetadataMode.EMBED)
            print(json.dumps(record, ensure_ascii=False))
            continue
        where = f"{meta.get('title') or node.ref_doc_id} #{meta['position']}"
        if "row_index" in meta:
            where += f" (table {meta['table_index']}, row {meta['row_index']})"
        elif "table_index" in meta:
            where += f" (table {meta['table_index']})"
        print(f"=== {meta['evidence_type']} · {where}")
        print(node.get_content(MetadataMode.EMBED))
        print()
    if not args.json:
        counts = {
            t: sum(n.metadata["evidence_type"] == t for n in nodes) for t in ("passage", "list", "table", "table_row")
        }
        summary = ", ".join(f"{v} {k}" for k, v in counts.items())
        print(f"{len(docs)} page(s) -> {len(nodes)} evidences ({summary}); context {args.context}", file=sys.stderr)
    return 0


def _pipeline_args(args: argparse.Namespace):
    parser = HTMLEvidenceParser(table_granularity=args.tables, linearizer=args.linearizer)
    return parser, EvidenceContextualizer.from_setting(args.context)


def _index_command(args: argparse.Namespace) -> int:
    from llama_index_ragonite.store import EvidenceStore

    docs = load_pages(args.source)
    parser, contextualizer = _pipeline_args(args)
    store = EvidenceStore(args.store, parser=parser, contextualizer=contextualizer)
    report = store.ingest(docs, remove_missing=not args.keep_missing, show_progress=not args.quiet)
    print(f"{args.store}: {report} in {sum(report.seconds.values()):.1f} s; {len(store)} evidences indexed")
    return 0


def _search_command(args: argparse.Namespace) -> int:
    from llama_index_ragonite.retriever import HybridRetriever

    retriever = HybridRetriever.from_store(args.store, top_n=args.top)
    for rank, hit in enumerate(retriever.retrieve(args.query), start=1):
        meta = hit.node.metadata
        sides = f"lexical #{hit.lexical_rank or '-'}, dense #{hit.dense_rank or '-'}"
        print(f"{rank:2d}. {hit.score:.4f} ({sides}) {meta.get('title', '')} · {meta['evidence_type']}")
        print("    " + hit.node.get_content()[:300].replace("\n", "\n    "))
    return 0


def _add_pipeline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tables", choices=["rows", "table", "both"], default="both", help="table granularity")
    p.add_argument("--linearizer", choices=sorted(LINEARIZERS), default="verbalized")
    p.add_argument("--context", choices=list(SETTINGS), default="ALL", help="contextualization setting")


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ragonite", description="RAGonite evidence pipeline for wiki pages.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="print a page's evidences (type, position, contextualized text)")
    p.add_argument("path", help="a .html/.json page or a folder of them")
    _add_pipeline_options(p)
    p.add_argument("--json", action="store_true", help="one JSON record per evidence")
    p.set_defaults(func=_parse_command)

    p = sub.add_parser("index", help="build or update a persistent hybrid index (Chroma + BM25) from pages")
    p.add_argument("source", help="a .html/.json page or a folder of them")
    p.add_argument("--store", required=True, help="index folder (created if missing)")
    _add_pipeline_options(p)
    p.add_argument("--keep-missing", action="store_true", help="keep indexed pages that are not in SOURCE")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_index_command)

    p = sub.add_parser("search", help="hybrid retrieval from an index built by `ragonite index`")
    p.add_argument("query")
    p.add_argument("--store", required=True)
    p.add_argument("--top", type=int, default=5)
    p.set_defaults(func=_search_command)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = build_arg_parser().parse_args(argv)
    try:
        return args.func(args)
    except (PageLoadError, StoreError, ValueError) as err:
        print(f"ragonite: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
