"""gan.metrics.torchscript reads TorchScript-like zips written here without torch: tensors rebuilt exactly (dtype,
shape, strides, storage offsets, shared storages), module records inert, every other global refused, sizes bounded."""
from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gan.metrics import torchscript
from gan.metrics.torchscript import ArchiveError, ScriptModule, named_modules, named_tensors, read_archive


class Pickle:
    """Protocol-2 pickle bytes assembled opcode by opcode (as torch.jit.save writes data.pkl), so the test needs
    neither torch nor importable stand-ins for its globals."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")

    def glob(self, module: str, name: str) -> "Pickle":
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"
        return self

    def str(self, text: str) -> "Pickle":
        data = text.encode()
        self.out += b"X" + struct.pack("<I", len(data)) + data
        return self

    def int(self, value: int) -> "Pickle":
        self.out += b"J" + struct.pack("<i", value)
        return self

    def mark(self) -> "Pickle":
        self.out += b"("
        return self

    def op(self, code: bytes) -> "Pickle":
        self.out += code
        return self

    def ints(self, values) -> "Pickle":
        self.mark()
        for v in values:
            self.int(v)
        return self.op(b"t")

    def tensor(self, storage: str, key: str, numel: int, offset: int, size, stride) -> "Pickle":
        self.glob("torch._utils", "_rebuild_tensor_v2").mark()
        self.mark().str("storage").glob("torch", storage).str(key).str("cpu").int(numel).op(b"t").op(b"Q")
        self.int(offset).ints(size).ints(stride).op(b"\x89")  # requires_grad False
        self.glob("collections", "OrderedDict").op(b")R")  # backward hooks
        return self.op(b"tR")

    def module(self, type_name: str, fields) -> "Pickle":
        """A __torch__ module record: NEWOBJ of its class, then BUILD with {name: value}; fields are (name, fn)
        where fn writes the value."""
        module, _, name = type_name.rpartition(".")
        self.glob(module, name).op(b")\x81").op(b"}").mark()
        for key, write in fields:
            self.str(key)
            write(self)
        return self.op(b"u").op(b"b")

    def bytes(self) -> bytes:
        return bytes(self.out + b".")


def write_archive(path: Path, pickle_bytes: bytes, storages: dict[str, bytes], root: str = "m",
                  extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{root}/data.pkl", pickle_bytes)
        z.writestr(f"{root}/version", b"3\n")
        for key, data in storages.items():
            z.writestr(f"{root}/data/{key}", data)
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return path


def _storages():
    a = np.arange(24, dtype="<f4")  # storage 0: shared by two views
    b = np.array([1.5, -2.0, 3.25], dtype="<f8")  # storage 1: float64
    c = np.arange(10, dtype="<i8") - 5  # storage 2: int64
    return a, b, c


def _good_pickle() -> bytes:
    p = Pickle()
    p.module("__torch__.net.Root", [
        ("w", lambda q: q.tensor("FloatStorage", "0", 24, 0, (2, 3, 4), (12, 4, 1))),  # contiguous
        ("t", lambda q: q.tensor("FloatStorage", "0", 24, 2, (3, 2), (1, 3))),  # transposed view, offset 2
        ("d", lambda q: q.tensor("DoubleStorage", "1", 3, 1, (2,), (1,))),
        ("sub", lambda q: q.module("__torch__.net.___torch_mangle_3.Conv2dLayer", [
            ("i", lambda r: r.tensor("LongStorage", "2", 10, 0, (5,), (2,))),  # strided
            ("stride", lambda r: r.int(2)),
            ("padding", lambda r: r.glob("torch.jit._pickle", "build_intlist").mark().mark().int(0).int(3)
             .op(b"l").op(b"t").op(b"R")),
            ("e", lambda r: r.tensor("FloatStorage", "0", 24, 24, (0,), (1,))),  # empty, offset at the end
        ])),
    ])
    return p.bytes()


def _good_archive(tmp_path: Path) -> Path:
    a, b, c = _storages()
    return write_archive(tmp_path / "good.pt", _good_pickle(), {"0": a.tobytes(), "1": b.tobytes(), "2": c.tobytes()})


def test_tensors_are_rebuilt_with_dtype_shape_strides_and_offsets(tmp_path):
    a, b, c = _storages()
    root = read_archive(_good_archive(tmp_path))
    tensors = named_tensors(root)
    assert list(tensors) == ["w", "t", "d", "sub.i", "sub.e"]
    np.testing.assert_array_equal(tensors["w"], a.reshape(2, 3, 4))
    np.testing.assert_array_equal(tensors["t"], np.lib.stride_tricks.as_strided(a[2:], (3, 2), (4, 12)))
    assert tensors["t"].tolist() == [[2, 5], [3, 6], [4, 7]]
    np.testing.assert_array_equal(tensors["d"], b[1:])
    np.testing.assert_array_equal(tensors["sub.i"], c[::2])
    assert tensors["sub.e"].shape == (0,)
    assert [tensors[k].dtype for k in tensors] == [np.float32, np.float32, np.float64, np.int64, np.float32]
    for array in tensors.values():
        assert array.flags.c_contiguous and not array.flags.writeable


def test_module_records_are_inert_and_keep_their_attributes(tmp_path):
    root = read_archive(_good_archive(tmp_path))
    assert isinstance(root, ScriptModule) and root.type_name == "__torch__.net.Root"
    modules = named_modules(root)
    assert list(modules) == ["", "sub"]
    sub = modules["sub"]
    assert sub.short_type == "Conv2dLayer" and sub.attributes["stride"] == 2 and sub.attributes["padding"] == [0, 3]
    assert not hasattr(sub, "forward")


@pytest.mark.parametrize("module, name", [("os", "system"), ("builtins", "eval"), ("subprocess", "Popen"),
                                          ("torch", "load"), ("torch._utils", "_rebuild_parameter"),
                                          ("__torch__.x", "y z"), ("__torch__.a-b", "C"), ("numpy", "array")])
def test_any_other_global_is_refused(tmp_path, module, name):
    p = Pickle().glob(module, name).mark().str("echo pwned").op(b"t").op(b"R")
    path = write_archive(tmp_path / "evil.pt", p.bytes(), {})
    with pytest.raises(ArchiveError, match="refuses"):
        read_archive(path)


def test_a_malicious_global_inside_a_valid_module_tree_is_refused(tmp_path):
    a, _, _ = _storages()
    p = Pickle().module("__torch__.net.Root", [
        ("w", lambda q: q.tensor("FloatStorage", "0", 24, 0, (24,), (1,))),
        ("hook", lambda q: q.glob("posix", "system").mark().str("touch /tmp/x").op(b"t").op(b"R"))])
    with pytest.raises(ArchiveError, match="posix.system"):
        read_archive(write_archive(tmp_path / "evil.pt", p.bytes(), {"0": a.tobytes()}))


@pytest.mark.parametrize("offset, size, stride, numel, match", [
    (20, (2, 3), (3, 1), 24, "reaches element"),  # runs past the end
    (0, (5, 5), (5, 1), 24, "reaches element"),
    (0, (2,), (-1,), 24, "malformed"),  # negative stride
    (-1, (2,), (1,), 24, "malformed"),
    (0, (2, 2), (1,), 24, "malformed"),  # size/stride ranks differ
])
def test_views_outside_their_storage_are_refused(tmp_path, offset, size, stride, numel, match):
    a, _, _ = _storages()
    p = Pickle().module("__torch__.net.Root", [("w", lambda q: q.tensor("FloatStorage", "0", numel, offset, size,
                                                                          stride))])
    with pytest.raises(ArchiveError, match=match):
        read_archive(write_archive(tmp_path / "bad.pt", p.bytes(), {"0": a.tobytes()}))


def test_storage_size_must_match_its_tensor_and_exist(tmp_path):
    a, _, _ = _storages()
    p = Pickle().module("__torch__.net.Root", [("w", lambda q: q.tensor("FloatStorage", "0", 24, 0, (24,), (1,)))])
    with pytest.raises(ArchiveError, match="holds 92 bytes.*needs 96"):
        read_archive(write_archive(tmp_path / "short.pt", p.bytes(), {"0": a.tobytes()[:-4]}))
    with pytest.raises(ArchiveError, match="missing from the archive"):
        read_archive(write_archive(tmp_path / "none.pt", p.bytes(), {}))


def test_bounds_on_members_sizes_and_layout(tmp_path, monkeypatch):
    path = _good_archive(tmp_path)
    monkeypatch.setattr(torchscript, "MAX_MEMBERS", 3)
    with pytest.raises(ArchiveError, match="zip members"):
        read_archive(path)
    monkeypatch.setattr(torchscript, "MAX_MEMBERS", 100)
    monkeypatch.setattr(torchscript, "MAX_MEMBER_BYTES", 64)
    with pytest.raises(ArchiveError, match=r"data.pkl unpacks to \d+ bytes \(limit 64\)"):
        read_archive(path)
    monkeypatch.setattr(torchscript, "MAX_MEMBER_BYTES", 1 << 30)
    monkeypatch.setattr(torchscript, "MAX_PICKLE_BYTES", 16)
    with pytest.raises(ArchiveError, match="data.pkl is larger"):
        read_archive(path)


def test_not_an_archive_and_not_a_module(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(ArchiveError, match="not a zip archive"):
        read_archive(junk)
    with zipfile.ZipFile(tmp_path / "nopkl.pt", "w") as z:
        z.writestr("m/version", b"3")
    with pytest.raises(ArchiveError, match="expected one <root>/data.pkl"):
        read_archive(tmp_path / "nopkl.pt")
    with pytest.raises(ArchiveError, match="not a TorchScript module"):
        read_archive(write_archive(tmp_path / "int.pt", Pickle().int(3).bytes(), {}))
    with pytest.raises(ArchiveError, match="malformed"):
        read_archive(write_archive(tmp_path / "cut.pt", _good_pickle()[:40], {}))
