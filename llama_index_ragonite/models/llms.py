"""``openai_llm``: the paper's OpenAI chat model, with retries that happen once.

``llama_index.llms.openai.OpenAI(max_retries=n)`` retries at two layers: it hands ``n`` to
the OpenAI SDK client (which retries 429, 5xx, timeouts and connection errors with backoff
and ``Retry-After``) *and* wraps every call in a tenacity loop of ``n`` attempts around that
client. A failing endpoint therefore sees ``n * (n + 1)`` requests per call — 12 with the
default ``n = 3`` — and a rate-limited one gets hammered harder when it can least take it.
``openai_llm`` keeps only the SDK layer, so ``max_retries=n`` means ``n + 1`` requests at
most and a hanging server costs at most about ``(n + 1) * timeout`` plus short backoffs.

The OpenAI integration is an optional extra: ``pip install "llama-index-ragonite[openai]"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from llama_index.llms.openai import OpenAI

__all__ = ["openai_llm"]

OPENAI_EXTRA = 'pip install "llama-index-ragonite[openai]"'
DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT = 3, 60.0


def openai_llm(
    model: str = "gpt-4o",
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: float = DEFAULT_TIMEOUT,
    api_key: Optional[str] = None,
    api_base: Optional[str] = None,
    **kwargs: Any,
) -> "OpenAI":
    """A LlamaIndex ``OpenAI`` LLM (any OpenAI-compatible server via ``api_base``) that retries once per layer.

    Args:
        model: Chat model name (the paper: ``gpt-4o`` answers, ``gpt-4o-mini`` counterfactual regenerations).
        max_retries: Retries after the first request, done by the OpenAI SDK (exponential backoff from
            0.5 s, capped at 8 s; a server's ``Retry-After`` / ``retry-after-ms`` up to 60 s wins).
        timeout: Seconds per request.
        api_key, api_base: As for ``OpenAI``; default to ``OPENAI_API_KEY`` / ``OPENAI_API_BASE``.
        **kwargs: Any other ``OpenAI`` argument (``temperature``, ``max_tokens``, ``http_client`` …).

    Returns:
        An ``OpenAI`` whose own ``max_retries`` field is 0 (its tenacity layer is off); the retries
        live in the SDK clients it was given.

    Raises:
        ImportError: ``llama-index-llms-openai`` is not installed (the message says how to install it).
    """
    try:
        from llama_index.llms.openai import OpenAI
    except ImportError as err:
        raise ImportError(f"openai_llm needs llama-index-llms-openai: {OPENAI_EXTRA}") from err
    return OpenAI(**retrying_arguments(model, max_retries, timeout, api_key, api_base, kwargs))


def retrying_arguments(
    model: str,
    max_retries: int,
    timeout: float,
    api_key: Optional[str],
    api_base: Optional[str],
    kwargs: Dict[str, Any],
) -> Dict[str, Any]:
    """``OpenAI``'s keywords (or a subclass's) as ``openai_llm`` builds them: the retrying SDK clients given,
    its own tenacity layer off. Shared with ``openai_compatible_llm``, which thus keeps the clients it made."""
    try:
        from llama_index.llms.openai.utils import resolve_openai_credentials
    except ImportError as err:
        raise ImportError(f"openai_llm needs llama-index-llms-openai: {OPENAI_EXTRA}") from err
    _check_arguments(max_retries, kwargs)
    api_key, api_base, _ = resolve_openai_credentials(api_key=api_key, api_base=api_base)
    sync_client, async_client = _retrying_sdk_clients(api_key, api_base, max_retries, timeout, kwargs)
    return {
        "model": model,
        "max_retries": 0,
        "timeout": timeout,
        "api_key": api_key,
        "api_base": api_base,
        "openai_client": sync_client,
        "async_openai_client": async_client,
        **kwargs,
    }


def _check_arguments(max_retries: int, kwargs: Dict[str, Any]) -> None:
    """Refuse what would bring back a second retry layer or bypass the retrying clients."""
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    if kwargs.get("reuse_client") is False:
        raise ValueError("openai_llm needs reuse_client=True: its retrying SDK clients are the ones reused")
    if kwargs.get("openai_client") is not None or kwargs.get("async_openai_client") is not None:
        raise ValueError("openai_llm builds the SDK clients itself; pass your clients to OpenAI(...) directly")


def _retrying_sdk_clients(
    api_key: Optional[str], api_base: Optional[str], max_retries: int, timeout: float, kwargs: Dict[str, Any]
) -> Tuple[Any, Any]:
    """The sync and async OpenAI SDK clients that do the retrying (with the caller's headers and HTTP clients)."""
    from openai import AsyncOpenAI
    from openai import OpenAI as SyncOpenAI

    sdk: Dict[str, Any] = {
        "api_key": api_key,
        "base_url": api_base,
        "max_retries": max_retries,
        "timeout": timeout,
        "default_headers": kwargs.get("default_headers"),
    }  # one set of the SDK's keywords, for both clients
    return (
        SyncOpenAI(**sdk, http_client=kwargs.get("http_client")),
        AsyncOpenAI(**sdk, http_client=kwargs.get("async_http_client")),
    )
