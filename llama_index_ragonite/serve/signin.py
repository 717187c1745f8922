"""Tokens to callers, sent as a bearer header or exchanged once for a session cookie (the web page's sign-in).

Why a session: the page must never keep the token where a script can read it. ``POST /api/session``
trades a token for a random session id in the ``ragonite_session`` cookie (HttpOnly, SameSite=Strict,
``SESSION_SECONDS``); ``DELETE /api/session`` ends it here and clears the cookie.

* The server keeps, per session, only the SHA-256 of its id and the SHA-256 of the token it was opened
  with, in memory: a restart ends every session (the page asks for the token again), and a replica knows
  only its own (replicas already need sticky sessions for their conversations).
* A session names no user. Every request maps its token's hash to a caller again, against the users file
  as it is now (``UsersFile.current()``): a user removed or given a new token is refused at the next
  request, and changed groups apply at once.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from llama_index_ragonite.index.access import Principal
from llama_index_ragonite.serve.identities import UsersFile, owner_of, token_owner, token_sha256

__all__ = ["MAX_SESSIONS", "SESSION_COOKIE", "SESSION_SECONDS", "Caller", "SignIn"]

SESSION_COOKIE = "ragonite_session"
SESSION_SECONDS = 12 * 3600  # a working day; then the page asks for the token again
MAX_SESSIONS = 10_000  # beyond, the oldest sessions end first (memory stays bounded)


@dataclass(frozen=True)
class Caller:
    """Who a token names now: the owner id of their conversations, and for a users-file user a principal."""

    owner: str
    principal: Optional[Principal] = None
    name: Optional[str] = None


@dataclass
class _Session:
    token_hash: str
    expires: float


class SignIn:
    """Callers by token or by session (see the module doc); thread-safe, sessions in memory."""

    def __init__(
        self,
        tokens: Iterable[str],
        users: Optional[UsersFile] = None,
        lifetime: float = SESSION_SECONDS,
        clock=time.monotonic,
    ) -> None:
        self.token_hashes = [token_sha256(t) for t in tokens]
        self.users, self.lifetime, self.clock = users, lifetime, clock
        self._sessions: Dict[str, _Session] = {}  # key: SHA-256 of the session id
        self._lock = threading.Lock()

    def required(self) -> bool:
        """Whether callers must present a token: with ``--token`` or a users file, even one emptied while the
        server runs (then nobody gets in; never everybody, as a server without tokens would let them)."""
        return bool(self.token_hashes) or self.users is not None

    def caller(self, token_hash: str) -> Optional[Caller]:
        """The caller a token hash names now (users file first, as it is on disk now), or None."""
        user = self.users.current().by_token_hash(token_hash) if self.users is not None else None
        found = Caller(owner_of(user.name), user.principal, user.name) if user is not None else None
        for known in self.token_hashes:  # every one compared, in constant time each
            if hmac.compare_digest(token_hash, known) and found is None:
                found = Caller(token_owner(token_hash))
        return found

    def by_token(self, token: str) -> Optional[Caller]:
        return self.caller(token_sha256(token)) if token else None

    def open(self, token: str) -> Optional[Tuple[str, Caller]]:
        """A new session id for a valid ``token`` (None for a wrong one)."""
        caller = self.by_token(token)
        if caller is None:
            return None
        session_id = secrets.token_urlsafe(32)
        now = self.clock()
        with self._lock:
            for key in [k for k, s in self._sessions.items() if s.expires <= now]:
                del self._sessions[key]
            while len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[min(self._sessions, key=lambda k: self._sessions[k].expires)]
            self._sessions[_key(session_id)] = _Session(token_sha256(token), now + self.lifetime)
        return session_id, caller

    def by_session(self, session_id: str) -> Optional[Caller]:
        """The caller of a live session, or None (unknown, ended, expired, or its token no longer valid)."""
        key = _key(session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is not None and session.expires <= self.clock():
                del self._sessions[key]
                session = None
        if session is None:
            return None
        caller = self.caller(session.token_hash)
        if caller is None:  # the token was revoked: the session ends with it
            self.close(session_id)
        return caller

    def close(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(_key(session_id), None)

    def __len__(self) -> int:
        return len(self._sessions)


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()
