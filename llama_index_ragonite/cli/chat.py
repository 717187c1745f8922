"""``ragonite ask`` and ``chat``, and how a turn and its attribution read as text.

Each conversation belongs to the ``--as`` user it was started under (to nobody without ``--as``), and is
opened, listed and continued only under that same ``--as``: another user's conversation is "no such
conversation", as an unknown id is. That keeps users' histories apart and a conversation's history read
under its own user's permissions; it is no authentication: whoever runs the CLI holds the store files.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from llama_index_ragonite.cli.access import add_principal_arguments, principal_of
from llama_index_ragonite.cli.models import add_model_arguments
from llama_index_ragonite.errors import UnknownConversationError
from llama_index_ragonite.models.specs import embedding_from_spec, llm_from_spec


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
    from llama_index_ragonite.explain.query_engine import explain_response, nothing_to_explain

    nothing = nothing_to_explain(str(response.response or ""), len(response.source_nodes))
    if nothing:  # the web API's words: uniform shares of an answer that rests on no evidence would mislead
        return f"({nothing})"
    attribution = explain_response(response, CounterfactualAttributor.from_engine(engine))
    if chart:
        attribution.plot(chart)
    return render_attribution(attribution) + (f"\nChart: {chart}" if chart else "")


def _models(args: argparse.Namespace):
    """(LLM, embedding model) from ``--llm`` / ``--embedding``; the LLM first, as its spec fails faster."""
    return llm_from_spec(args.llm), embedding_from_spec(args.embedding)


def _owned(chats, conversation_id: str, user: Optional[str]) -> bool:
    """Whether the conversation exists and is ``user``'s (``--as``; ``None``: one of nobody's)."""
    try:
        return chats.get_owner(conversation_id) == user
    except UnknownConversationError:
        return False


def _no_such(chats, conversation_id: str) -> UnknownConversationError:
    return UnknownConversationError(f"No conversation with id {conversation_id!r} in {chats.path}")


def _check_owner(chats, conversation_id: str, user: Optional[str]) -> None:
    """A new conversation, or ``user``'s own; another user's is an unknown id (``_no_such``)."""
    try:
        owner = chats.get_owner(conversation_id)
    except UnknownConversationError:
        return
    if owner != user:
        raise _no_such(chats, conversation_id)


def _chat(engine, chats, conversation_id: str, user: Optional[str], message: str):
    """One turn, in a conversation that is ``user``'s from its first message on."""
    if user:
        chats.set_owner(conversation_id, user)
    return engine.chat(message)


def _chat_engine(args: argparse.Namespace, conversation_id: str, models):
    from llama_index_ragonite.chat.chat_db import default_history_file
    from llama_index_ragonite.chat.chat_store import SQLiteChatStore
    from llama_index_ragonite.chat.engine import RagoniteChatEngine

    llm, embed_model = models
    chats = SQLiteChatStore(args.conversations or default_history_file(args.store))
    _check_owner(chats, conversation_id, args.as_user)
    engine = RagoniteChatEngine.from_store(
        args.store,
        llm=llm,
        embed_model=embed_model,
        chat_store=chats,
        conversation_id=conversation_id,
        principal=principal_of(args),
    )
    return engine, chats


def _ask_command(args: argparse.Namespace) -> int:
    """One question, one answer. Without ``--conversation`` nothing is read or stored: an earlier
    ask must not complete this one (a silent shared conversation poisoned unrelated questions)."""
    if args.conversation is None:
        from llama_index_ragonite.chat.engine import RagoniteChatEngine

        llm, embed_model = _models(args)
        engine = RagoniteChatEngine.from_store(
            args.store, llm=llm, embed_model=embed_model, principal=principal_of(args)
        )
        response = engine.chat(args.question)
    else:
        engine, chats = _chat_engine(args, args.conversation, _models(args))
        response = _chat(engine, chats, args.conversation, args.as_user, args.question)
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
    last: Optional[Any] = None  # the last turn's response
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
                wanted = line.split(maxsplit=1)[1] if line.startswith("/open ") else uuid.uuid4().hex[:8]
                if line.startswith("/open ") and not _owned(chats, wanted, args.as_user):
                    print(f"ragonite: {_no_such(chats, wanted)}; /history lists the conversations")
                    continue  # still in the conversation it was in
                engine, chats = _chat_engine(args, wanted, models)
                conversation = wanted
                print(f"Conversation {conversation}")
            elif line == "/history":
                for info in (i for i in chats.list_conversations() if _owned(chats, i.id, args.as_user)):
                    print(f"{info.id}  {info.message_count:3d} messages  {info.title}")
            elif line.startswith("/"):
                print(CHAT_HELP)
            else:
                trace.clear()
                last = _chat(engine, chats, conversation, args.as_user, line)
                print(render_turn(last))
    return 0


def add_commands(sub: Any) -> None:
    """``ask`` and ``chat`` on the ``ragonite`` subparsers."""
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
        add_principal_arguments(p)
        p.set_defaults(func=_ask_command if name == "ask" else _chat_command)
