"""``ragonite`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from llama_index.core.schema import MetadataMode

from llama_index_ragonite.chat.chat_store import ChatStoreError, UnknownConversationError
from llama_index_ragonite.chat.engine import LLMCallError
from llama_index_ragonite.errors import ConfluenceError
from llama_index_ragonite.index.confluence_sync import add_confluence_arguments
from llama_index_ragonite.index.store import StoreError
from llama_index_ragonite.models.specs import add_model_arguments, embedding_from_spec, llm_from_spec
from llama_index_ragonite.parsing.contextualizer import SETTINGS, EvidenceContextualizer
from llama_index_ragonite.parsing.linearize import LINEARIZERS
from llama_index_ragonite.parsing.loaders import PageLoadError, load_pages
from llama_index_ragonite.parsing.parser import HTMLEvidenceParser


def _parse_command(args: argparse.Namespace) -> int:
    docs = load_pages(args.path, strict=args.strict, follow_symlinks=args.follow_symlinks)
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
    from llama_index_ragonite.index.confluence_sync import confluence_index_command, is_confluence_source
    from llama_index_ragonite.index.store import EvidenceStore

    if is_confluence_source(args):
        return confluence_index_command(args, *_pipeline_args(args), **_vector_store_options(args))
    # the store folder is never read as pages, even when it lies inside the source folder
    docs = load_pages(args.source, strict=args.strict, follow_symlinks=args.follow_symlinks, exclude=[args.store])
    parser, contextualizer = _pipeline_args(args)
    store = EvidenceStore(args.store, parser=parser, contextualizer=contextualizer, **_vector_store_options(args))
    report = store.ingest(
        docs, remove_missing=not args.keep_missing, show_progress=not args.quiet, allow_removal=args.prune
    )
    print(f"{args.store}: {report} in {sum(report.seconds.values()):.1f} s; {len(store)} evidences indexed")
    return 0


def _vector_store_options(args: argparse.Namespace) -> dict:
    """``EvidenceStore`` keywords for ``--chroma-server`` / ``--chroma-collection`` (none: embedded Chroma)."""
    if not args.chroma_server:
        if args.chroma_collection:
            raise ValueError("--chroma-collection needs --chroma-server HOST:PORT")
        return {}
    from llama_index_ragonite.index.chroma_access import chroma_http_client
    from llama_index_ragonite.index.store import COLLECTION

    return {"chroma_client": chroma_http_client(args.chroma_server), "collection": args.chroma_collection or COLLECTION}


def _add_vector_store_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--chroma-server",
        metavar="HOST:PORT",
        help="keep the vectors on this Chroma server (`chroma run`) instead of the store folder's embedded database;"
        " the BM25 and latent-term files stay in --store (see docs/deployment.md)",
    )
    p.add_argument("--chroma-collection", metavar="NAME", help="the collection on --chroma-server (default: ragonite)")


def _check_command(args: argparse.Namespace) -> int:
    from llama_index_ragonite.index.store import EvidenceStore

    store_path = Path(args.store)
    if not (store_path / "manifest.json").is_file():
        raise StoreError(f"{store_path}: not a store (no manifest.json); build one with `ragonite index`")
    report = EvidenceStore(store_path, **_vector_store_options(args)).check(repair=args.repair)
    print(report)
    if args.repair and not report.ok:
        print(f"Repaired: run `ragonite index SOURCE --store {args.store}` to index the dropped pages again")
    return 0 if report.ok or args.repair else 1


def _search_command(args: argparse.Namespace) -> int:
    from llama_index_ragonite.retrieval.retriever import HybridRetriever

    retriever = HybridRetriever.from_store(args.store, top_n=args.top)
    for rank, hit in enumerate(retriever.retrieve(args.query), start=1):
        meta = hit.node.metadata
        sides = ", ".join(
            f"{side} #{getattr(hit, side + '_rank') or '-'}" for side in ("lexical", "dense", "latent", "title")
        )
        print(f"{rank:2d}. {hit.score:.4f} ({sides}) {meta.get('title', '')} · {meta['evidence_type']}")
        print("    " + hit.node.get_content()[:300].replace("\n", "\n    "))
    return 0


def render_turn(response, show_sources: bool = True) -> str:
    """A chat turn as text: completed question, answer, any warning, the cited sources (or all, if none cited)."""
    lines = [f"Completed question: {response.completed_question}", f"Answer: {response.response}"]
    if response.turn.warning:  # e.g. citations of sources that do not exist, a garbled LLM reply
        lines.append(f"Warning: {response.turn.warning}")
    if show_sources and response.source_nodes:
        cited = response.turn.cited
        lines.append("Cited sources:" if cited else "Sources (none cited):")
        for i in cited or range(1, min(3, len(response.source_nodes)) + 1):
            lines.append("  " + _source_line(i, response.source_nodes[i - 1]))
    if response.turn.follow_ups:
        lines.append("You could also ask: " + " | ".join(response.turn.follow_ups))
    return "\n".join(lines)


def _source_line(i: int, hit) -> str:
    meta = hit.node.metadata
    where = " > ".join(x for x in (meta.get("title"), meta.get("heading_path")) if x)
    return f"[Source {i}] {where} ({meta.get('evidence_type', 'text')}) {meta.get('url') or ''}".rstrip()


def render_attribution(attribution) -> str:
    """The paper's attribution lines, then which source each evidence number is."""
    lines = [f"Counterfactual attribution ({attribution.llm_calls} LLM calls, {attribution.wall_time_s:.1f} s):"]
    claims = attribution.claim_lines()
    shown = attribution.to_text().splitlines()[: -len(claims) or None]  # the claims come last, never cut
    lines += ["  " + line for line in shown[:5]]
    if len(shown) > 5:
        lines.append(f"  … and {len(shown) - 5} more lines")
        tie = attribution.tie_note()
        if tie:  # the last line of to_text: never cut
            lines.append("  " + tie)
    lines += ["  " + line for line in claims]
    changed = [c for c in attribution.clusters if not c.failed and c.contribution and c.contribution > 1e-6]
    if attribution.method == "counterfactual" and attribution.clusters and not changed and attribution.complete:
        lines.append("  No single removal changed the answer: several evidences state it (e.g. a table and its rows).")
    top = attribution.ranking()[:5]  # and every failed evidence: the first line names them
    for i in top + [i for i in attribution.failed_evidences if i not in top]:
        lines.append(f"  Evidence {i + 1} = " + _source_line(i + 1, attribution.nodes[i]))
    return "\n".join(lines)


