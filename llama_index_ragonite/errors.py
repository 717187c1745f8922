"""Every exception the package raises on purpose, in one hierarchy.

Catch ``RagoniteError`` for "anything this package refused, with a message that says why and
what to do next". Each class also derives from the built-in type callers caught before the
hierarchy existed (``ValueError``, ``RuntimeError``, ``KeyError``), so old ``except`` clauses keep working.
"""

from __future__ import annotations


class RagoniteError(Exception):
    """Base of every error this package raises on purpose."""


class PageLoadError(RagoniteError, ValueError):
    """A page file that cannot be read as a wiki page (the message names the file and why)."""


class StoreError(RagoniteError, RuntimeError):
    """The store folder cannot be used as asked (the message says why and what to do)."""


class StoreFileError(StoreError, ValueError):
    """A persisted file or folder of the store cannot be read or written as asked.

    Base of the corrupt and version errors (``LexicalIndexError`` is this class); raised as
    itself when writing would overwrite a folder that holds something else.
    """


class StoreCorruptError(StoreFileError):
    """A persisted file of the store is missing, truncated, fails its checksum or does not parse."""


class StoreVersionError(StoreFileError):
    """A persisted file was written in a format this code cannot read (usually a newer one)."""


class StoreLockedError(StoreError):
    """Another process is writing to the store."""


class StoreInterruptedError(StoreError):
    """A write to the store was interrupted: its indexes may disagree until the next write repairs them."""


class DiskFullError(StoreError):
    """A store write ran out of disk space (the message names the store); free space, then index again."""


class StoreInconsistentError(StoreError):
    """The store's indexes disagree (run ``ragonite check --store DIR --repair``, then index again)."""


class MassRemovalError(StoreError, ValueError):
    """An ingest would remove most (or all) of the store's pages: usually a wrong or empty source folder."""


class VectorStoreUnavailableError(StoreError):
    """The vector store (a Chroma server) cannot be reached; the message names it and the cause."""


class VectorStoreAddressError(RagoniteError, ValueError):
    """A Chroma server address that is not ``HOST:PORT`` or ``http(s)://HOST:PORT``."""


class ConfluenceError(RagoniteError, RuntimeError):
    """Confluence could not be read as asked (the message names the site, space or page, never a credential)."""


class ConfluenceAuthError(ConfluenceError, PermissionError):
    """Confluence refused the credentials (401) or the permission to read a space or page (403)."""


class ConfluenceNotFoundError(ConfluenceError, LookupError):
    """The space or page does not exist, or the credentials may not see it (404)."""


class LLMCallError(RagoniteError, RuntimeError):
    """The LLM could not be reached or did not answer in time (the message names the cause)."""


class ChatStoreError(RagoniteError, RuntimeError):
    """The chat store file cannot be used (the message names the file and says why)."""


class ConversationDeletedError(ChatStoreError):
    """The conversation is soft-deleted: restore it before writing to it."""


class UnknownConversationError(RagoniteError, KeyError):
    """No conversation has this id."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else "unknown conversation"
