"""Kernel build cache, compiler errors, thread option and 64-bit tile indexing."""
import ctypes
import os

import pytest

from ops import api, build


def test_missing_compiler_error_names_it(monkeypatch):
    monkeypatch.setenv("CXX", "g++-not-installed")
    with pytest.raises(RuntimeError, match="needs the C\\+\\+ compiler 'g\\+\\+-not-installed'"):
        build.compiler()


def test_library_is_cached_by_content_and_rebuilt_in_a_new_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LRELU_CACHE_DIR", str(tmp_path))
    build.library_path.cache_clear()
    try:
        first = build.library_path()
        mtime = os.stat(first).st_mtime_ns
        build.library_path.cache_clear()
        assert build.library_path() == first and os.stat(first).st_mtime_ns == mtime
        assert os.path.dirname(first) == str(tmp_path)
        assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(first)]  # no temp files left
    finally:
        build.library_path.cache_clear()


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


def test_ascend_device_selects_the_ascend_c_primitive():
    """On Ascend the API builds the Ascend C op (slope/clamp as attributes, no scalars input)."""
    from ops import ascend

    prim, scalars = api.kernel(0.2, None, "select", False, 1, "Ascend")
    assert scalars is None
    assert prim is ascend.ascend_leaky_relu_primitive(0.2, None)
    assert prim.attrs["negative_slope"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="formulation='maxmin'"):
        api.kernel(0.2, None, "maxmin", False, 1, "Ascend")
