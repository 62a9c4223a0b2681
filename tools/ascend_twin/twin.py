"""Build and run the Ascend C LeakyReLU op (ops/csrc/ascendc) on the CPU through the strict Ascend C twin.

The unmodified op_host and op_kernel sources are compiled with g++ against the twin headers in
tools/ascend_twin/include (one object per kernel entry and dtype, like CANN builds one binary per dtype),
linked with runner.cpp into a library cached in the kernel cache directory of ops/build.py, and loaded with
ctypes. `run` executes the host tiling and then every launched block, one simulated core after another;
a broken hardware rule raises TwinRuleError. See docs/ascend_twin.md.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from ops.build import cache_dir, compiler
from ops.tiling import TilingPlan

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "tools" / "ascend_twin"
INCLUDE = TWIN / "include"
CSRC = ROOT / "ops" / "csrc"
ASCENDC = CSRC / "ascendc"
FLAGS = ("-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror")
KERNEL_ENTRIES = ("leaky_relu_custom", "leaky_relu_grad_custom")
TILING_HEADER = ASCENDC / "op_host" / "leaky_relu_custom_tiling.h"


@dataclass(frozen=True)
class Soc:
    """Figures the host tiling reads from the platform (platform_config/<soc>.ini: ub_size, vector_core_cnt)."""

    ub_bytes: int
    vector_cores: int


SOCS = {
    "Ascend910B1": Soc(196608, 48),
    "Ascend910B2": Soc(196608, 48),
    "Ascend910B3": Soc(196608, 40),
    "Ascend910B4": Soc(196608, 40),
}
DEFAULT_SOC = "Ascend910B1"  # the default of scripts/build_ascend_ops.sh
UB_ALLOC_BYTES = 184 * 1024  # of the 192 KiB UB, what TPipe may allocate (twin/state.h: kUbAllocBytes)

# dtype name -> (C++ type of the kernel build, ge::DataType, numpy dtype)
DTYPES = {"float32": ("float", 0, np.float32), "float16": ("half", 1, np.float16),
          "bfloat16": ("bfloat16_t", 27, ml_dtypes.bfloat16)}
OPS = {False: "LeakyReluCustom", True: "LeakyReluGradCustom"}

# Deliberately broken kernels: exact edits of op_kernel/leaky_relu_kernel.h, one row per pitfall.
VARIANTS: dict[str, tuple[tuple[str, str], ...]] = {
    # the tail handled as a full tile (the leakyrelu_v2 pitfall): reads and writes past the end
    "full_tile_tail": (("if (range_.tail_len > 0) Step<true>(offset, range_.tail_len);",
                        "if (range_.tail_len > 0) Step<false>(offset, plan_.tile_len);"),),
    # one element too few copied in on the tail: uninitialised UB reaches GM
    "short_tail_copy": (("AscendC::DataCopyPad(local, in_gm_[i][offset], Bytes(len),",
                         "AscendC::DataCopyPad(local, in_gm_[i][offset], Bytes(len - 1),"),),
    # the tail computed over a full tile (the other leakyrelu_v2 pitfall): reads lanes nothing loaded
    "full_tile_compute": (("(len + kAscendAlignElems - 1) / kAscendAlignElems * kAscendAlignElems)",
                           "plan_.tile_len)"),),
    # the tail never processed: its output elements are never written
    "skip_tail": (("if (range_.tail_len > 0) Step<true>(offset, range_.tail_len);",
                   "if (false) Step<true>(offset, range_.tail_len);"),),
    # the output tile is never freed: the queue runs out of buffers
    "no_free": (("    out_q_.FreeTensor(result);\n", "\n"),),
}


VARIANT_DTYPE = "float32"  # the broken variants are built for this dtype only (faster to compile)


class TwinRuleError(RuntimeError):
    """A hardware rule broken by the kernel or the host tiling; `output` holds what the cores wrote."""

    def __init__(self, message: str, output: np.ndarray | None = None):
        super().__init__(message)
        self.output = output


@dataclass(frozen=True)
class TwinPlan:
    """What the host tiling wrote: the plan, the launch and the attributes as the kernel reads them."""

    plan: TilingPlan
    block_dim: int
    has_clamp: bool
    slope: float
    clamp: float
    tiling_bytes: int
    workspace_bytes: int


@dataclass(frozen=True)
class TwinRun:
    """Output of one launch and what it used."""

    output: np.ndarray
    plan: TwinPlan
    ub_bytes: int  # largest UB allocation of a core
    tiles: int
    dump: str


def _sources() -> list[Path]:
    """Every file the library is compiled from."""
    return sorted([*INCLUDE.rglob("*.h"), TWIN / "runner.cpp", CSRC / "tiling.h",
                   *(p for p in ASCENDC.rglob("*") if p.is_file())])


def _digest(*parts: bytes | str) -> str:
    key = hashlib.sha256()
    for part in parts:
        key.update(part if isinstance(part, bytes) else part.encode())
        key.update(b"\0")
    return key.hexdigest()[:16]


def _patched_kernel_dir(stage: Path, variant: str | None) -> Path:
    """op_kernel copied into stage (as scripts/build_ascend_ops.sh copies it), with the variant's edits."""
    shutil.copytree(ASCENDC / "op_kernel", stage)
    header = stage / "leaky_relu_kernel.h"
    text = header.read_text()
    for old, new in VARIANTS[variant] if variant else ():
        if text.count(old) != 1:
            raise RuntimeError(f"variant {variant!r}: {old!r} is not found exactly once in {header.name}; "
                               f"update VARIANTS in {__file__} to the kernel source")
        text = text.replace(old, new)
    header.write_text(text)
    return stage


