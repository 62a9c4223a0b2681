"""Kernel build cache, compiler errors, thread option and 64-bit tile indexing."""
import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ops import api, build


def test_missing_compiler_error_names_it(monkeypatch):
    monkeypatch.setenv("CXX", "g++-not-installed")
    with pytest.raises(RuntimeError, match="needs the C\\+\\+ compiler 'g\\+\\+-not-installed'"):
        build.compiler()


@pytest.mark.slow  # builds every kernel from scratch in a new cache directory
def test_library_is_cached_by_content_and_rebuilt_in_a_new_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    build.library_path.cache_clear()
    try:
        first = build.library_path()
        mtime = os.stat(first).st_mtime_ns
        build.library_path.cache_clear()
        assert build.library_path() == first and os.stat(first).st_mtime_ns == mtime
        assert os.path.dirname(first) == str(tmp_path)
        name = os.path.basename(first)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(  # no temp files left
            [name, name + ".sha256", name.replace(".so", ".lock")])
        assert build.verify_entry(Path(first)) is None
    finally:
        build.library_path.cache_clear()


def _project_includes(src: Path) -> set[Path]:
    """The project headers a source includes ("..." includes that exist beside it), recursively."""
    found = set()
    for name in re.findall(r'^#include "([^"]+)"', src.read_text(), re.MULTILINE):
        header = (src.parent / name).resolve()
        if header.is_file() and header not in found:
            found |= {header} | _project_includes(header)
    return found


def test_every_included_project_header_is_in_its_library_cache_key(monkeypatch):
    # A header edit must change the cache key of every library compiled from a unit that includes it, or the
    # stale library would be loaded (col2im.h is shared by im2col.cc and onednn_conv.cc).
    hashed = {s.resolve() for s in build.SOURCES}
    for unit in build.UNITS:
        assert _project_includes(unit) <= hashed, unit
    from ops import onednn
    if onednn.unavailable_reason() is not None:
        pytest.skip(f"oneDNN kernels unavailable (the gemm units above were checked): {onednn.unavailable_reason()}")
    seen = {}
    monkeypatch.setattr(build, "library_path", lambda stem, units, sources, flags: seen.update(
        units=units, sources=sources) or "")
    onednn.library_path.__wrapped__()
    assert seen["units"] == (onednn.SOURCE,)
    assert _project_includes(onednn.SOURCE) <= {s.resolve() for s in seen["sources"]}
    assert any(s.name == "col2im.h" for s in seen["sources"])


def test_the_onednn_kernels_build_wherever_their_headers_are_installed():
    # Every oneDNN test skips when the kernels are unavailable; only the missing headers package may make them so,
    # never a compile error in onednn_conv.cc (this raises the compiler's message).
    from ops import onednn
    try:
        onednn.headers(), onednn.mindspore_dnnl()
    except RuntimeError as err:
        pytest.skip(str(err))
    assert onednn.dnnl_info()["library"]


# g++ 12 on an AMD Zen 5 CPU (which it does not know): -march=native means -march=znver3 plus the AVX-512
# extensions as separate flags (`g++ -march=native -Q --help=target` there lists them beside "-march= znver3").
ZEN5_GXX = """#!/bin/sh
for a do
  shift
  if [ "$a" = -march=native ]; then
    set -- "$@" -march=znver3 -mavx512f -mavx512bw -mavx512cd -mavx512dq -mavx512vl -mavx512ifma -mavx512vbmi \\
      -mavx512vbmi2 -mavx512vnni -mavx512bitalg -mavx512vpopcntdq -mavx512bf16
  else
    set -- "$@" "$a"
  fi
done
exec g++ "$@"
"""


def test_kernels_get_the_extensions_the_compiler_lists_beside_its_march_name(tmp_path, monkeypatch):
    """On Zen 5 with g++ 12 the kernels must be compiled with AVX-512 (16-lane vectors), not with -march=znver3
    alone, the -march= value `-Q --help=target` shows (which has no AVX-512)."""
    fake = tmp_path / "g++-zen5"
    fake.write_text(ZEN5_GXX)
    fake.chmod(0o755)
    monkeypatch.delenv(build.FLAGS_ENV, raising=False)
    flags = build.compile_flags(str(fake))
    macros = subprocess.run([str(fake), *flags, "-dM", "-E", "-x", "c++", "/dev/null"], capture_output=True,
                            text=True, check=True).stdout
    assert "#define __AVX512F__ 1" in macros and "#define __AVX512BF16__ 1" in macros
    assert {"avx512f", "avx512bw", "avx512bf16"} <= build.enabled_extensions(str(fake), flags)