def _explain(engine, response, chart: Optional[str] = None) -> str:
    from llama_index_ragonite.explain.attribution import CounterfactualAttributor
    from llama_index_ragonite.explain.query_engine import explain_response

    attribution = explain_response(response, CounterfactualAttributor.from_engine(engine))
    if chart:
        attribution.plot(chart)
    return render_attribution(attribution) + (f"\nChart: {chart}" if chart else "")


def _models(args: argparse.Namespace):
    """(LLM, embedding model) from ``--llm`` / ``--embedding``; the LLM first, as its spec fails faster."""
    return llm_from_spec(args.llm), embedding_from_spec(args.embedding)


def _chat_engine(args: argparse.Namespace, conversation_id: str, models):
    from llama_index_ragonite.chat.chat_db import default_history_file
    from llama_index_ragonite.chat.chat_store import SQLiteChatStore
    from llama_index_ragonite.chat.engine import RagoniteChatEngine

    llm, embed_model = models
    chats = SQLiteChatStore(args.conversations or default_history_file(args.store))
    engine = RagoniteChatEngine.from_store(
        args.store, llm=llm, embed_model=embed_model, chat_store=chats, conversation_id=conversation_id
    )
    return engine, chats


def _ask_command(args: argparse.Namespace) -> int:
    """One question, one answer. Without ``--conversation`` nothing is read or stored: an earlier
    ask must not complete this one (a silent shared conversation poisoned unrelated questions)."""
    if args.conversation is None:
        from llama_index_ragonite.chat.engine import RagoniteChatEngine

        llm, embed_model = _models(args)
        engine = RagoniteChatEngine.from_store(args.store, llm=llm, embed_model=embed_model)
    else:
        engine, _ = _chat_engine(args, args.conversation, _models(args))
    response = engine.chat(args.question)
    print(render_turn(response))
    if args.explain:
        print(_explain(engine, response))
    return 0


CHAT_HELP = """Commands: /sources (all sources of the last answer), /trace (behind the scenes of the last turn),
/explain [CHART.png|.svg] (which evidences caused the last answer), /new (start a new conversation), /history (list conversations), /open ID (continue one), /quit"""


def _chat_command(args: argparse.Namespace) -> int:
    import uuid

    from llama_index_ragonite.chat.trace import TraceRecorder

    conversation = args.conversation or uuid.uuid4().hex[:8]
    models = _models(args)
    engine, chats = _chat_engine(args, conversation, models)
    print(f"Conversation {conversation} over {args.store} (LLM: {args.llm}). {CHAT_HELP}")
    last = None
    with TraceRecorder.attached() as trace:
        while True:
            try:
                line = input("you> ").strip()
            except (EOFError, OSError, ValueError, RuntimeError):  # end of input, or stdin closed / unreadable
                print()
                break
            if not line:
                continue
            if line in ("/quit", "/exit"):
                break
            if line == "/sources":
                for i, hit in enumerate(last.source_nodes if last else [], 1):
                    print(_source_line(i, hit))
            elif line == "/trace":
                print(trace.render() or "(nothing yet)")
            elif line == "/explain" or line.startswith("/explain "):
                chart = line.split(maxsplit=1)[1] if " " in line else None
                print(_explain(engine, last, chart) if last else "(nothing to explain yet)")
            elif line == "/new" or line.startswith("/open "):
                conversation = line.split(maxsplit=1)[1] if line.startswith("/open ") else uuid.uuid4().hex[:8]
                if line.startswith("/open "):
                    try:
                        chats.get_conversation(conversation)
                    except UnknownConversationError as err:
                        print(f"ragonite: {err}; /history lists the conversations")
                        continue
                engine, chats = _chat_engine(args, conversation, models)
                print(f"Conversation {conversation}")
            elif line == "/history":
                for info in chats.list_conversations():
                    print(f"{info.id}  {info.message_count:3d} messages  {info.title}")
            elif line.startswith("/"):
                print(CHAT_HELP)
            else:
                trace.clear()
                last = engine.chat(line)
                print(render_turn(last))
    return 0


