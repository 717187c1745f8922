"""``ragonite parse``, ``index`` (pages or Confluence), ``check`` and ``search``: arguments in, printed results out."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from llama_index_ragonite.cli.access import add_principal_arguments, principal_of, space_readers_of
from llama_index_ragonite.errors import StoreError
from llama_index_ragonite.parsing.context_settings import SETTINGS
from llama_index_ragonite.parsing.linearize import LINEARIZERS

# The stages load LlamaIndex, Chroma, the HTML parsers: each command imports what it runs, so that
# ``ragonite --help`` and argument errors load none of them (tests/test_startup.py).
if TYPE_CHECKING:
    from llama_index_ragonite.retrieval.fused import FusedNode


def _parse_command(args: argparse.Namespace) -> int:
    from llama_index.core.schema import MetadataMode

    from llama_index_ragonite.parsing.loaders import load_pages

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
    from llama_index_ragonite.parsing.contextualizer import EvidenceContextualizer
    from llama_index_ragonite.parsing.parser import HTMLEvidenceParser

    parser = HTMLEvidenceParser(table_granularity=args.tables, linearizer=args.linearizer)
    return parser, EvidenceContextualizer.from_setting(args.context)


def _index_command(args: argparse.Namespace) -> int:
    from llama_index_ragonite.index.store import EvidenceStore
    from llama_index_ragonite.parsing.loaders import load_pages

    if is_confluence_source(args):
        return confluence_index_command(args, *_pipeline_args(args), **_vector_store_options(args))
    # the store folder is never read as pages, even when it lies inside the source folder
    skipped: dict = {}  # pages that no longer load: one indexed before keeps its previous version
    docs = load_pages(
        args.source, strict=args.strict, follow_symlinks=args.follow_symlinks, exclude=[args.store], skipped=skipped
    )
    parser, contextualizer = _pipeline_args(args)
    store = EvidenceStore(args.store, parser=parser, contextualizer=contextualizer, **_vector_store_options(args))
    report = store.ingest(
        docs,
        remove_missing=not args.keep_missing,
        show_progress=not args.quiet,
        allow_removal=args.prune,
        failed=skipped,
    )
    print(f"{args.store}: {report} in {sum(report.seconds.values()):.1f} s; {len(store)} evidences indexed")
    for doc_id, why in sorted(report.kept.items()):
        print(f"{doc_id}: kept the previous version: {why}")
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

    retriever = HybridRetriever.from_store(args.store, top_n=args.top, principal=principal_of(args))
    for rank, hit in enumerate(retriever.retrieve(args.query), start=1):
        meta = hit.node.metadata
        sides = ", ".join(f"{side} #{cast('FusedNode', hit).ranks.get(side) or '-'}" for side in retriever.sides)
        print(f"{rank:2d}. {hit.score:.4f} ({sides}) {meta.get('title', '')} · {meta['evidence_type']}")
        print("    " + hit.node.get_content()[:300].replace("\n", "\n    "))
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


# -- `ragonite index confluence` ------------------------------------------------------------
CONFLUENCE_SOURCE = "confluence"
_SCOPE_OPTIONS = ("url", "space", "page_id", "cql")


def add_confluence_arguments(p: Any) -> None:
    """The options of ``ragonite index confluence`` (an argparse parser)."""
    p.add_argument("--url", help="Confluence base URL (https://SITE.atlassian.net/wiki; default $CONFLUENCE_URL)")
    p.add_argument("--space", help="Confluence: sync every page of this space key")
    p.add_argument("--page-id", action="append", default=[], help="Confluence: sync this page (repeatable)")
    p.add_argument("--cql", help="Confluence: sync the pages this CQL query finds")
    p.add_argument("--children", action="store_true", help="Confluence: also the child pages of --page-id/--cql")
    p.add_argument(
        "--request-deadline",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="Confluence: give up on one request after this long, however slowly it trickles in (default: %(default)s)",
    )
    p.add_argument(
        "--run-deadline",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Confluence: give up on the whole sync after this long (default: no limit)",
    )
    p.add_argument(
        "--max-requests",
        type=int,
        default=100_000,
        metavar="N",
        help="Confluence: give up after this many requests in one sync (default: %(default)s)",
    )
    p.add_argument(
        "--space-readers",
        action="append",
        default=[],
        metavar="KEY=GROUP,…",
        help="Confluence: who may view space KEY, used only when the account cannot read its permissions whole"
        " (KEY=* : anyone; where Confluence answers, its answer wins)",
    )
    p.add_argument("--no-attachments", action="store_true", help="Confluence: sync page bodies only, no attachments")
    p.add_argument(
        "--attachment-types",
        default="pdf,docx,xlsx,pptx,csv,md,txt",
        metavar="SUFFIX,…",
        help="Confluence: the attachment types to index (default: %(default)s)",
    )
    p.add_argument(
        "--attachment-max-mb",
        type=float,
        default=50.0,
        metavar="MB",
        help="Confluence: skip attachments larger than this (default: %(default)s MB)",
    )
    p.add_argument(
        "--comments", action="store_true", help="Confluence: also index page comments (footer and inline, replies)"
    )
    p.add_argument(
        "--no-resolved-comments", action="store_true", help="Confluence, with --comments: leave resolved ones out"
    )
    p.add_argument(
        "--allow-unreadable",
        action="store_true",
        help="Confluence: exit 0 even when some pages' permissions could not be read (they are still printed and"
        " readable by nobody; default: exit 1)",
    )


def is_confluence_source(args: Any) -> bool:
    """``SOURCE`` is Confluence when it is the word ``confluence`` and a Confluence option is given; a
    folder named ``confluence`` without them is a folder. The options with another SOURCE are an error."""
    scoped = any(getattr(args, option, None) for option in _SCOPE_OPTIONS)
    if scoped and args.source != CONFLUENCE_SOURCE:
        raise ValueError("--url, --space, --page-id and --cql go with `ragonite index confluence`, not a path")
    return scoped


def confluence_index_command(args: Any, parser: Any, contextualizer: Any, **store_kwargs: Any) -> int:
    """``ragonite index confluence --url URL --space KEY --store DIR``: one incremental sync.

    ``store_kwargs``: passed to ``EvidenceStore`` (a Chroma server's client and collection)."""
    if not (args.space or args.page_id or args.cql):
        raise ValueError("Say what to sync: --space KEY, --page-id ID or --cql QUERY")
    scope = dict(url=args.url, space_key=args.space, page_ids=args.page_id, cql=args.cql)
    options = dict(show_progress=not args.quiet, allow_removal=args.prune, remove_missing=not args.keep_missing)
    limits = dict(
        request_deadline=args.request_deadline, run_deadline=args.run_deadline, max_requests=args.max_requests
    )
    for option, value in (("--request-deadline", args.request_deadline), ("--run-deadline", args.run_deadline)):
        if value is not None and not 0 < value < float("inf"):  # nan too
            raise ValueError(f"{option} must be a positive number of seconds, not {value}")
    if args.max_requests < 1:
        raise ValueError("--max-requests must be at least 1")
    from llama_index_ragonite.index.confluence_sync import sync_confluence

    report = sync_confluence(
        args.store,
        **scope,
        include_children=args.children,
        limits=limits,
        **options,
        parser=parser,
        contextualizer=contextualizer,
        space_readers=space_readers_of(args.space_readers),
        attachments=_attachment_options(args),
        comments=_comment_options(args),
        **store_kwargs,
    )
    seconds = sum(report.seconds.values())
    print(f"{args.store}: {report} in {seconds:.1f} s")
    for key, why in sorted(report.named_spaces.items()):
        print(f"space {key}: viewers from --space-readers ({why})")
    for key in report.ignored_space_readers:
        print(f"space {key}: --space-readers not used: Confluence's own permissions were read")
    for doc_id, why in sorted(report.unreadable.items()):
        print(f"readable by nobody: {doc_id}: {why}")
    for name, why in sorted({**report.attachments_skipped, **report.attachments_failed}.items()):
        print(f"attachment not synced: {name}: {why}")
    for name, why in sorted(report.comments_failed.items()):
        print(f"comments not synced: {name}: {why}")
    if report.unreadable and not args.allow_unreadable:
        print(
            f"ragonite: {len(report.unreadable)} page(s) readable by nobody (their permissions could not be read);"
            " exit 1 (--allow-unreadable: exit 0)",
            file=sys.stderr,
        )
        return 1
    return 0


def _attachment_options(args: Any) -> Any:
    from llama_index_ragonite.index.confluence_attachments import AttachmentOptions
    from llama_index_ragonite.parsing.confluence.attachments import DEFAULT_MEDIA_TYPES

    suffixes = {"." + s.strip().lower().lstrip(".") for s in args.attachment_types.split(",") if s.strip()}
    unknown = suffixes - set(DEFAULT_MEDIA_TYPES.values())
    if unknown:
        raise ValueError(f"--attachment-types: not a type read: {', '.join(sorted(unknown))}")
    if not 0 < args.attachment_max_mb < float("inf"):
        raise ValueError("--attachment-max-mb must be a positive number")
    types = {media: suffix for media, suffix in DEFAULT_MEDIA_TYPES.items() if suffix in suffixes}
    return AttachmentOptions(not args.no_attachments, types, int(args.attachment_max_mb * 1000 * 1000))


def _comment_options(args: Any) -> Any:
    from llama_index_ragonite.index.confluence_comments import CommentOptions

    return CommentOptions(enabled=args.comments, resolved=not args.no_resolved_comments)


def add_commands(sub: Any) -> None:
    """``parse``, ``index``, ``check`` and ``search`` on the ``ragonite`` subparsers."""
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
    add_principal_arguments(p)
    p.set_defaults(func=_search_command)
