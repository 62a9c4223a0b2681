"""Read the tensors and attributes of a TorchScript archive (torch.jit.save's zip) without torch, safely.

A TorchScript file is a zip: `<root>/data.pkl` pickles the module tree, and each tensor's storage is a
member `<root>/data/<key>` of raw little-endian bytes. The pickle is read by a restricted unpickler whose
`find_class` knows a fixed table of globals: the tensor rebuild function and storage types (tensors come back
as read-only numpy arrays), TorchScript's typed-list builders, OrderedDict, and the archive's own module
classes (`__torch__.*`), which become inert `ScriptModule` records (a type name and an attribute dict; no
code of the archive runs). Every other global is refused, so a malicious pickle cannot call anything.

The zip is bounded before anything is read (member count, member and total size, pickle size), storage
members must hold exactly the bytes their tensors claim, and every tensor's view (offset, sizes, strides) is
checked to lie inside its storage.
"""
from __future__ import annotations

import collections
import functools
import io
import pickle
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

MAX_MEMBERS = 8192
MAX_MEMBER_BYTES = 1 << 30  # 1 GiB per tensor storage
MAX_TOTAL_BYTES = 4 << 30
MAX_PICKLE_BYTES = 64 << 20
# torch storage class -> numpy dtype (little-endian, as torch.jit.save writes them)
STORAGE_DTYPES = {"FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2", "LongStorage": "<i8",
                  "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1", "ByteStorage": "u1",
                  "BoolStorage": "?"}
LIST_BUILDERS = ("build_intlist", "build_floatlist", "build_boollist", "build_doublelist", "build_tensorlist")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ArchiveError(ValueError):
    """The file is not a TorchScript archive this reader accepts (malformed, oversized, or an unknown global)."""


@dataclass
class ScriptModule:
    """A module object of the archive: its TorchScript type (e.g. `__torch__.inceptionv3.Conv2dLayer`) and
    attributes (parameters as numpy arrays, submodules as ScriptModules, ints, lists...)."""

    type_name: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise ArchiveError(f"{self.type_name}: module state is {type(state).__name__}, expected a dict of names")
        self.attributes = dict(state)

    @property
    def short_type(self) -> str:
        """The class name without its module path (`Conv2dLayer`)."""
        return self.type_name.rsplit(".", 1)[-1]

    def children(self) -> Iterator[tuple[str, "ScriptModule"]]:
        """(attribute name, submodule) in the archive's order."""
        return ((k, v) for k, v in self.attributes.items() if isinstance(v, ScriptModule))


@functools.lru_cache(maxsize=None)
def _module_class(type_name: str) -> type:
    """An inert ScriptModule subclass for one TorchScript class (pickle's NEWOBJ instantiates the class)."""
    return type(type_name.rsplit(".", 1)[-1], (ScriptModule,), {"type_name": type_name})


@dataclass(frozen=True)
class _StorageType:
    name: str

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(STORAGE_DTYPES[self.name])


def _int_tuple(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ArchiveError(f"tensor {what} {value!r} is not a tuple of integers")
    return tuple(value)


def rebuild_tensor(storage: np.ndarray, offset: int, size: Any, stride: Any, *_: Any) -> np.ndarray:
    """torch._utils._rebuild_tensor_v2 for numpy: the view (offset, size, stride) of a flat storage, copied into a
    C-contiguous read-only array; ArchiveError when the view leaves the storage (requires_grad, hooks ignored)."""
    if not isinstance(storage, np.ndarray) or storage.ndim != 1:
        raise ArchiveError("a tensor's storage is not a storage record")
    size, stride = _int_tuple(size, "size"), _int_tuple(stride, "stride")
    if len(size) != len(stride) or not isinstance(offset, int) or offset < 0 or min(size + stride, default=0) < 0:
        raise ArchiveError(f"tensor view offset {offset!r}, size {size}, stride {stride} is malformed")
    count = int(np.prod(size, dtype=np.int64))
    if count:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.size:
            raise ArchiveError(f"tensor view offset {offset}, size {size}, stride {stride} reaches element {last} "
                               f"of a storage of {storage.size}")
    elif offset > storage.size:
        raise ArchiveError(f"tensor offset {offset} is beyond its storage of {storage.size} elements")
    itemsize = storage.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(storage[offset:] if count else storage[:0], shape=size,
                                           strides=tuple(s * itemsize for s in stride), writeable=False)
    out = np.array(view, order="C")
    out.setflags(write=False)
    return out


def _list_builder(items: Any) -> list:
    if not isinstance(items, list):
        raise ArchiveError(f"a TorchScript typed list holds {type(items).__name__}, expected a list")
    return list(items)


# (module, name) -> what the pickle gets for that global: the whole table of callables it may reach.
_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor,
    ("collections", "OrderedDict"): collections.OrderedDict,
    **{("torch", name): _StorageType(name) for name in STORAGE_DTYPES},
    **{("torch.jit._pickle", name): _list_builder for name in LIST_BUILDERS},
}


