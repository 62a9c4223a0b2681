"""Compile the C++ CPU kernels into a cached shared library that `ops.Custom(func_type="aot")` loads.

Target flags: `-march=native` itself, so the kernels get every instruction-set extension the compiler finds
on this CPU, also those it does not tie to a `-march=` name (g++ 12 does not know Zen 5: it resolves native to
`-march=znver3` plus `-mavx512f`, `-mavx512bw`, ... as separate flags, and `-march=znver3` alone has no
AVX-512). $LRELU_CXXFLAGS adds flags after it (e.g. `-mno-avx512f` to build and test the 8-lane kernels on
an AVX-512 machine, or `-march=x86-64-v3` for a library that runs on older CPUs too).

Cache key (the library's file name): a SHA-256 of the kernel sources, the MindSpore version, the compiler
flags (base, `-march=native`, $LRELU_CXXFLAGS), the compiler *name* ($CXX, default g++) and this CPU
(/proc/cpuinfo model name and flags: what `-march=native` resolves from). Nothing in it runs the compiler, so
a cache hit needs no compiler installed; a compiler upgrade alone does not rebuild (delete the cache folder
to force it).

A cache entry is trusted only if its SHA-256 matches the `.sha256` file written beside it after a build
that compiled and loaded: anything else (truncated, overwritten, left by a crash) is rebuilt with one
warning instead of being dlopen'ed, which could crash the process. Builds run under an exclusive file lock
into a temporary file that is renamed into place, so concurrent processes (sweep jobs) build an entry once
and never load a partial file.
"""
from __future__ import annotations

import ctypes
import fcntl
import functools
import hashlib
import logging
import os
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import mindspore

CSRC = Path(__file__).resolve().parent / "csrc"
SOURCES = (CSRC / "cpu" / "leaky_relu.cc", CSRC / "cpu" / "bn_act.cc", CSRC / "cpu" / "im2col.cc",
           CSRC / "cpu" / "quantized_leaky_relu.cc", CSRC / "cpu" / "activations.cc", CSRC / "cpu" / "global_norm.cc",
           CSRC / "cpu" / "kernel_common.h",
           CSRC / "cpu" / "worker_pool.h", CSRC / "cpu" / "col2im.h",
           CSRC / "params.h", CSRC / "tiling.h")
UNITS = tuple(src for src in SOURCES if src.suffix == ".cc")
BASE_FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC", "-pthread", "-fno-trapping-math")
NATIVE = "-march=native"  # every extension the compiler detects on this CPU (see the module docstring)
CACHE_ENV = "LRELU_CACHE_DIR"
FLAGS_ENV = "LRELU_CXXFLAGS"  # extra compiler flags, after -march=native (part of the cache key)
log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """Directory for compiled kernels: $LRELU_CACHE_DIR, else ~/.cache/lrelu-gan."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "lrelu-gan")


def compiler_name() -> str:
    """The C++ compiler the kernels are built with: $CXX, default g++ (part of the cache key)."""
    return os.environ.get("CXX", "g++")


def compiler() -> str:
    """Path of the C++ compiler; RuntimeError naming it when it is not installed."""
    name = compiler_name()
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"the LeakyReLU CPU kernel is compiled on first use and needs the C++ compiler "
                           f"{name!r}, which is not on PATH; install it (Debian/Ubuntu: apt-get install g++) "
                           f"or point $CXX at another C++17 compiler")
    return path


def cpu_identity() -> str:
    """This CPU's model and feature flags (what `-march=native` resolves from), without running a compiler."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    fields = [line.split(":", 1)[1].strip() for line in text.splitlines()
              if line.split(":", 1)[0].strip() in ("model name", "flags", "Features", "CPU part")]
    return "\n".join([platform.machine(), *dict.fromkeys(fields)])


def extra_flags() -> tuple[str, ...]:
    """$LRELU_CXXFLAGS split like a shell would (part of the cache key); () when unset."""
    text = os.environ.get(FLAGS_ENV, "")
    try:
        return tuple(shlex.split(text))
    except ValueError as err:
        raise RuntimeError(f"{FLAGS_ENV}={text!r} cannot be split into compiler flags ({err})") from err