def _compile_all(commands: list[list[str]]) -> None:
    """Run the compiles in parallel; RuntimeError with the compiler's output on the first failure."""
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for cmd in commands]
    failures = [(cmd, p.communicate()[0]) for cmd, p in zip(commands, procs) if p.wait() != 0]
    if failures:
        cmd, log = failures[0]
        raise RuntimeError(f"compiling the Ascend C twin failed: {' '.join(cmd)}\n{log}")


def _objects(cxx: str, directory: Path, stage: Path, variant: str | None) -> list[Path]:
    """Compile what is missing from the object cache (host tiling and runner are shared by all variants)."""
    include = [f"-I{INCLUDE}", f"-I{CSRC}", f"-I{ASCENDC}", f"-I{ASCENDC / 'op_host'}"]
    units = [("host", [str(ASCENDC / "op_host" / "leaky_relu_custom.cpp")], None),
             ("runner", [str(TWIN / "runner.cpp")], None)]
    for ctype, _, _ in (DTYPES.values() if variant is None else [DTYPES[VARIANT_DTYPE]]):
        for entry in KERNEL_ENTRIES:
            units.append((f"{entry}_{ctype}", ["-D__CCE_AICORE__=220", f"-DDTYPE_X={ctype}", f"-DDTYPE_DY={ctype}",
                                               f"-D{entry}={entry}_{ctype}",
                                               "-DTWIN_TILING_DATA=optiling::LeakyReluCustomTilingData",
                                               "-include", str(TILING_HEADER), str(stage / f"{entry}.cpp")], variant))
    sources = _digest(cxx, *FLAGS, *(p.read_bytes() for p in _sources()))
    objects, commands = [], []
    for name, args, unit_variant in units:
        key = _digest(sources, repr(VARIANTS.get(unit_variant)), *args[:-1])
        obj = directory / f"{name}-{unit_variant or 'kernels'}-{key}.o"
        objects.append(obj)
        if not obj.exists():
            commands.append([cxx, *FLAGS, *include, *args, "-c", "-o", str(stage.parent / obj.name)])
    _compile_all(commands)
    for cmd in commands:
        os.replace(cmd[-1], directory / Path(cmd[-1]).name)
    return objects


@functools.lru_cache(maxsize=None)
def build(variant: str | None = None) -> ctypes.CDLL:
    """The twin library (the kernels patched by VARIANTS[variant] when given), built once and cached on disk."""
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"variant={variant!r} is not one of {sorted(VARIANTS)}")
    cxx = compiler()
    key = _digest(cxx, *FLAGS, *(p.read_bytes() for p in _sources()), repr(VARIANTS.get(variant)))
    directory = cache_dir() / "ascend_twin"
    target = directory / f"twin-{variant or 'kernels'}-{key}.so"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory) as tmp:
            stage = _patched_kernel_dir(Path(tmp) / "op_kernel", variant)
            objects = _objects(cxx, directory, stage, variant)
            _compile_all([[cxx, "-shared", "-o", str(Path(tmp) / "twin.so"), *map(str, objects)]])
            os.replace(Path(tmp) / "twin.so", target)
    lib = ctypes.CDLL(str(target))
    i64, f32, size = ctypes.c_int64, ctypes.c_float, ctypes.c_size_t
    lib.twin_tiling.argtypes = [ctypes.c_char_p, ctypes.c_int, i64, f32, f32, ctypes.c_uint64, ctypes.c_uint32,
                                ctypes.POINTER(i64), ctypes.POINTER(f32), ctypes.c_char_p, size]
    lib.twin_run.argtypes = [ctypes.c_char_p, ctypes.c_int, i64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             f32, f32, ctypes.c_uint64, ctypes.c_uint32, i64, i64, ctypes.POINTER(i64),
                             ctypes.c_char_p, size]
    lib.twin_dump.restype = ctypes.c_char_p
    lib.twin_op_info.argtypes = [ctypes.c_char_p]
    lib.twin_op_info.restype = ctypes.c_char_p
    lib.twin_live_tensors.argtypes = [i64, ctypes.c_int, ctypes.c_int]
    lib.twin_live_tensors.restype = i64
    return lib


