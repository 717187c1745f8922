"""Crash-safe writes and verified reads for every file the index stage persists.

Why one module: the lexical index, the latent-term index and the store manifest used to
persist in three different ways. Here every write goes to a temporary sibling, is flushed
to disk and then renamed over the previous version, so a crash or an exception halfway
leaves the previous version intact. Every read failure is an error of the ``StoreError``
family that names the file: missing, truncated, failing its checksum or not parsing is a
``StoreCorruptError``, a format this code does not know is a ``StoreVersionError``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import uuid
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Dict

if TYPE_CHECKING:  # numpy is imported where arrays are read or written: the users file and --help need none
    import numpy as np

from llama_index_ragonite.errors import StoreCorruptError, StoreVersionError

__all__ = [
    "atomic_file",
    "atomic_folder",
    "check_format_version",
    "file_checksums",
    "read_json",
    "read_npz",
    "sha256_file",
    "verify_checksums",
    "write_json",
    "write_npz",
]

# Member of a .npz written by ``write_npz`` that holds the sha256 of all other members.
NPZ_CHECKSUM = "__sha256__"
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------- writing


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces ``path`` when the block ends without an exception."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex}"
    # os.open rather than mkstemp: the file gets the permissions (umask) of an ordinary write.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


@contextmanager
def atomic_folder(path: Path) -> Iterator[Path]:
    """Yield an empty sibling folder that replaces folder ``path`` when the block ends without an exception.

    The old folder is renamed aside, the new one into place, then the old one is removed:
    a crash between the two renames leaves no folder at ``path`` (the reader reports it
    missing) and the previous version beside it, never a half-written one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkdir rather than mkdtemp: the folder gets the permissions (umask) of an ordinary one, not 0700,
    # so a store built by one user can be read by the service account that serves it.
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        yield tmp
        fsync_tree(tmp)
        if path.exists():
            old = path.parent / f".{path.name}.old-{uuid.uuid4().hex}"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(path.parent)


def write_json(path: Path, data: Any, **dump_options: Any) -> None:
    """Write ``data`` as UTF-8 JSON to ``path`` atomically (``dump_options`` go to ``json.dumps``)."""
    text = json.dumps(data, **dump_options)
    with atomic_file(path) as file:
        file.write(text.encode("utf-8"))


