"""Python mirror of ops/csrc/tiling.h: the one tiling plan shared by every LeakyReLU kernel.

Same names and the same integer arithmetic as the header (Python ints, so 2**33-element tensors are
exact); tests/ops/test_tiling_cpp.py compiles the header and compares both on random inputs.
Invalid parameters raise ValueError with the header's message (the header returns tile_len 0).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

MAX_BUFFER_BYTES = 1 << 40
MAX_SMALL_PARAM = 64
MAX_ALIGN_BYTES = 1 << 20
FALLBACK_CPU_BUFFER_BYTES = 1 << 20

ASCEND_UB_BYTES = 192 * 1024
DEFAULT_USABLE_FRACTION = 0.6
DEFAULT_ALIGN_BYTES = 32
DEFAULT_BUFFERS = 2

_L2_SYSFS = "/sys/devices/system/cpu/cpu0/cache/index2/size"


@dataclass(frozen=True)
class TilingParams:
    """Inputs of the plan; field meanings and limits as in tiling.h."""

    n: int
    elem_size: int
    buffer_bytes: int
    usable_fraction: float = DEFAULT_USABLE_FRACTION
    align_bytes: int = DEFAULT_ALIGN_BYTES
    cores: int = 1
    buffers: int = DEFAULT_BUFFERS
    live_tensors: int = 2

    def __post_init__(self) -> None:
        """Reject non-integer counts early: the plan's arithmetic is exact only on ints."""
        for name in ("n", "elem_size", "buffer_bytes", "align_bytes", "cores", "buffers", "live_tensors"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
        if isinstance(self.usable_fraction, bool) or not isinstance(self.usable_fraction, (int, float)):
            raise TypeError(f"usable_fraction must be a float, got {self.usable_fraction!r}")


@dataclass(frozen=True)
class TilingPlan:
    """Tile length in elements, cores used, tiles in all, and their spread (first extra_tiles cores take one more)."""

    n: int
    tile_len: int
    used_cores: int
    total_tiles: int
    base_tiles: int
    extra_tiles: int


@dataclass(frozen=True)
class CoreRange:
    """Element range [start, end) of one core, its full tiles and its tail length."""

    start: int
    end: int
    full_tiles: int
    tail_len: int


def usable_bytes(p: TilingParams) -> int:
    """floor(buffer_bytes * usable_fraction), in double precision exactly like the header."""
    return int(math.floor(float(p.buffer_bytes) * p.usable_fraction))


def tiling_error(p: TilingParams) -> str | None:
    """Reason the parameters are invalid (the header's message), or None when valid."""
    if p.n < 0:
        return "n must be >= 0"
    if not 1 <= p.elem_size <= MAX_SMALL_PARAM:
        return "elem_size must be in 1..64"
    if not 1 <= p.buffer_bytes <= MAX_BUFFER_BYTES:
        return "buffer_bytes must be in 1..2^40"
    if not 0.0 < p.usable_fraction <= 1.0:
        return "usable_fraction must be in (0, 1]"
    if not 1 <= p.align_bytes <= MAX_ALIGN_BYTES or p.align_bytes % p.elem_size != 0:
        return "align_bytes must be a positive multiple of elem_size, at most 2^20"
    if p.cores < 1:
        return "cores must be >= 1"
    if not 1 <= p.buffers <= MAX_SMALL_PARAM:
        return "buffers must be in 1..64"
    if not 1 <= p.live_tensors <= MAX_SMALL_PARAM:
        return "live_tensors must be in 1..64"
    if usable_bytes(p) // (p.buffers * p.live_tensors * p.elem_size) < p.align_bytes // p.elem_size:
        return ("buffer_bytes * usable_fraction is too small for one aligned tile of "
                "buffers * live_tensors tensors")
    return None


def plan_tiling(p: TilingParams) -> TilingPlan:
    """Cut n elements into aligned tiles that fit the usable buffer and spread them over the cores."""
    error = tiling_error(p)
    if error is not None:
        raise ValueError(f"invalid tiling parameters: {error} (got {p})")
    align_elems = p.align_bytes // p.elem_size
    raw_len = usable_bytes(p) // (p.buffers * p.live_tensors * p.elem_size)
    tile_len = raw_len // align_elems * align_elems
    total_tiles = -(-p.n // tile_len)
    used_cores = min(p.cores, total_tiles)
    base_tiles, extra_tiles = divmod(total_tiles, used_cores) if used_cores else (0, 0)
    return TilingPlan(p.n, tile_len, used_cores, total_tiles, base_tiles, extra_tiles)


def core_range(plan: TilingPlan, core: int) -> CoreRange:
    """Range of one core; a core at or past used_cores is idle and gets the empty range at n."""
    if core < 0:
        raise ValueError(f"core must be >= 0, got {core}")
    if core >= plan.used_cores:
        return CoreRange(plan.n, plan.n, 0, 0)
    tiles_before = core * plan.base_tiles + min(core, plan.extra_tiles)
    my_tiles = plan.base_tiles + (1 if core < plan.extra_tiles else 0)
    start = tiles_before * plan.tile_len
    end = min((tiles_before + my_tiles) * plan.tile_len, plan.n)
    full_tiles, tail_len = divmod(end - start, plan.tile_len)
    return CoreRange(start, end, full_tiles, tail_len)


def core_ranges(plan: TilingPlan) -> list[CoreRange]:
    """Ranges of all used cores, in order."""
    return [core_range(plan, core) for core in range(plan.used_cores)]


def parse_cache_size(text: str) -> int:
    """Parse a sysfs cache size such as '1024K' or '2M' into bytes; 0 when unreadable."""
    digits = len(text) - len(text.lstrip("0123456789"))
    if digits == 0:
        return 0
    value = int(text[:digits])
    shift = {"k": 10, "m": 20, "g": 30}.get(text[digits:digits + 1].lower(), 0)
    return value << shift


def cpu_default_buffer_bytes() -> int:
    """CPU buffer size for the plan: the L2 cache (sysconf, then sysfs), else FALLBACK_CPU_BUFFER_BYTES."""
    try:
        from_sysconf = os.sysconf("SC_LEVEL2_CACHE_SIZE")
    except (ValueError, OSError):
        from_sysconf = 0
    if from_sysconf > 0:
        return from_sysconf
    try:
        with open(_L2_SYSFS, encoding="ascii") as f:
            from_sysfs = parse_cache_size(f.read())
    except OSError:
        from_sysfs = 0
    return from_sysfs if from_sysfs > 0 else FALLBACK_CPU_BUFFER_BYTES