@functools.lru_cache(maxsize=None)
def arch_flags(cxx: str) -> tuple[str, ...]:
    """(NATIVE,) when the compiler builds for this CPU with it (and has _Float16), else ()."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cc"
        src.write_text("float f(_Float16 h) { return static_cast<float>(h); }\n")
        ok = subprocess.run([cxx, NATIVE, "-c", str(src), "-o", str(Path(tmp) / "p.o")],
                            capture_output=True).returncode == 0
    return (NATIVE,) if ok else ()


def compile_flags(cxx: str) -> tuple[str, ...]:
    """Every flag a kernel library is compiled with, before its sources and link flags."""
    return BASE_FLAGS + arch_flags(cxx) + extra_flags()


def enabled_extensions(cxx: str, flags: tuple[str, ...]) -> set[str]:
    """The -m<extension> options the compiler reports [enabled] under `flags` (`-Q --help=target`), e.g.
    {"avx2", "avx512f", ...}: what a library built with those flags may use."""
    probe = subprocess.run([cxx, *flags, "-Q", "--help=target"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise RuntimeError(f"{cxx} -Q --help=target failed (exit {probe.returncode}): {probe.stderr[-500:]}")
    return set(re.findall(r"^\s*-m([\w.-]+)\s+\[enabled\]", probe.stdout, re.MULTILINE))


def _check_white_list(directory: Path) -> None:
    """Fail early, naming both paths, when MS_CUSTOM_AOT_WHITE_LIST would refuse to load from directory."""
    allowed = os.environ.get("MS_CUSTOM_AOT_WHITE_LIST")
    if allowed is None:
        return
    allowed_real = os.path.realpath(allowed)
    if os.path.commonpath([os.path.realpath(directory), allowed_real]) != allowed_real:
        raise RuntimeError(f"MS_CUSTOM_AOT_WHITE_LIST={allowed!r} does not contain the kernel cache "
                           f"{str(directory)!r}; set {CACHE_ENV} to a directory inside it")


def cache_key(sources: tuple[Path, ...] = SOURCES, link_flags: tuple[str, ...] = ()) -> str:
    """The hex key of the library for these sources, MindSpore, flags, compiler name and CPU (no compiler run)."""
    key = hashlib.sha256()
    for part in (mindspore.__version__, compiler_name(), *BASE_FLAGS, NATIVE, *extra_flags(), *link_flags,
                 cpu_identity()):
        key.update(part.encode() + b"\0")
    for src in sources:
        key.update(src.read_bytes())
    return key.hexdigest()[:16]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checksum_path(library: Path) -> Path:
    """The file beside a cache entry holding its SHA-256, written only after it compiled and loaded."""
    return library.with_name(library.name + ".sha256")


def verify_entry(library: Path) -> str | None:
    """None if the cached library matches its checksum file, else why it cannot be trusted."""
    if not library.is_file():
        return "missing"
    try:
        expected = checksum_path(library).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "no checksum file beside it (an interrupted build or a file from elsewhere)"
    if _digest(library) != expected:
        return f"SHA-256 does not match {checksum_path(library).name} (truncated or overwritten)"
    return None


def _load_error(library: Path) -> str | None:
    """None if the dynamic loader accepts the library, else the loader's message."""
    try:
        ctypes.CDLL(str(library))
    except OSError as err:
        return str(err)
    return None


def _unwritable(directory: Path, err: OSError) -> RuntimeError:
    """The error for a cache folder the kernel cannot be written to, naming the variable and a way out."""
    where = (f"{CACHE_ENV}={os.environ[CACHE_ENV]!r}" if os.environ.get(CACHE_ENV)
             else f"the kernel cache {str(directory)!r} (default; {CACHE_ENV} is not set)")
    return RuntimeError(f"{where} is not writable ({err.strerror or err}), and the LeakyReLU kernel must be "
                        f"built there; set {CACHE_ENV} to a writable folder (e.g. export {CACHE_ENV}=$HOME/.cache/"
                        f"lrelu-gan) or fix the folder's permissions")


def _build(cxx: str, target: Path, units: tuple[Path, ...], link_flags: tuple[str, ...]) -> None:
    """Compile into a temporary file beside `target`, check that it loads, rename it into place, then
    write its checksum (the caller holds the lock, so the temporary name is this build's alone)."""
    flags = compile_flags(cxx)
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):  # builds killed before their rename
        leftover.unlink(missing_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # created by the compiler: umask mode
    try:
        done = subprocess.run([cxx, *flags, *map(str, units), *link_flags, "-o", str(tmp)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {', '.join(map(str, units))} with {cxx} into {target} failed "
                               f"(exit {done.returncode}):\n{done.stderr}")
        reason = _load_error(tmp)
        if reason is not None:
            raise RuntimeError(f"{cxx} built {target} but it cannot be loaded: {reason}")
        digest = _digest(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    sums = checksum_path(target)
    sums_tmp = sums.with_name(f".{sums.name}.{os.getpid()}.tmp")
    sums_tmp.write_text(digest + "\n", encoding="ascii")
    os.replace(sums_tmp, sums)


@functools.lru_cache(maxsize=None)
def library_path(stem: str = "leaky_relu", units: tuple[Path, ...] = UNITS, sources: tuple[Path, ...] = SOURCES,
                 link_flags: tuple[str, ...] = ()) -> str:
    """Absolute path of a compiled kernel library: a verified cache entry, else built (once) under a lock.

    The default is the project's kernel library; ops/onednn.py builds its own from one unit, with the
    oneDNN include and link flags as `link_flags` and the oneDNN version header among `sources` (hashed).
    """
    directory = cache_dir()
    _check_white_list(directory)
    target = directory / f"{stem}-{cache_key(sources, link_flags)}.so"
    if verify_entry(target) is None:  # the common case: no lock, no compiler, no write
        reason = _load_error(target)
        if reason is not None:
            raise RuntimeError(f"the cached LeakyReLU kernel {target} cannot be loaded: {reason}")
        return str(target)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = open(target.with_suffix(".lock"), "a")
    except OSError as err:
        raise _unwritable(directory, err) from err
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building this entry: wait for it
        problem = verify_entry(target)  # built by the process we waited for?
        if problem is not None:
            if target.exists():
                log.warning("lrelu-gan: cached kernel %s is unusable (%s); rebuilding it", target, problem)
            cxx = compiler()
            try:
                _build(cxx, target, units, link_flags)
            except PermissionError as err:
                raise _unwritable(directory, err) from err
    return str(target)
