"""``ragonite serve``: the RAGonite web app and REST API over the chat engine and explainers.

``create_app(ServeConfig(domains={"wiki": "STORE"}))`` is an ASGI app (FastAPI); ``serve``
runs it with uvicorn. Needs the ``[web]`` extra (fastapi, uvicorn). See docs/serve.md.
"""

from __future__ import annotations

from llama_index_ragonite.serve.config import ServeConfig, ServeConfigError

__all__ = ["ServeConfig", "ServeConfigError", "create_app", "serve"]


def __getattr__(name: str):
    if name in ("create_app", "serve"):  # FastAPI loads only when the app is asked for
        from llama_index_ragonite.serve import app

        return getattr(app, name)
    raise AttributeError(name)
