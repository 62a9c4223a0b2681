"""Compile the C++ CPU kernels into a cached shared library that `ops.Custom(func_type="aot")` loads.

The library is keyed by a hash of the sources, the MindSpore version, the compiler and its flags (with
`-march=native` resolved to the concrete CPU), so an edit, an upgrade or another machine rebuilds it.
It is written atomically (temporary file + rename), so concurrent processes never load a partial file.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import mindspore

CSRC = Path(__file__).resolve().parent / "csrc"
SOURCES = (CSRC / "cpu" / "leaky_relu.cc", CSRC / "cpu" / "bn_act.cc", CSRC / "cpu" / "im2col.cc",
           CSRC / "cpu" / "kernel_common.h", CSRC / "tiling.h")
UNITS = tuple(src for src in SOURCES if src.suffix == ".cc")
BASE_FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC", "-pthread", "-fno-trapping-math")


def cache_dir() -> Path:
    """Directory for compiled kernels: $LRELU_CACHE_DIR, else ~/.cache/lrelu-gan."""
    return Path(os.environ.get("LRELU_CACHE_DIR") or Path.home() / ".cache" / "lrelu-gan")


def compiler() -> str:
    """Path of the C++ compiler ($CXX, default g++); RuntimeError naming it when it is not installed."""
    name = os.environ.get("CXX", "g++")
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"the LeakyReLU CPU kernel is compiled on first use and needs the C++ compiler "
                           f"{name!r}, which is not on PATH; install it (Debian/Ubuntu: apt-get install g++) "
                           f"or point $CXX at another C++17 compiler")
    return path


@functools.lru_cache(maxsize=None)
def arch_flags(cxx: str) -> tuple[str, ...]:
    """`-march=<cpu>` when the compiler accepts -march=native here (resolved for the cache key), else ()."""
    probe = subprocess.run([cxx, "-march=native", "-Q", "--help=target"], capture_output=True, text=True)
    match = re.search(r"^\s*-march=\s+(\S+)", probe.stdout, re.MULTILINE)
    if probe.returncode != 0 or match is None:
        return ()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cc"
        src.write_text("float f(_Float16 h) { return static_cast<float>(h); }\n")
        ok = subprocess.run([cxx, f"-march={match.group(1)}", "-c", str(src), "-o", str(Path(tmp) / "p.o")],
                            capture_output=True).returncode == 0
    return (f"-march={match.group(1)}",) if ok else ()


def _check_white_list(directory: Path) -> None:
    """Fail early, naming both paths, when MS_CUSTOM_AOT_WHITE_LIST would refuse to load from directory."""
    allowed = os.environ.get("MS_CUSTOM_AOT_WHITE_LIST")
    if allowed is None:
        return
    allowed_real = os.path.realpath(allowed)
    if os.path.commonpath([os.path.realpath(directory), allowed_real]) != allowed_real:
        raise RuntimeError(f"MS_CUSTOM_AOT_WHITE_LIST={allowed!r} does not contain the kernel cache "
                           f"{str(directory)!r}; set LRELU_CACHE_DIR to a directory inside it")


@functools.lru_cache(maxsize=None)
def library_path(stem: str = "leaky_relu", units: tuple[Path, ...] = UNITS, sources: tuple[Path, ...] = SOURCES,
                 link_flags: tuple[str, ...] = ()) -> str:
    """Absolute path of a compiled kernel library, building it on first use.

    The default is the project's kernel library; ops/onednn.py builds its own from one unit, with the
    oneDNN include and link flags as `link_flags` and the oneDNN version header among `sources` (hashed).
    """
    cxx = compiler()
    flags = BASE_FLAGS + arch_flags(cxx)
    key = hashlib.sha256()
    for part in (mindspore.__version__, cxx, *flags, *link_flags):
        key.update(part.encode() + b"\0")
    for src in sources:
        key.update(src.read_bytes())
    directory = cache_dir()
    _check_white_list(directory)
    target = directory / f"{stem}-{key.hexdigest()[:16]}.so"
    if target.exists():
        return str(target)
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=directory)
    os.close(fd)
    try:
        done = subprocess.run([cxx, *flags, *map(str, units), *link_flags, "-o", tmp], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {', '.join(map(str, units))} with {cxx} failed:\n{done.stderr}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(target)
