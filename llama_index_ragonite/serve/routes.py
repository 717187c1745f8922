"""The REST API under ``/api`` (see docs/serve.md and the OpenAPI page at ``/docs``).

Routes only translate HTTP to ``Sessions`` calls: every call that touches a model, an index
or a database runs in a worker thread (``anyio.to_thread.run_sync``), so one slow turn or
explanation never stalls the event loop and the other users' requests. A turn first takes a
slot (``TurnSlots``: 429 beyond the per-user and total limits), so turns can never hold every
worker thread. A streamed turn is stopped when its client disconnects or its deadline passes
(``TurnStop``); what was streamed is stored marked truncated, never as a complete answer.
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Annotated, Any, Dict, List, Literal, Optional

import anyio
from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from llama_index_ragonite.chat.engine import MAX_MESSAGE_CHARS
from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.serve.errors import error_payload
from llama_index_ragonite.serve.explain_options import option_schema
from llama_index_ragonite.serve.explaining import explain_turn
from llama_index_ragonite.serve.limits import TurnSlots
from llama_index_ragonite.serve.originals import original_file
from llama_index_ragonite.serve.page_view import page_view
from llama_index_ragonite.serve.reading import reader
from llama_index_ragonite.serve.signin import SESSION_COOKIE
from llama_index_ragonite.serve.turn_control import TurnStop

__all__ = ["router"]

router = APIRouter(prefix="/api")
_running: set = set()  # streaming turns in flight (a task with no reference may be collected)

ConversationId = Annotated[str, Path(max_length=64, description="A conversation id (unknown ones are 404).")]
TurnNumber = Annotated[int, Path(ge=0, le=1_000_000, description="A turn's index in its conversation (0-based).")]


class NewConversation(BaseModel):
    domain: Optional[str] = Field(default=None, description="A configured domain; default: the first.")


class SettingsChange(BaseModel):
    domain: Optional[str] = None
    fusion: Optional[Literal["rrf", "rerank", "rerank+rrf"]] = None
    top_k: Optional[int] = Field(default=None, ge=1, le=20)
    complete_questions: Optional[bool] = None
    llm: Optional[str] = None


class Message(BaseModel):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="The user's turn.")


class ExplainRequest(BaseModel):
    method: Literal["counterfactual", "naive", "surrogate", "combination", "permutation"] = "counterfactual"
    options: Dict[str, Any] = Field(default_factory=dict, description="explain_options.OPTIONS of the method")


class SignInRequest(BaseModel):
    token: str = Field(min_length=1, max_length=1024, description="An access token (--token or the users file).")


class FeedbackRequest(BaseModel):
    rating: Literal[1, -1]
    comment: Optional[str] = Field(default=None, max_length=2000)


def user(request: Request) -> str:
    return request.state.user


def principal(request: Request) -> Optional[Principal]:
    """Who asks, for what they may read (``identities``; None: a caller the app knows only by token or cookie)."""
    return request.state.principal


Who = Annotated[Optional[Principal], Depends(principal)]


def sessions(request: Request) -> Any:
    return request.app.state.sessions


def slots(request: Request) -> TurnSlots:
    return request.app.state.turn_slots


async def off_loop(fn, *args, **kwargs):
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))


async def turn_thread(request: Request, fn, *args):
    """``fn(*args)`` on a worker thread of the turns' own pool: turns never take the threads that
    light requests (listing conversations, opening one) run on."""
    state = request.app.state
    if getattr(state, "turn_limiter", None) is None:  # made on the event loop, as anyio wants
        state.turn_limiter = anyio.CapacityLimiter(state.config.max_turns)
    return await anyio.to_thread.run_sync(partial(fn, *args), limiter=state.turn_limiter)


@router.get("/health")
async def health(request: Request) -> Dict[str, Any]:
    state = sessions(request)
    running = slots(request).in_use  # turns and explanations holding a slot (the server's load)
    return {
        "status": "ok",
        "domains": list(state.stores),
        "version": request.app.version,
        "fusions": state.fusions,
        "turns_running": running,
    }


@router.post("/session", status_code=201)
async def sign_in(request: Request, body: SignInRequest) -> JSONResponse:
    """Trade a token for a session cookie (HttpOnly, SameSite=Strict; ``serve.signin``): the web page's sign-in."""
    signin = request.app.state.signin
    if not signin.required():
        return JSONResponse({"error": "This server asks for no token: no sign-in needed", "kind": "input"}, 409)
    opened = signin.open(body.token.strip())
    if opened is None:
        return JSONResponse({"error": "Wrong access token", "kind": "auth"}, 401, {"WWW-Authenticate": "Bearer"})
    session_id, caller = opened
    if request.cookies.get(SESSION_COOKIE):
        signin.close(request.cookies[SESSION_COOKIE])  # a new sign-in ends the tab's previous session
    principal = caller.principal
    groups = sorted(principal.groups) if principal else []
    response = JSONResponse({"name": caller.name, "groups": groups}, 201)
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        max_age=int(signin.lifetime),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https" or request.headers.get("origin", "").startswith("https://"),
    )
    return response


