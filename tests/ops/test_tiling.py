"""Properties of the tiling plan (ops/tiling.py), the articles' worked example, and parameter errors."""

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ops.tiling import (
    ASCEND_UB_BYTES,
    CoreRange,
    TilingParams,
    core_range,
    core_ranges,
    cpu_default_buffer_bytes,
    parse_cache_size,
    plan_tiling,
    tiling_error,
)


@st.composite
def valid_params(draw, max_n: int = 2**33) -> TilingParams:
    """Valid parameters: element sizes of real dtypes, buffers from 1 KiB (Ascend-like) to 4 MiB (L2-like)."""
    elem_size = draw(st.sampled_from([1, 2, 4, 8]))
    params = TilingParams(
        n=draw(st.one_of(st.integers(0, 4096), st.integers(0, max_n))),
        elem_size=elem_size,
        buffer_bytes=draw(st.integers(1024, 4 << 20)),
        usable_fraction=draw(st.floats(0.05, 1.0)),
        align_bytes=elem_size * draw(st.sampled_from([1, 2, 8, 16, 32])),
        cores=draw(st.integers(1, 64)),
        buffers=draw(st.integers(1, 3)),
        live_tensors=draw(st.integers(1, 4)),
    )
    assume(tiling_error(params) is None)
    return params


@settings(max_examples=400, deadline=None)
@given(valid_params())
def test_plan_invariants_up_to_2_pow_33(p: TilingParams) -> None:
    plan = plan_tiling(p)
    ranges = core_ranges(plan)
    align_elems = p.align_bytes // p.elem_size
    usable = p.buffer_bytes * p.usable_fraction

    # Tile fits the usable buffer, is aligned, and is the largest aligned length that fits.
    assert plan.tile_len * p.elem_size * p.buffers * p.live_tensors <= usable
    assert plan.tile_len % align_elems == 0 and plan.tile_len >= align_elems
    assert (plan.tile_len + align_elems) * p.elem_size * p.buffers * p.live_tensors > int(usable)

    # Every element is covered exactly once: ranges are contiguous from 0 to n and each range is
    # exactly its full tiles plus its tail, so no tile reads or writes past the end.
    assert len(ranges) == plan.used_cores
    position = 0
    for r in ranges:
        assert r.start == position
        assert r.start % plan.tile_len == 0
        assert r.end == r.start + r.full_tiles * plan.tile_len + r.tail_len <= p.n
        assert 0 <= r.tail_len < plan.tile_len
        position = r.end
    assert position == p.n

    # Only the globally last tile may be partial.
    assert all(r.tail_len == 0 for r in ranges[:-1])
    assert plan.total_tiles == sum(r.full_tiles + (r.tail_len > 0) for r in ranges)

    # Core loads differ by at most one tile; no core is given zero tiles; tiny tensors use one core.
    loads = [r.full_tiles + (r.tail_len > 0) for r in ranges]
    if loads:
        assert max(loads) - min(loads) <= 1 and min(loads) >= 1
    assert plan.used_cores == min(p.cores, -(-p.n // plan.tile_len))
    if 0 < p.n <= plan.tile_len:
        assert plan.used_cores == 1 and ranges == [CoreRange(0, p.n, p.n // plan.tile_len, p.n % plan.tile_len)]
    if p.n == 0:
        assert plan.used_cores == plan.total_tiles == 0 and ranges == []


@settings(max_examples=150, deadline=None)
@given(valid_params(max_n=20000))
def test_every_element_written_exactly_once(p: TilingParams) -> None:
    plan = plan_tiling(p)
    hits = np.zeros(p.n, dtype=np.int64)
    for core in range(p.cores):  # cores past used_cores are idle
        r = core_range(plan, core)
        for t in range(r.full_tiles):
            hits[r.start + t * plan.tile_len: r.start + (t + 1) * plan.tile_len] += 1
        hits[r.end - r.tail_len: r.end] += 1
    assert np.all(hits == 1)


def test_articles_worked_example() -> None:
    # 1,000,000 fp32, 192 KiB UB, 60 % usable, 32-element (128-byte) alignment, 8 cores, one buffer of
    # one tensor as in the article: 196608 * 0.6 = 117964.8 B -> 29491 elements -> 29472 aligned.
    p = TilingParams(n=1_000_000, elem_size=4, buffer_bytes=ASCEND_UB_BYTES, usable_fraction=0.6,
                     align_bytes=32 * 4, cores=8, buffers=1, live_tensors=1)
    plan = plan_tiling(p)
    assert (plan.tile_len, plan.total_tiles, plan.used_cores) == (29472, 34, 8)
    assert (plan.base_tiles, plan.extra_tiles) == (4, 2)
    ranges = core_ranges(plan)
    assert [r.full_tiles for r in ranges] == [5, 5, 4, 4, 4, 4, 4, 3]
    assert ranges[-1] == CoreRange(884160, 1_000_000, 3, 27424)
    # The article's own 29408 (= 919 * 32) is not the floor of 29491 to a multiple of 32, and with it
    # ceil(1e6 / 29408) would be 35, not the 34 the article states.
    assert -(-1_000_000 // 29408) == 35


def test_idle_core_gets_empty_range_at_end() -> None:
    plan = plan_tiling(TilingParams(n=100, elem_size=4, buffer_bytes=192 * 1024, cores=8))
    assert plan.used_cores == 1
    assert core_range(plan, 5) == CoreRange(100, 100, 0, 0)
    with pytest.raises(ValueError, match="core must be >= 0, got -1"):
        core_range(plan, -1)


BASE = dict(n=10, elem_size=4, buffer_bytes=192 * 1024, usable_fraction=0.6, align_bytes=32,
            cores=8, buffers=2, live_tensors=2)


@pytest.mark.parametrize("field, value, message", [
    ("n", -1, "n must be >= 0"),
    ("elem_size", 0, "elem_size must be in 1..64"),
    ("buffer_bytes", 0, "buffer_bytes must be in 1..2^40"),
    ("buffer_bytes", (1 << 40) + 1, "buffer_bytes must be in 1..2^40"),
    ("usable_fraction", 0.0, "usable_fraction must be in (0, 1]"),
    ("usable_fraction", 1.5, "usable_fraction must be in (0, 1]"),
    ("usable_fraction", float("nan"), "usable_fraction must be in (0, 1]"),
    ("align_bytes", 30, "align_bytes must be a positive multiple of elem_size"),
    ("align_bytes", 0, "align_bytes must be a positive multiple of elem_size"),
    ("cores", 0, "cores must be >= 1"),
    ("buffers", 0, "buffers must be in 1..64"),
    ("live_tensors", 65, "live_tensors must be in 1..64"),
    ("buffer_bytes", 200, "too small for one aligned tile"),
])
def test_invalid_parameters_name_the_parameter(field: str, value, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        plan_tiling(TilingParams(**{**BASE, field: value}))


@pytest.mark.parametrize("field, value", [("n", 1.5), ("cores", True), ("usable_fraction", "0.6")])
def test_non_numeric_parameters_raise_type_error(field: str, value) -> None:
    with pytest.raises(TypeError, match=field):
        TilingParams(**{**BASE, field: value})


@pytest.mark.parametrize("text, expected", [
    ("2048K\n", 2 << 20), ("1M", 1 << 20), ("512", 512), ("1G", 1 << 30), ("", 0), ("K", 0),
])
def test_parse_cache_size(text: str, expected: int) -> None:
    assert parse_cache_size(text) == expected


def test_cpu_default_buffer_is_a_plausible_l2_size() -> None:
    assert 64 * 1024 <= cpu_default_buffer_bytes() <= 1 << 30