def _add_pipeline_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tables", choices=["rows", "table", "both"], default="both", help="table granularity")
    p.add_argument("--linearizer", choices=sorted(LINEARIZERS), default="verbalized")
    p.add_argument("--context", choices=list(SETTINGS), default="ALL", help="contextualization setting")


def _add_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--strict",
        action="store_true",
        help="a .json/.html file in the folder that is not a page stops the run (default: skipped with a warning)",
    )
    p.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="read symbolic links that lead outside the source folder (default: skipped with a warning)",
    )


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ragonite", description="RAGonite evidence pipeline for wiki pages.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="print a page's evidences (type, position, contextualized text)")
    p.add_argument("path", help="a .html/.json page or a folder of them")
    _add_pipeline_options(p)
    _add_source_options(p)
    p.add_argument("--json", action="store_true", help="one JSON record per evidence")
    p.set_defaults(func=_parse_command)

    p = sub.add_parser("index", help="build or update a persistent hybrid index (Chroma + BM25) from pages")
    p.add_argument(
        "source", help="a .html/.json page, a folder of them, a Confluence space export (.zip), or `confluence`"
    )
    p.add_argument("--store", required=True, help="index folder (created if missing)")
    _add_pipeline_options(p)
    _add_source_options(p)
    p.add_argument("--keep-missing", action="store_true", help="keep indexed pages that are not in SOURCE")
    p.add_argument("--prune", action="store_true", help="allow removing more than half (or all) of the indexed pages")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_confluence_arguments(p)
    _add_vector_store_options(p)
    p.set_defaults(func=_index_command)

    p = sub.add_parser("check", help="compare a store's Chroma, BM25, latent terms and manifest (exit 1: differences)")
    p.add_argument("--store", required=True)
    p.add_argument("--repair", action="store_true", help="drop the pages that differ (then run `ragonite index`)")
    _add_vector_store_options(p)
    p.set_defaults(func=_check_command)

    p = sub.add_parser("search", help="hybrid retrieval from an index built by `ragonite index`")
    p.add_argument("query")
    p.add_argument("--store", required=True)
    p.add_argument("--top", type=int, default=5)
    p.set_defaults(func=_search_command)

    for name, helptext in (("ask", "answer one question with cited sources"), ("chat", "interactive conversation")):
        p = sub.add_parser(name, help=helptext + " over an index (offline extractive answerer by default)")
        if name == "ask":
            p.add_argument("question")
            p.add_argument("--explain", action="store_true", help="also attribute the answer to its evidences")
        p.add_argument("--store", required=True)
        p.add_argument(
            "--conversation",
            default=None,
            help="conversation id: continue it and store this turn in it (ask without it is one-shot:"
            " no earlier turn completes the question, nothing is stored)"
            if name == "ask"
            else "conversation id to continue (default: a new one)",
        )
        p.add_argument(
            "--conversations",
            default=None,
            help="SQLite file (default: STORE/conversations.sqlite, or ~/.local/state/ragonite/ for a read-only store)",
        )
        add_model_arguments(p)
        p.set_defaults(func=_ask_command if name == "ask" else _chat_command)

    from llama_index_ragonite.serve import command as serve

    p = sub.add_parser("serve", help="the web app and REST API over one or more stores (FastAPI; [web] extra)")
    serve.add_arguments(p)
    p.set_defaults(func=serve.run)

    from llama_index_ragonite.bench import command as bench

    p = sub.add_parser("bench", help="ConfQuestions benchmark suite: the paper's Tables 2 and 4, resumable")
    bench.add_arguments(p)
    p.set_defaults(func=bench.run)

    from llama_index_ragonite.explain import command as explain

    p = sub.add_parser("explain", help="answer a question over an index and explain the answer (5 methods)")
    explain.add_arguments(p)
    p.set_defaults(func=explain.run)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = build_arg_parser().parse_args(argv)
    try:
        return args.func(args)
    except (
        PageLoadError,
        StoreError,
        ConfluenceError,
        ValueError,
        UnknownConversationError,
        ChatStoreError,
        LLMCallError,
    ) as err:
        print(f"ragonite: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