@router.delete("/session", status_code=204)
async def sign_out(request: Request) -> Response:
    """End this session here (its cookie no longer works, even if kept) and clear the cookie."""
    if request.cookies.get(SESSION_COOKIE):
        request.app.state.signin.close(request.cookies[SESSION_COOKIE])
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/me")
async def me(who: Who) -> Dict[str, Any]:
    """Who the app takes the caller for: a users-file or proxy user's name and groups (None and [] otherwise)."""
    return {"name": who.user if who else None, "groups": sorted(who.groups) if who else []}


@router.get("/domains")
async def domains(request: Request, who: Who) -> List[Dict[str, Any]]:
    return await off_loop(sessions(request).domains, who)


@router.get("/explain/options")
async def explain_options() -> Dict[str, Any]:
    """The explain panel's methods and the options a user may set on each (kinds, defaults, bounds)."""
    return option_schema()


@router.get("/llms")
async def llms(request: Request) -> List[Dict[str, Any]]:
    return sessions(request).llm_list()


@router.post("/conversations", status_code=201)
async def create_conversation(request: Request, body: Optional[NewConversation] = None, owner: str = Depends(user)):
    return await off_loop(sessions(request).create, owner, body.domain if body else None)


@router.get("/conversations")
async def list_conversations(request: Request, include_deleted: bool = False, owner: str = Depends(user)):
    return await off_loop(sessions(request).conversations, owner, include_deleted)


@router.get("/conversations/{conversation_id}")
async def open_conversation(request: Request, conversation_id: ConversationId, who: Who, owner: str = Depends(user)):
    return await off_loop(sessions(request).conversation, owner, conversation_id, turns=True, principal=who)


@router.delete("/conversations/{conversation_id}", status_code=204)
async def delete_conversation(
    request: Request, conversation_id: ConversationId, owner: str = Depends(user)
) -> Response:
    await off_loop(sessions(request).delete, owner, conversation_id)
    return Response(status_code=204)


@router.post("/conversations/{conversation_id}/restore")
async def restore_conversation(request: Request, conversation_id: ConversationId, owner: str = Depends(user)):
    return await off_loop(sessions(request).restore, owner, conversation_id)


@router.put("/conversations/{conversation_id}/settings")
async def change_settings(
    request: Request, conversation_id: ConversationId, body: SettingsChange, owner: str = Depends(user)
):
    return await off_loop(sessions(request).update_settings, owner, conversation_id, body.model_dump())


@router.post("/conversations/{conversation_id}/messages")
async def send_message(
    request: Request,
    conversation_id: ConversationId,
    body: Message,
    who: Who,
    owner: str = Depends(user),
):
    with slots(request).slot(owner):
        return await turn_thread(request, sessions(request).chat, owner, conversation_id, body.message, None, None, who)