def test_extra_compiler_flags_are_part_of_the_cache_key(monkeypatch):
    monkeypatch.delenv(build.FLAGS_ENV, raising=False)
    native = build.cache_key()
    monkeypatch.setenv(build.FLAGS_ENV, "-mno-avx512f")
    assert build.extra_flags() == ("-mno-avx512f",) and build.cache_key() != native
    monkeypatch.setenv(build.FLAGS_ENV, "-DX='a")
    with pytest.raises(RuntimeError, match="LRELU_CXXFLAGS=.*cannot be split"):
        build.extra_flags()


def test_white_list_outside_cache_dir_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("MS_CUSTOM_AOT_WHITE_LIST", str(tmp_path / "allowed"))
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path / "cache"))
    build.library_path.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="MS_CUSTOM_AOT_WHITE_LIST=.*does not contain the kernel cache"):
            build.library_path()
    finally:
        build.library_path.cache_clear()


def test_thread_count_option(monkeypatch):
    monkeypatch.setenv("LRELU_NUM_THREADS", "3")
    assert api.num_threads() == 3
    monkeypatch.setenv("LRELU_NUM_THREADS", "0")
    with pytest.raises(ValueError, match="LRELU_NUM_THREADS='0'.*positive integer"):
        api.num_threads()


@pytest.mark.parametrize("n", [0, 1, 1023, 2**31 - 1, 2**31 + 7, 2**33 + 12345])
@pytest.mark.parametrize("threads", [1, 2, 7])
@pytest.mark.parametrize("elem_size", [2, 4])
def test_tile_schedule_spans_all_indices_beyond_2_31(n, threads, elem_size):
    # Runs the kernels' own tile walk (same plan and threads) without touching memory: this checks the
    # 64-bit index arithmetic at sizes no test can allocate; the element loops are tested at small n.
    lib = ctypes.CDLL(build.library_path())
    out = (ctypes.c_int64 * 4)()
    lib.LeakyReluTileCoverage(ctypes.c_int64(n), ctypes.c_int64(elem_size), ctypes.c_int64(threads), out)
    lo, hi, total, tiles = list(out)
    assert total == n
    if n:
        assert (lo, hi) == (0, n) and tiles >= 1


@pytest.mark.parametrize("n, callers", [(2, 1), (7, 1), (64, 1), (5, 3)])
def test_worker_pool_runs_every_index_once(n, callers):
    # The kernels' persistent worker pool (worker_pool.h): every index of every job exactly once, over many
    # jobs in a row (workers sleeping and spinning between them) and with several callers at once.
    lib = ctypes.CDLL(build.library_path())
    lib.WorkerPoolMiscount.restype = ctypes.c_int64
    assert lib.WorkerPoolMiscount(ctypes.c_int(n), ctypes.c_int(300), ctypes.c_int(callers)) == 0


def test_ascend_device_selects_the_ascend_c_primitive():
    """On Ascend the API builds the Ascend C op (slope/clamp as attributes, no scalars input)."""
    from ops import ascend

    prim, scalars = api.kernel(0.2, None, "select", False, 1, "Ascend")
    assert scalars is None
    assert prim is ascend.ascend_leaky_relu_primitive(0.2, None)
    assert prim.attrs["negative_slope"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="formulation='maxmin'"):
        api.kernel(0.2, None, "maxmin", False, 1, "Ascend")