class _Unpickler(pickle.Unpickler):
    """pickle.Unpickler with the global table above and storages read from the archive (bounded)."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, root: str) -> None:
        super().__init__(io.BytesIO(data))
        self.archive, self.root = archive, root
        self.storages: dict[str, np.ndarray] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _GLOBALS:
            return _GLOBALS[(module, name)]
        parts = module.split(".")
        if parts[0] == "__torch__" and all(_IDENTIFIER.fullmatch(p) for p in parts + [name]):
            return _module_class(f"{module}.{name}")
        raise ArchiveError(f"the archive's data.pkl needs the global {module}.{name}, which this reader refuses "
                           f"(it rebuilds tensors and module records only)")

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)
                and isinstance(pid[2], str) and pid[2].isdigit() and isinstance(pid[4], int) and pid[4] >= 0):
            raise ArchiveError(f"unknown persistent id {pid!r} in data.pkl (expected a tensor storage)")
        _, kind, key, _, numel = pid
        if key not in self.storages:
            member = f"{self.root}/data/{key}"
            expected = numel * kind.dtype.itemsize
            try:
                info = self.archive.getinfo(member)
            except KeyError:
                raise ArchiveError(f"storage {member} named by data.pkl is missing from the archive") from None
            if info.file_size != expected:
                raise ArchiveError(f"storage {member} holds {info.file_size} bytes, its tensor needs {expected} "
                                   f"({numel} x {kind.name})")
            storage = np.frombuffer(self.archive.read(member), dtype=kind.dtype)
            storage.setflags(write=False)
            self.storages[key] = storage
        storage = self.storages[key]
        if storage.dtype != kind.dtype or storage.size != numel:
            raise ArchiveError(f"storage {key} is used as {numel} x {kind.name} and as {storage.size} x "
                               f"{storage.dtype}")
        return storage


def _check_members(archive: zipfile.ZipFile, path: Path) -> str:
    """The archive's root folder (the prefix of `<root>/data.pkl`); ArchiveError when a bound is exceeded."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveError(f"{path} has {len(infos)} zip members, more than the {MAX_MEMBERS} a TorchScript "
                           f"archive of a network needs")
    total = sum(i.file_size for i in infos)
    big = max(infos, key=lambda i: i.file_size, default=None)
    if big is not None and big.file_size > MAX_MEMBER_BYTES:
        raise ArchiveError(f"{path}: member {big.filename} unpacks to {big.file_size} bytes (limit {MAX_MEMBER_BYTES})")
    if total > MAX_TOTAL_BYTES:
        raise ArchiveError(f"{path} unpacks to {total} bytes (limit {MAX_TOTAL_BYTES})")
    roots = [i.filename[:-len("/data.pkl")] for i in infos if i.filename.endswith("/data.pkl")
             and i.filename.count("/") == 1]
    if len(roots) != 1:
        raise ArchiveError(f"{path} is not a TorchScript archive: expected one <root>/data.pkl, found {len(roots)}")
    if archive.getinfo(f"{roots[0]}/data.pkl").file_size > MAX_PICKLE_BYTES:
        raise ArchiveError(f"{path}: data.pkl is larger than {MAX_PICKLE_BYTES} bytes")
    return roots[0]


def read_archive(path: str | Path) -> ScriptModule:
    """The root module of a TorchScript archive, with tensors as read-only numpy arrays (ArchiveError if refused)."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            root = _check_members(archive, path)
            unpickler = _Unpickler(archive.read(f"{root}/data.pkl"), archive, root)
            try:
                module = unpickler.load()
            except ArchiveError:
                raise
            except (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError, IndexError,
                    KeyError) as err:
                raise ArchiveError(f"{path}: data.pkl is malformed ({type(err).__name__}: {err})") from err
    except zipfile.BadZipFile as err:
        raise ArchiveError(f"{path} is not a zip archive ({err})") from err
    if not isinstance(module, ScriptModule):
        raise ArchiveError(f"{path}: data.pkl holds a {type(module).__name__}, not a TorchScript module")
    return module


def named_tensors(module: ScriptModule, prefix: str = "") -> dict[str, np.ndarray]:
    """Every tensor attribute of the module tree by dotted name (`net.layers.conv.weight`), in archive order."""
    found: dict[str, np.ndarray] = {}
    for name, value in module.attributes.items():
        if isinstance(value, np.ndarray):
            found[prefix + name] = value
        elif isinstance(value, ScriptModule):
            found.update(named_tensors(value, f"{prefix}{name}."))
    return found


def named_modules(module: ScriptModule, prefix: str = "") -> dict[str, ScriptModule]:
    """Every module of the tree by dotted name, the root as ''."""
    found = {prefix.rstrip("."): module}
    for name, child in module.children():
        found.update(named_modules(child, f"{prefix}{name}."))
    return found