@router.post("/conversations/{conversation_id}/messages/stream", response_class=StreamingResponse)
async def stream_message(
    request: Request,
    conversation_id: ConversationId,
    body: Message,
    who: Who,
    owner: str = Depends(user),
):
    """Server-sent events: ``delta`` ({"text"}) while the answer is written, then ``turn`` (or ``error``).

    The turn stops when the client disconnects or ``--turn-deadline`` passes (then an ``error``
    event of kind ``timeout``); its partial answer is stored with ``truncated``.
    """
    state, turn_slots = sessions(request), slots(request)
    turn_slots.take(owner)  # 429 before anything else: a refused turn costs no worker thread
    try:
        await off_loop(state.owned, owner, conversation_id)  # 404 (and 403 below) before the stream starts
        await off_loop(reader, state, who)
    except BaseException:
        turn_slots.give_back(owner)
        raise
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    stop = TurnStop.within(request.app.state.config.turn_deadline)

    def on_delta(text: str) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ("delta", {"text": text}))

    async def turn() -> None:
        try:
            result = await turn_thread(request, state.chat, owner, conversation_id, body.message, on_delta, stop, who)
            await queue.put(("turn", result))
        except Exception as err:  # the stream has started: the error is its last event
            await queue.put(("error", error_payload(err)[1]))
        finally:
            while stop.abandoned is not None and stop.abandoned.is_alive():  # it still holds a thread and the LLM
                await asyncio.sleep(0.2)
            turn_slots.give_back(owner)

    async def watch_disconnect() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        stop.client_gone.set()

    task = asyncio.create_task(turn())  # started here: it ends (and frees its slot) even if no event is ever sent
    _running.add(task)
    task.add_done_callback(_running.discard)

    async def events():
        watcher = asyncio.create_task(watch_disconnect())
        try:
            while True:
                event, data = await queue.get()
                yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
                if event != "delta":
                    break
        finally:  # the stream ended, failed, or its client left: a turn still running stops
            stop.client_gone.set()
            watcher.cancel()

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


@router.post("/conversations/{conversation_id}/turns/{number}/explain")
async def explain(
    request: Request,
    conversation_id: ConversationId,
    number: TurnNumber,
    body: ExplainRequest,
    who: Who,
    owner: str = Depends(user),
):
    with slots(request).slot(owner):  # an explanation is many LLM calls: it counts as a running turn
        return await turn_thread(
            request, explain_turn, sessions(request), owner, conversation_id, number, body.method, body.options, who
        )


@router.get("/conversations/{conversation_id}/turns/{number}/sources/{source}/page")
async def source_page(
    request: Request,
    conversation_id: ConversationId,
    number: TurnNumber,
    source: Annotated[int, Path(ge=1, le=1000, description="A source's number in its turn (1-based).")],
    who: Who,
    owner: str = Depends(user),
):
    """The page a source of the turn came from, as the parser read it, with the source marked."""
    return await off_loop(page_view, sessions(request), owner, conversation_id, number, source, who)


@router.get("/conversations/{conversation_id}/turns/{number}/sources/{source}/original")
async def source_original(
    request: Request,
    conversation_id: ConversationId,
    number: TurnNumber,
    source: Annotated[int, Path(ge=1, le=1000, description="A source's number in its turn (1-based).")],
    who: Who,
    owner: str = Depends(user),
):
    """An attachment source's original file (a PDF opens inline, others download), to a caller who may read
    the turn's pages (its container page's permissions)."""
    path, media_type = await off_loop(original_file, sessions(request), owner, conversation_id, number, source, who)
    inline = media_type == "application/pdf"
    headers = {"Cache-Control": "private"}  # nosniff and the CSP: the app sets them on every response
    return FileResponse(
        path,
        media_type=media_type,
        headers=headers,
        filename=path.name,
        content_disposition_type="inline" if inline else "attachment",
    )


@router.post("/conversations/{conversation_id}/turns/{number}/feedback", status_code=201)
async def feedback(
    request: Request,
    conversation_id: ConversationId,
    number: TurnNumber,
    body: FeedbackRequest,
    owner: str = Depends(user),
):
    return await off_loop(sessions(request).feedback, owner, conversation_id, number, body.rating, body.comment)
