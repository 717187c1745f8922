"""Confluence as a page source: the REST API in storage format (``ConfluenceStorageReader`` over
``ConfluenceClient``) and space HTML exports (``load_export``). The incremental sync into a store
is ``llama_index_ragonite.index.confluence_sync``."""

from llama_index_ragonite.parsing.confluence.client import ENV_VARS, ConfluenceClient
from llama_index_ragonite.parsing.confluence.export import lazy_load_export, load_export
from llama_index_ragonite.parsing.confluence.pages import document_id
from llama_index_ragonite.parsing.confluence.reader import ConfluenceStorageReader, PageVersion

__all__ = [
    "ENV_VARS",
    "ConfluenceClient",
    "ConfluenceStorageReader",
    "PageVersion",
    "document_id",
    "lazy_load_export",
    "load_export",
]
