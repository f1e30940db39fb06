"""Tensors out of a ``torch.save`` file without running it: a ``.pt`` file is a pickle, and a pickle is a program.

A file ``torch.save`` writes (zip format, torch >= 1.6) is a zip archive: ``<prefix>/data.pkl`` is the pickled
object, and each tensor's bytes sit in ``<prefix>/data/<key>``, named from the pickle by a persistent id
``("storage", <storage type>, key, location, numel)``; ``<prefix>/byteorder`` says ``little`` or ``big``. A tensor is
pickled as a call of ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)``.

The unpickler here resolves no name the file gives it: ``find_class`` answers from a fixed table of stand-ins
(``TensorRef`` for the rebuild call, a dtype name for a storage type, ``dict`` for ``OrderedDict``) and refuses every
other global, so no code of the file's choosing runs and nothing is imported. Tensors come back as ``TensorRef``:
shape and where the bytes are. ``values`` reads one tensor's bytes (bounded) into a polars Series.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from array import array
from dataclasses import dataclass
from typing import Any

import polars as pl

from diagnose.expertload.readers.base import MAX_PT_BYTES, MAX_PT_CELLS

MAX_PICKLE_BYTES = 64 * 1024 * 1024
# storage type -> (array typecode, bytes per value, signed integer?)
DTYPES = {"IntStorage": ("i", 4), "LongStorage": ("q", 8), "ShortStorage": ("h", 2), "CharStorage": ("b", 1),
          "ByteStorage": ("B", 1), "FloatStorage": ("f", 4), "DoubleStorage": ("d", 8)}


class PtRefused(Exception):
    """The file is not a tensor file this reader may read: ``code`` is a refusal of readers/base.py."""

    def __init__(self, code: str, detail: str = ""):
        super().__init__(detail)
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class StorageRef:
    key: str
    dtype: str
    numel: int


@dataclass(frozen=True)
class TensorRef:
    storage: StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any) -> TensorRef:
    if not isinstance(storage, StorageRef) or not isinstance(offset, int):
        raise PtRefused("pt_format", "tensor without storage")
    if not all(isinstance(d, int) and d >= 0 for d in (*size, *stride)):
        raise PtRefused("pt_shape", "bad size")
    return TensorRef(storage, offset, tuple(size), tuple(stride))


class _Dtype(str):
    """A storage type named by the pickle, as its name only."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in DTYPES:
            return _Dtype(name)
        if module == "collections" and name == "OrderedDict":
            return dict
        raise PtRefused("pt_global", f"{module}.{name}"[:80])

    def persistent_load(self, pid: Any) -> StorageRef:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise PtRefused("pt_format", "persistent id")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _Dtype) or not isinstance(numel, int) or numel < 0:
            raise PtRefused("pt_format", "storage")
        return StorageRef(str(key), str(kind), numel)


class PtFile:
    """One ``torch.save`` zip archive, opened for ``load`` (the object) and ``values`` (one tensor's numbers)."""

    def __init__(self, data: bytes | str):
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data) if isinstance(data, bytes) else data)
            names = self._zip.namelist()
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise PtRefused("pt_format", "not a zip archive (legacy torch.save formats are not read)") from exc
        pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if not pkl:
            raise PtRefused("pt_format", "no data.pkl")
        self._prefix = pkl[0].rsplit("/", 1)[0]
        order = f"{self._prefix}/byteorder"
        if order in names and self._zip.read(order).strip() not in (b"little", b""):
            raise PtRefused("pt_format", "big-endian")

    def load(self) -> Any:
        info = self._zip.getinfo(f"{self._prefix}/data.pkl")
        if info.file_size > MAX_PICKLE_BYTES:
            raise PtRefused("too_big", "data.pkl")
        try:
            return _Restricted(io.BytesIO(self._zip.read(info))).load()
        except PtRefused:
            raise
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
                MemoryError, RecursionError, zipfile.BadZipFile) as exc:
            raise PtRefused("pt_format", type(exc).__name__) from exc

    def values(self, t: TensorRef, chunk: int = 1 << 20):
        """The numbers of a contiguous tensor, flat, as Series of Int64 (counts) or Float64 of at most ``chunk``
        values each (a multiple of the last axis), so a large tensor never sits in memory as Python numbers."""
        code, width = DTYPES[t.storage.dtype]
        n = t.numel
        if n > MAX_PT_CELLS:
            raise PtRefused("pt_shape", f"{n} values")
        want, acc = list(t.shape), 1
        for i in range(len(want) - 1, -1, -1):  # contiguous: the stride of each axis is the product after it
            if want[i] > 1 and t.stride[i] != acc:
                raise PtRefused("pt_shape", "not contiguous")
            acc *= want[i]
        name = f"{self._prefix}/data/{t.storage.key}"
        try:
            info = self._zip.getinfo(name)
        except KeyError as exc:
            raise PtRefused("pt_format", "missing storage") from exc
        if info.file_size > MAX_PT_BYTES or info.file_size < (t.offset + n) * width:
            raise PtRefused("pt_shape", "storage size")
        last = t.shape[-1] if t.shape and t.shape[-1] else 1
        step = max(last, chunk - chunk % last)
        kind = pl.Float64 if code in "fd" else pl.Int64
        with self._zip.open(info) as stream:
            stream.read(t.offset * width)
            done = 0
            while done < n:
                k = min(step, n - done)
                arr = array(code)
                arr.frombytes(stream.read(k * width))
                yield pl.Series("v", arr.tolist(), dtype=kind)
                done += k
