"""An answer's citations, checked once, where the answer is made: in the synthesizer that wrote it.

``checked_answer`` validates the ``[Source i]`` markers against the sources the answer was given
(``prompts.check_citations``): invalid markers are removed; an answer left empty is the exact out-of-scope
sentence. With an ``AnswerRecord`` (the chat engine's turn) it also notes what the turn shows: the valid
citations, the invalid markers and a warning. A streamed answer is checked as a whole when its stream ends
or is closed (``CheckedDeltas``/``ACheckedDeltas``): what was streamed keeps its markers, the checked
answer is ``deltas.answer``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence

from llama_index_ragonite.models.llm_calls import CallRecord
from llama_index_ragonite.prompts import OUT_OF_SCOPE, check_citations, is_out_of_scope

__all__ = ["ACheckedDeltas", "AnswerRecord", "CheckedDeltas", "checked_answer"]


class AnswerRecord(CallRecord, Protocol):
    """What a synthesizer notes about one answer (``chat.responses.TurnResult`` is one)."""

    cited: List[int]
    prompts: Dict[str, str]  # "answer": the prompt an LLM received (offline: none)
    read: List[str]  # offline: the node ids the answerer read, as sources 1..n

    def flag_invalid_citations(self, invalid: Sequence[str], n_sources: int) -> None: ...


def checked_answer(text: str, n_sources: int, record: Optional[AnswerRecord] = None) -> str:
    """``text`` with its citations checked against ``n_sources`` sources (see the module doc)."""
    checked = check_citations((text or "").strip(), n_sources)
    answer = checked.answer
    if record is not None:
        record.flag_invalid_citations(checked.invalid, n_sources)
        if not answer and (checked.invalid or record.warning is None):
            record.warn(
                f"{'Nothing but invalid citations' if checked.invalid else 'The LLM returned no text'}; "
                "answered out of scope."
            )
    answer = answer or OUT_OF_SCOPE
    if record is not None:
        record.cited = [] if is_out_of_scope(answer) else checked.cited
    return answer


class CheckedDeltas(Generator):
    """An answer's text deltas as they arrive; once they end or are closed, ``answer``: the whole text checked."""

    def __init__(self, deltas: Iterator[str], check: Callable[[str], str]) -> None:
        self._deltas, self._check = deltas, check
        self.text, self.answer = "", None  # type: str, Optional[str]

    def send(self, value: Any) -> str:
        try:
            delta = next(self._deltas)
        except StopIteration:
            self._finish()
            raise
        self.text += delta
        return delta

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> str:
        raise typ if val is None else val

    def close(self) -> None:
        """Stop early (closing the LLM's stream); the text so far is the answer."""
        close = getattr(self._deltas, "close", None)
        if close is not None:
            close()
        self._finish()

    def _finish(self) -> None:
        if self.answer is None:
            self.answer = self._check(self.text)


class ACheckedDeltas(AsyncGenerator):
    """``CheckedDeltas`` for an async stream."""

    def __init__(self, deltas: AsyncIterator[str], check: Callable[[str], str]) -> None:
        self._deltas, self._check = deltas, check
        self.text, self.answer = "", None  # type: str, Optional[str]

    async def asend(self, value: Any) -> str:
        try:
            delta = await self._deltas.__anext__()
        except StopAsyncIteration:
            self._finish()
            raise
        self.text += delta
        return delta

    async def athrow(self, typ: Any, val: Any = None, tb: Any = None) -> str:
        raise typ if val is None else val

    async def aclose(self) -> None:
        close = getattr(self._deltas, "aclose", None)
        if close is not None:
            await close()
        self._finish()

    def _finish(self) -> None:
        if self.answer is None:
            self.answer = self._check(self.text)