def write_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to an uncompressed ``.npz`` atomically, with their sha256 as one more member."""
    import numpy as np

    arrays = {name: np.asarray(array) for name, array in arrays.items()}
    with atomic_file(path) as file:
        members: Dict[str, Any] = {**arrays, NPZ_CHECKSUM: np.array(_arrays_sha256(arrays))}
        np.savez(file, **members)


def fsync_tree(folder: Path) -> None:
    """Flush every file and folder under ``folder`` to disk (bm25s's own save does not)."""
    for file in folder.rglob("*"):
        if file.is_file():
            with open(file, "rb+") as handle:
                os.fsync(handle.fileno())
    for sub in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        fsync_dir(sub)


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- reading


def read_json(path: Path, what: str) -> Any:
    """The JSON value in ``path``; ``StoreCorruptError`` naming the file (and ``what`` it is) otherwise."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise StoreCorruptError(f"{path}: {what} is missing (not written yet, or an interrupted write)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreCorruptError(f"{path}: {what} is unreadable ({exc})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreCorruptError(f"{path}: {what} is unreadable or truncated ({exc})") from exc


def read_npz(path: Path, what: str, mapped: bool = False) -> dict[str, np.ndarray]:
    """The arrays of a ``.npz``, checked against their sha256 when the file carries one.

    ``mapped``: the arrays are memory maps of the file (``write_npz`` stores members uncompressed), checked
    by reading the file, not the maps: a reader's memory then holds only the pages its searches touch,
    shared with every process reading the same store. Files written before the checksum existed load
    unchecked (zip's CRC still guards them).
    """
    import numpy as np

    try:
        if mapped:
            arrays, digest = _mapped_npz(path)
        else:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            digest = None
    except FileNotFoundError:
        raise StoreCorruptError(f"{path}: {what} is missing") from None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise StoreCorruptError(f"{path}: {what} is damaged ({exc}); rebuild the store") from exc
    recorded = arrays.pop(NPZ_CHECKSUM, None)
    if recorded is not None and str(recorded) != (digest or _arrays_sha256)(arrays):
        raise StoreCorruptError(f"{path}: {what} is damaged (checksum mismatch); rebuild the store")
    return arrays


def _mapped_npz(path: Path):
    """(member name -> memory map of its array, a function giving ``_arrays_sha256`` of them read from the file)."""
    import numpy as np

    arrays, places = {}, {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as file:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ValueError(f"member {info.filename} is compressed or not an array")
            file.seek(info.header_offset + 26)  # the local header: its name and extra field lengths
            name_length, extra_length = struct.unpack("<HH", file.read(4))
            file.seek(info.header_offset + 30 + name_length + extra_length)
            version = np.lib.format.read_magic(file)
            read_header = (
                np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read_header(file)
            if fortran or dtype.hasobject:
                raise ValueError(f"member {info.filename} is not a plain C-ordered array")
            start, name = file.tell(), info.filename[: -len(".npy")]
            if (
                start + dtype.itemsize * math.prod(shape)
                > info.header_offset + 30 + name_length + extra_length + info.file_size
            ):
                raise ValueError(f"member {info.filename} is shorter than its array")
            places[name] = (start, dtype.itemsize * math.prod(shape))
            arrays[name] = (
                np.memmap(path, dtype=dtype, mode="r", offset=start, shape=shape)
                if math.prod(shape)
                else np.zeros(shape, dtype)
            )

    def digest(held: Mapping[str, np.ndarray]) -> str:
        sha = hashlib.sha256()
        with open(path, "rb") as file:
            for name in sorted(held):
                sha.update(_member_header(name, held[name].dtype, held[name].shape))
                start, left = places[name]
                file.seek(start)
                while left:
                    chunk = file.read(min(_CHUNK, left))
                    if not chunk:
                        raise StoreCorruptError(f"{path}: member {name} is truncated")
                    sha.update(chunk)
                    left -= len(chunk)
        return sha.hexdigest()

    return arrays, digest


def check_format_version(found: Any, supported: int, where: Path, what: str) -> None:
    """Refuse a format version other than ``supported``: a number is a ``StoreVersionError``, anything else corrupt."""
    is_number = isinstance(found, int) and not isinstance(found, bool)
    if is_number and found == supported:
        return
    if is_number:
        newer = "a newer version of llama-index-ragonite" if found > supported else "an older, unsupported version"
        raise StoreVersionError(
            f"{where}: {what} has unsupported format version {found!r} (expected {supported}); "
            f"it was written by {newer}: upgrade, or rebuild it"
        )
    raise StoreCorruptError(f"{where}: {what} has no valid format version ({found!r})")


# ---------------------------------------------------------------------------- checksums


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def file_checksums(folder: Path) -> dict[str, str]:
    """File name -> sha256 of every file directly in ``folder``, sorted by name."""
    return {file.name: sha256_file(file) for file in sorted(folder.iterdir()) if file.is_file()}


def verify_checksums(folder: Path, checksums: Mapping[str, str], label: str) -> None:
    """Raise ``StoreCorruptError`` if a listed file of ``folder`` is missing or differs from its sha256."""
    for name, digest in checksums.items():
        file = folder / name
        if not file.is_file():
            raise StoreCorruptError(f"{file}: {label} file {name} is missing")
        if sha256_file(file) != digest:
            raise StoreCorruptError(f"{file}: {label} file {name} is damaged (checksum mismatch)")


def _arrays_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    import numpy as np

    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(_member_header(name, array.dtype, array.shape))
        digest.update(array.tobytes())
    return digest.hexdigest()


def _member_header(name: str, dtype: Any, shape: tuple) -> bytes:
    """What the checksum reads of an array before its bytes; a scalar counts as shape (1,), as
    ``np.ascontiguousarray`` makes it (files written so far carry that)."""
    return f"{name}\x00{dtype.str}\x00{shape or (1,)}\x00".encode()