# ------------------------------------------------------------------ cache integrity (a fake compiler)
# The fake `c++` copies the real library (built once) to its -o target after a pause, and logs each
# build (it fails the -march=native probe, so builds get no target flags): cache logic is tested in seconds,
# and two processes overlap reliably.
FAKE_CXX = """#!/bin/sh
case "$*" in *-Q*|*probe.cc*) exit 1;; esac
while [ $# -gt 1 ]; do [ "$1" = -o ] && out=$2; shift; done
echo build >> "$FAKE_CXX_LOG"; sleep "${FAKE_CXX_SLEEP:-0}"
cp "$FAKE_CXX_LIB" "$out"
"""


@pytest.fixture
def fake_cxx(tmp_path, monkeypatch):
    """CXX=fakecxx on PATH, LRELU_CACHE_DIR=tmp_path/cache; yields the log of its builds."""
    real = build.library_path()  # the real library, from the normal cache
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fakecxx").write_text(FAKE_CXX)
    (bin_dir / "fakecxx").chmod(0o755)
    log = tmp_path / "builds.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CXX", "fakecxx")
    monkeypatch.setenv("FAKE_CXX_LIB", real)
    monkeypatch.setenv("FAKE_CXX_LOG", str(log))
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path / "cache"))
    build.library_path.cache_clear()
    yield log
    build.library_path.cache_clear()


def builds(log: Path) -> int:
    return len(log.read_text().splitlines())


@pytest.mark.parametrize("damage", ["truncate", "random", "empty", "no_checksum"])
def test_bad_cache_entry_is_rebuilt_with_one_warning(fake_cxx, damage, caplog):
    first = Path(build.library_path())
    size, data = first.stat().st_size, first.read_bytes()

    def rewrite(damaged: bytes) -> None:
        # a new inode, as another process's damage would be: the build's load check mapped the old file into
        # this process, and rewriting a mapped file in place ends the test process with SIGBUS later
        first.unlink()
        first.write_bytes(damaged)

    {"truncate": lambda: rewrite(data[: size // 2]),
     "random": lambda: rewrite(os.urandom(size)),
     "empty": lambda: rewrite(b""),
     "no_checksum": lambda: build.checksum_path(first).unlink()}[damage]()
    build.library_path.cache_clear()
    with caplog.at_level("WARNING", logger="ops.build"):
        again = Path(build.library_path())
    assert again == first and builds(fake_cxx) == 2
    warnings = [r.getMessage() for r in caplog.records if r.name == "ops.build"]
    assert len(warnings) == 1 and str(first) in warnings[0] and "rebuilding" in warnings[0]
    assert build.verify_entry(again) is None and first.stat().st_size == size
    ctypes.CDLL(str(again))  # loads (a truncated file would have been a bus error)


def test_cache_hit_needs_no_compiler(fake_cxx, monkeypatch):
    first = build.library_path()
    build.library_path.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")  # neither fakecxx nor g++ can be found
    assert build.library_path() == first and builds(fake_cxx) == 1


def test_concurrent_builds_make_one_entry(fake_cxx, monkeypatch):
    monkeypatch.setenv("FAKE_CXX_SLEEP", "2")
    code = "from ops import build; print(build.library_path())"
    env = {**os.environ, "GLOG_v": "3", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    paths = {out.strip().splitlines()[-1] for out, _ in outs}
    assert len(paths) == 1 and builds(fake_cxx) == 1  # the second process waited and used the first's build
    assert build.verify_entry(Path(paths.pop())) is None


def test_a_build_that_cannot_be_loaded_names_the_file_and_why(fake_cxx, tmp_path, monkeypatch):
    garbage = tmp_path / "garbage.so"
    garbage.write_bytes(b"not an ELF file" * 100)
    monkeypatch.setenv("FAKE_CXX_LIB", str(garbage))
    with pytest.raises(RuntimeError, match=r"built .*leaky_relu-\w+\.so but it cannot be loaded: .*(ELF|header)"):
        build.library_path()
    assert not list((tmp_path / "cache").glob("*.so*"))  # nothing half-made is left to be trusted


def test_unwritable_cache_dir_names_the_variable_and_a_fix(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("LRELU_CACHE_DIR", str(blocker / "cache"))
    build.library_path.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"LRELU_CACHE_DIR='.*a_file/cache' is not writable .*set "
                                               r"LRELU_CACHE_DIR to a writable folder"):
            build.library_path()
    finally:
        build.library_path.cache_clear()