def _platform(soc: str, ub_bytes: int | None, cores: int | None) -> tuple[int, int]:
    if soc not in SOCS:
        raise ValueError(f"soc={soc!r} is not one of {sorted(SOCS)}")
    return (ub_bytes if ub_bytes is not None else SOCS[soc].ub_bytes,
            cores if cores is not None else SOCS[soc].vector_cores)


def _dtype(dtype: str) -> tuple[str, int, type]:
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not one of {sorted(DTYPES)}")
    return DTYPES[dtype]


def _clamp_attr(clamp: float | None) -> float:
    """The op's clamp attribute: -1.0 means none (as ops/ascend.py passes it)."""
    return -1.0 if clamp is None else float(clamp)


def host_tiling(n: int, dtype: str, *, backward: bool = False, slope: float = 0.2, clamp: float | None = None,
                soc: str = DEFAULT_SOC, ub_bytes: int | None = None, cores: int | None = None) -> TwinPlan:
    """Run only the op_host tiling function for a tensor of n elements (no data: any n up to 2^63)."""
    ub, vector_cores = _platform(soc, ub_bytes, cores)
    out, attrs, err = (ctypes.c_int64 * 10)(), (ctypes.c_float * 2)(), ctypes.create_string_buffer(4096)
    if build().twin_tiling(OPS[backward].encode(), _dtype(dtype)[1], n, slope, _clamp_attr(clamp), ub, vector_cores,
                           out, attrs, err, len(err)):
        raise TwinRuleError(err.value.decode())
    return TwinPlan(TilingPlan(*out[:6]), out[6], bool(out[7]), attrs[0], attrs[1], out[8], out[9])


def run(x: np.ndarray, *, dy: np.ndarray | None = None, slope: float = 0.2, clamp: float | None = None,
        soc: str = DEFAULT_SOC, dump: tuple[int, int] | None = None, variant: str | None = None) -> TwinRun:
    """Forward (dy None) or backward of the Ascend C kernels on x through the twin; dump=(lo, hi) records
    every UB buffer the kernel writes for elements lo..hi-1."""
    names = {np.dtype(np_type): name for name, (_, _, np_type) in DTYPES.items()}
    x = np.ascontiguousarray(x).reshape(-1)
    if x.dtype not in names:
        raise ValueError(f"x has dtype {x.dtype}; the twin runs {sorted(DTYPES)}")
    backward = dy is not None
    if backward:
        dy = np.ascontiguousarray(dy).reshape(-1)
        if dy.dtype != x.dtype or dy.size != x.size:
            raise ValueError(f"dy ({dy.dtype}, {dy.size}) must match x ({x.dtype}, {x.size})")
    dtype = names[x.dtype]
    ub, vector_cores = _platform(soc, None, None)
    plan = host_tiling(x.size, dtype, backward=backward, slope=slope, clamp=clamp, soc=soc)
    inputs = (dy, x) if backward else (x, None)
    out = np.empty_like(x)
    stats, err = (ctypes.c_int64 * 3)(), ctypes.create_string_buffer(8192)
    lo, hi = dump if dump is not None else (0, 0)
    lib = build(variant)
    failed = lib.twin_run(OPS[backward].encode(), _dtype(dtype)[1], x.size, inputs[0].ctypes.data,
                          None if inputs[1] is None else inputs[1].ctypes.data, out.ctypes.data, slope,
                          _clamp_attr(clamp), ub, vector_cores, lo, hi, stats, err, len(err))
    if failed:
        raise TwinRuleError(err.value.decode(), out)
    return TwinRun(out, plan, stats[1], stats[2], lib.twin_dump().decode())


def op_info(op: str) -> str:
    """The op definition registered by the op_host source, as 'inputs=..;outputs=..;attrs=..'."""
    return build().twin_op_info(op.encode()).decode()


def live_tensors(elem_size: int, backward: bool, clamp: bool) -> int:
    """live_tensors of the kernels' UB layout (lrelu_ascend_layout.h), as the host tiling computes it."""
    return build().twin_live_tensors(elem_size, backward, clamp)


def mismatches(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Indices where the bits differ (any NaN matches any NaN)."""
    bits = np.uint16 if actual.dtype.itemsize == 2 else np.uint32
    same = (actual.view(bits) == expected.view(bits)) | (np.isnan(actual) & np.isnan(expected))
    return np.flatnonzero(~same)
