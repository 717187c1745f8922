"""``ragonite``: the command line. Every ``argparse`` and every ``print`` of the package is here;
the stages return results and raise errors."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from llama_index_ragonite.cli import access, chat, pages
from llama_index_ragonite.cli.chat import render_attribution, render_turn
from llama_index_ragonite.errors import (
    ChatStoreError,
    ConfluenceError,
    LLMCallError,
    PageLoadError,
    StoreError,
    UnknownConversationError,
)
from llama_index_ragonite.models.specs import preload_embedding

__all__ = ["build_arg_parser", "main", "render_attribution", "render_turn"]


def build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ragonite", description="RAGonite evidence pipeline for wiki pages.")
    sub = ap.add_subparsers(dest="command", required=True)
    pages.add_commands(sub)
    chat.add_commands(sub)

    from llama_index_ragonite.cli import serve

    p = sub.add_parser("serve", help="the web app and REST API over one or more stores (FastAPI; [web] extra)")
    serve.add_arguments(p)
    p.set_defaults(func=serve.run)

    access.add_users_commands(sub)

    from llama_index_ragonite.cli import bench

    p = sub.add_parser("bench", help="ConfQuestions benchmark suite: the paper's Tables 2 and 4, resumable")
    bench.add_arguments(p)
    p.set_defaults(func=bench.run)

    from llama_index_ragonite.cli import explain

    p = sub.add_parser("explain", help="answer a question over an index and explain the answer (5 methods)")
    explain.add_arguments(p)
    p.set_defaults(func=explain.run)
    return ap


def main(argv: Optional[List[str]] = None) -> int:
    args = build_arg_parser().parse_args(argv)
    loading = preload_embedding(getattr(args, "embedding", None))  # the model loads while the command imports
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
    finally:
        if loading is not None:  # not mid-load at exit (a command that failed early)
            loading.join()
