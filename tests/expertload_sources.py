"""Inputs of ``diagnose expert-load`` written in each real source's layout, for the tests (never copied from the
corpus): SGLang ``torch.save`` dumps built opcode by opcode (no torch here), and a generated week of MindIE dumps
with an MTP row, a shared-routing map and a placement change, with its truth.

The ``.pt`` layout follows torch's zip serialization (``torch/serialization.py``: ``<prefix>/data.pkl`` at protocol
2, tensors as ``torch._utils._rebuild_tensor_v2`` calls whose storages are persistent ids, bytes in
``<prefix>/data/<key>``, ``byteorder``, ``version``); the objects follow SGLang's ``_StatAccumulator.dump`` and
``_DetailAccumulator.dump`` (reference profiling-and-expert-load.md §D7)."""

from __future__ import annotations

import io
import json
import random
import struct
import zipfile
from array import array
from datetime import date, timedelta
from pathlib import Path


class Tensor:
    """A contiguous tensor for ``save_pt``: flat values, a shape, and the storage type's name."""

    def __init__(self, values: list, shape: tuple[int, ...], storage: str = "IntStorage"):
        self.values, self.shape, self.storage = values, shape, storage


class Global:
    """A global the pickle names (to test that the reader refuses it)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


def _str(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _pickle(obj, storages: list) -> bytes:
    if obj is None:
        return b"N"
    if obj is True or obj is False:
        return b"\x88" if obj else b"\x89"
    if isinstance(obj, int):
        if -(2**31) <= obj < 2**31:
            return b"J" + struct.pack("<i", obj)
        raw = obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True)
        return b"\x8a" + bytes([len(raw)]) + raw
    if isinstance(obj, float):
        return b"G" + struct.pack(">d", obj)
    if isinstance(obj, str):
        return _str(obj)
    if isinstance(obj, tuple):
        return b"(" + b"".join(_pickle(x, storages) for x in obj) + b"t" if obj else b")"
    if isinstance(obj, list):
        return b"](" + b"".join(_pickle(x, storages) for x in obj) + b"e"
    if isinstance(obj, dict):
        return b"}(" + b"".join(_pickle(k, storages) + _pickle(v, storages) for k, v in obj.items()) + b"u"
    if isinstance(obj, Global):
        return b"c" + f"{obj.module}\n{obj.name}\n".encode() + b")R"
    if isinstance(obj, Tensor):
        key = str(len(storages))
        storages.append(obj)
        stride, acc = [], 1
        for d in reversed(obj.shape):
            stride.insert(0, acc)
            acc *= d
        pid = b"(" + _str("storage") + b"c" + f"torch\n{obj.storage}\n".encode() + _str(key) + _str("cpu") \
            + _pickle(len(obj.values), storages) + b"tQ"
        args = b"(" + pid + _pickle(0, storages) + _pickle(tuple(obj.shape), storages) \
            + _pickle(tuple(stride), storages) + b"\x89" + b"ccollections\nOrderedDict\n)R" + b"t"
        return b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"R"
    raise TypeError(type(obj))


def save_pt(path: Path, obj) -> Path:
    """Write ``obj`` (dicts, lists, numbers, strings, ``Tensor``) as ``torch.save`` does."""
    storages: list[Tensor] = []
    body = b"\x80\x02" + _pickle(obj, storages) + b"."
    prefix = "archive"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", body)
        z.writestr(f"{prefix}/byteorder", "little")
        for i, t in enumerate(storages):
            code = {"IntStorage": "i", "LongStorage": "q", "FloatStorage": "f"}[t.storage]
            z.writestr(f"{prefix}/data/{i}", array(code, t.values).tobytes())
        z.writestr(f"{prefix}/version", "3\n")
        z.writestr(f"{prefix}/.data/serialization_id", "0" * 40)
    return path


def stat_dump(folder: Path, when: float, counts: list[list[list[int]]], rows: int = 8) -> Path:
    """An SGLang stat dump of one window: ``counts[layer][expert]`` split over ``rows`` buffer rows (the rest of the
    circular buffer, when the passes were fewer, are zeros)."""
    n_layers, n_exp = len(counts), len(counts[0])
    flat = [0] * (rows * n_layers * n_exp)
    for li in range(n_layers):
        for e in range(n_exp):
            v = counts[li][e]
            for r in range(rows - 1):  # the last row is left unfilled: the buffer did not wrap
                part = v // (rows - 1) + (1 if r < v % (rows - 1) else 0)
                flat[(r * n_layers + li) * n_exp + e] = part
    obj = {"rank": 0, "logical_count": Tensor(flat, (rows, n_layers, n_exp)), "average_utilization_rate_over_window": None}
    return save_pt(folder / f"expert_distribution_recorder_{when:.6f}.pt", obj)


def placement_map(perm: list[list[list[int]]], shared: int | None = None) -> dict:
    """The map JSON of ``perm[layer][rank]`` -> logical ids (with the shared expert on every device)."""
    return {"moe_layer_count": len(perm), "layer_list": [
        {"layer_id": li, "device_count": len(lay),
         "device_list": [{"device_id": r, "device_expert": list(ids) + ([shared] if shared is not None else [])}
                         for r, ids in enumerate(lay)]} for li, lay in enumerate(perm)]}


def shuffled(rng: random.Random, layers: int, ranks: int, slots: int) -> list[list[list[int]]]:
    out = []
    for _ in range(layers):
        ids = list(range(ranks * slots))
        rng.shuffle(ids)
        out.append([ids[r * slots:(r + 1) * slots] for r in range(ranks)])
    return out


def days_from(first: date, n: int) -> list[date]:
    return [first + timedelta(days=i) for i in range(n)]


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in members.items():
            z.writestr(k, v)
    return buf.getvalue()
