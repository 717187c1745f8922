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


def _parse_command(args: argparse.Namespace) -> int:
    docs = load_pages(args.path)
    parser = HTMLEvidenceParser(table_granularity=args.tables, linearizer=args.linearizer)
    nodes = parser.get_nodes_from_documents(docs, show_progress=len(docs) > 20)
    EvidenceContextualizer.from_setting(args.context)(nodes)
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


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ragonite", description="RAGonite evidence pipeline for wiki pages.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="print a page's evidences (type, position, contextualized text)")
    p.add_argument("path", help="a .html/.json page or a folder of them")
    p.add_argument("--tables", choices=["rows", "table", "both"], default="both", help="table granularity")
    p.add_argument("--linearizer", choices=sorted(LINEARIZERS), default="verbalized")
    p.add_argument("--context", choices=list(SETTINGS), default="ALL", help="contextualization setting")
    p.add_argument("--json", action="store_true", help="one JSON record per evidence")
    p.set_defaults(func=_parse_command)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = build_arg_parser().parse_args(argv)
    try:
        return args.func(args)
    except PageLoadError as err:
        print(f"ragonite: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
