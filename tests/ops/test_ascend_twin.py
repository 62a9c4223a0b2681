"""The Ascend C op (ops/csrc/ascendc) compiled unmodified against the strict Ascend C twin (tools/ascend_twin)
and run one simulated AI Vector core after another: bit-exact against ops/reference.py on every edge size of
the tiling, no hardware rule broken; broken kernels and rule-breaking code are caught; the host tiling
gives the plan of ops/tiling.py.
"""
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ops import reference as ref
from ops import tiling
from ops.build import cache_dir
from tools.ascend_twin import twin

ROOT = Path(__file__).resolve().parents[2]

SOC = twin.SOCS[twin.DEFAULT_SOC]
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
SLOPES = (0.0, 0.01, 0.2)
CLAMP = 2.0


@pytest.fixture(scope="session")
def lib():
    """The twin library with the real kernels, compiled once per session (cached on disk across sessions)."""
    return twin.build()


def edge_sizes(tile_len: int) -> list[int]:
    """The tiling property tests' edge sizes for one tile length: tiny, one tile +-1, 1,000,000, and sizes
    whose tail lands on the last of several cores (one more tile than cores; just under two tiles per core)."""
    cores = SOC.vector_cores
    return [0, 1, 31, 32, 33, tile_len - 1, tile_len, tile_len + 1, 1_000_000, cores * tile_len + 1,
            (2 * cores - 1) * tile_len + tile_len // 2 + 3]


def data(n: int, dtype, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """x: boundary values (+-0, subnormals, extremes, NaN, +-inf, +-clamp and beyond) at the start and at the
    end (the tail), random values between; dy random."""
    rng = np.random.default_rng(seed)
    info = ml_dtypes.finfo(dtype)
    special = np.array([0.0, -0.0, 1.0, -1.0, info.tiny, -info.tiny, info.smallest_subnormal,
                        -info.smallest_subnormal, info.max, -info.max, np.nan, np.inf, -np.inf,
                        CLAMP, -CLAMP, 2 * CLAMP, -2 * CLAMP, -CLAMP / 0.2, -CLAMP / 0.01], dtype=dtype)
    x = (rng.standard_normal(n) * 50).astype(dtype)
    k = min(special.size, n)
    x[:k] = special[:k]
    x[n - k:] = special[:k]
    return x, (rng.standard_normal(n) * 10).astype(dtype)


def assert_bit_exact(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    bad = twin.mismatches(actual, expected)
    assert bad.size == 0, (f"{what}: {bad.size} elements differ, first at {bad[0]}: twin {actual[bad[0]]!r} "
                           f"vs reference {expected[bad[0]]!r}")


@pytest.mark.parametrize("clamp", [None, CLAMP], ids=["noclamp", "clamp"])
@pytest.mark.parametrize("slope", SLOPES)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_kernels_bit_exact_on_every_edge_size(lib, dtype: str, slope: float, clamp) -> None:
    for backward in (False, True):
        tile_len = twin.host_tiling(1, dtype, backward=backward, clamp=clamp).plan.tile_len
        for n in edge_sizes(tile_len):
            x, dy = data(n, DTYPES[dtype], seed=n)
            what = f"{'backward' if backward else 'forward'} n={n}"
            try:
                result = twin.run(x, dy=dy if backward else None, slope=slope, clamp=clamp)
            except twin.TwinRuleError as error:
                pytest.fail(f"{what}: {error}")
            expected = ref.backward(x, dy, slope, clamp) if backward else ref.forward(x, slope, clamp)
            assert_bit_exact(result.output, expected, what)
            assert result.ub_bytes <= twin.UB_ALLOC_BYTES
            assert result.tiles == result.plan.plan.total_tiles


def test_multi_core_tail_sizes_really_spread_the_tail() -> None:
    tile_len = twin.host_tiling(1, "float32").plan.tile_len
    sizes = edge_sizes(tile_len)
    for n in sizes[-2:]:
        plan = twin.host_tiling(n, "float32").plan
        last = tiling.core_range(plan, plan.used_cores - 1)
        assert plan.used_cores == SOC.vector_cores and last.tail_len > 0


@pytest.mark.parametrize("dtype, clamp, gradient", [
    # fp16: 0.2 * -2 = -0.400000006 in fp32 is past -0.39995, but the stored output -0.39990234 is inside
    ("float16", 0.39995, 0.2),
    # bf16: -0.400000006 is inside -0.4002, but the stored output -0.400390625 is past it
    ("bfloat16", 0.4002, 0.0),
])
def test_half_backward_decides_the_clamp_on_the_stored_output(lib, dtype: str, clamp: float, gradient: float) -> None:
    # The gradient is cut where the forward output, as stored in the tensor's dtype, was clamped (this was
    # decided on the unrounded fp32 product in the kernel before the twin ran it).
    x = np.array([-2.0] * 70 + [3.0], DTYPES[dtype])
    dy = np.ones_like(x)
    result = twin.run(x, dy=dy, slope=0.2, clamp=clamp)
    assert_bit_exact(result.output, ref.backward(x, dy, 0.2, clamp), f"{dtype} backward at the clamp edge")
    assert float(result.output[0]) == float(np.array(gradient, DTYPES[dtype])) and result.output[-1] == 0


@pytest.mark.parametrize("variant, rule, n", [
    ("full_tile_tail", "[GM bounds] DataCopy GM->UB touches x elements", 100),
    ("full_tile_tail", "(core 47 of 48)", None),
    ("short_tail_copy", "[UB uninitialised] DataCopyPad UB->GM writes y element 99", 100),
    ("full_tile_compute", "[UB uninitialised] Muls(0.200000003) reads src VECIN#0.buf0[0] lane 100 of 4864", 100),
    ("skip_tail", "[GM coverage] y element 0 was written 0 times by the 1 cores", 100),
    ("no_free", "[queue discipline] VECOUT#0", 100),
])
def test_broken_kernel_variants_are_caught(lib, variant: str, rule: str, n) -> None:
    n = n if n is not None else SOC.vector_cores * twin.host_tiling(1, "float32").plan.tile_len + 33
    x = np.linspace(-3, 3, n, dtype=np.float32)
    with pytest.raises(twin.TwinRuleError) as caught:
        twin.run(x, slope=0.2, variant=variant)
    assert rule in str(caught.value)
    twin.run(x, slope=0.2)  # the real kernel on the same input breaks no rule


@pytest.fixture(scope="session")
def rule_cases() -> dict[str, str]:
    """tests/ops/ascend_twin_rules.cc compiled against the twin (cached by content) and run: case -> message."""
    source = Path(__file__).with_name("ascend_twin_rules.cc")
    key = hashlib.sha256(b"".join(p.read_bytes() for p in [source, *sorted(twin.INCLUDE.rglob("*.h"))]))
    binary = cache_dir() / "ascend_twin" / f"rules-{key.hexdigest()[:16]}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_name(f"{binary.name}.{os.getpid()}.tmp")
        subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{twin.INCLUDE}", str(source),
                        "-o", str(tmp)], check=True)
        os.replace(tmp, binary)  # atomic: a concurrent session never runs a partial binary
    out = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    return dict(line.split("\t", 1) for line in out.splitlines())


@pytest.mark.parametrize("case, message", [
    ("ok", "no rule broken"),
    ("poison_reaches_gm", "[UB uninitialised] DataCopyPad UB->GM writes y element 5"),
    ("ub_capacity", "[UB capacity] InitBuffer(VECIN#0, num=2, len=102400)"),
    ("datacopy_length", "[DataCopy alignment] DataCopy x[0:7]"),
    ("datacopy_gm_offset", "[DataCopy alignment] DataCopy x[3:11]"),
    ("gm_window", "[GM bounds] DataCopy GM->UB touches x elements [0, 64) outside the SetGlobalBuffer window [0, 16)"),
    ("gm_outside_tensor", "[GM bounds] SetGlobalBuffer"),
    ("gm_write_input", "[GM bounds] DataCopy UB->GM writes to input tensor x"),
    ("compare_count", "[vector count] CompareScalar(GT 0)"),
    ("ub_misaligned_operand", "[UB alignment] Muls(2) dst VECCALC#buf0[3]"),
    ("operand_overlap", "[UB overlap] Muls(2)"),
    ("dequeue_empty", "[queue discipline] DeQue on empty VECIN#0"),
    ("alloc_exhausted", "[queue discipline] AllocTensor on VECIN#0"),
    ("queue_depth", "[queue discipline] EnQue on VECIN#0 with 1 tensor(s) already queued: depth is 1"),
    ("vector_before_dequeue", "[queue discipline] Muls(2) src VECIN#0.buf0[0] is allocated (before EnQue)"),
    ("leak", "[queue discipline] VECOUT#0: 1 of 1 buffers still allocated"),
    ("stale_read", "[UB uninitialised] Muls(2) reads src VECIN#0.buf0[0] lane 0 of 128, which nothing wrote since"),
    ("pad_zero_length", "[DataCopyPad params] DataCopyPad GM->UB: blockCount 1 must be in 1..4095 and blockLen 0"),
])
def test_every_twin_rule_fires(rule_cases: dict[str, str], case: str, message: str) -> None:
    assert message in rule_cases[case]


def python_plan(n: int, elem_size: int, backward: bool, clamp: bool, ub: int, cores: int) -> tiling.TilingPlan:
    return tiling.plan_tiling(tiling.TilingParams(
        n=n, elem_size=elem_size, buffer_bytes=ub, usable_fraction=0.6, align_bytes=64 * elem_size, cores=cores,
        buffers=2, live_tensors=twin.live_tensors(elem_size, backward, clamp)))


@settings(max_examples=300, deadline=None)
@given(n=st.one_of(st.integers(0, 5000), st.integers(0, 2**33)), dtype=st.sampled_from(sorted(DTYPES)),
       backward=st.booleans(), clamp=st.sampled_from([None, 256.0]), ub=st.integers(16 * 1024, 1 << 20),
       cores=st.integers(1, 64))
def test_host_tiling_gives_the_python_plan(lib, n, dtype, backward, clamp, ub, cores) -> None:
    elem_size = np.dtype(DTYPES[dtype]).itemsize
    try:
        expected = python_plan(n, elem_size, backward, clamp is not None, ub, cores)
    except ValueError:
        with pytest.raises(twin.TwinRuleError, match="tiling failed: buffer_bytes"):
            twin.host_tiling(n, dtype, backward=backward, clamp=clamp, ub_bytes=ub, cores=cores)
        return
    got = twin.host_tiling(n, dtype, backward=backward, clamp=clamp, ub_bytes=ub, cores=cores)
    assert got.plan == expected
    assert got.block_dim == max(expected.used_cores, 1)
    assert got.has_clamp == (clamp is not None) and got.clamp == (clamp or 0.0)


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 4863, 4864, 4865, 1_000_000, 2**31 - 1, 2**31 + 5, 2**33 + 7])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_host_tiling_of_edge_sizes_on_the_910b(lib, n: int, dtype: str) -> None:
    for backward in (False, True):
        got = twin.host_tiling(n, dtype, backward=backward)
        expected = python_plan(n, np.dtype(DTYPES[dtype]).itemsize, backward, False, SOC.ub_bytes, SOC.vector_cores)
        assert got.plan == expected
        assert got.slope == np.float32(0.2) and got.workspace_bytes == 16 * 1024 * 1024


@pytest.mark.parametrize("slope, message", [(-0.1, "negative_slope must be finite and >= 0, got -0.1"),
                                            (float("nan"), "negative_slope must be finite and >= 0, got nan")])
def test_host_tiling_rejects_bad_slopes(lib, slope: float, message: str) -> None:
    with pytest.raises(twin.TwinRuleError, match=message):
        twin.host_tiling(10, "float32", slope=slope)


def test_op_definition_matches_the_msopgen_json(lib) -> None:
    for spec in json.loads((twin.ASCENDC / "leaky_relu_custom.json").read_text()):
        info = dict(part.split("=", 1) for part in twin.op_info(spec["op"]).split(";"))
        assert info["inputs"].split(",") == [i["name"] for i in spec["input_desc"]]
        assert info["outputs"].split(",") == [o["name"] for o in spec["output_desc"]]
        attrs = [a.split(":")[:2] for a in info["attrs"].split(",")]
        assert attrs == [[a["name"], a["param_type"]] for a in spec["attr"]]


def test_dump_shows_each_tile_buffer_for_the_range(lib) -> None:
    x = np.linspace(-4, 4, 100, dtype=np.float32)
    result = twin.run(x, slope=0.2, clamp=0.5, dump=(97, 100))
    lines = result.dump.splitlines()
    assert lines[0] == "core 0, tile at element 0 (100 elements copied in)"
    assert lines[1].split()[-3:] == ["97", "98", "99"]
    steps = [re.match(r"\s*(\w+)", line).group(1) for line in lines[2:]]
    assert steps == ["DataCopyPad", "Muls", "CompareScalar", "Select", "CompareScalar", "Select", "CompareScalar",
                     "Select", "DataCopyPad"]
    assert "x[0:100] -> VECIN#0.buf0[0]" in lines[2] and "VECOUT#0.buf0[0] -> y[0:100]" in lines[-1]
    scaled = [np.float32(v) for v in lines[3].split()[-3:]]
    assert scaled == [np.float32(0.2) * v for v in x[97:]]
    assert lines[-1].split()[-3:] == ["0.5", "0.5", "0.5"]


def load_script():
    from tools.ascend_twin import __main__ as module  # the command `python -m tools.ascend_twin`
    return module


def test_cli_passes_and_dumps(lib, capsys) -> None:
    assert load_script().main(["--n", "1000", "--dtype", "float16", "--clamp", "256", "--dump", "--range",
                               "995:1000"]) == 0
    out = capsys.readouterr().out
    assert "forward plan (Ascend910B1" in out and "tile_len=3,648" in out
    assert "bit-exact vs ops/reference.py" in out and out.rstrip().endswith("OK")
    assert "core 0, tile at element 0 (1000 elements copied in)" in out


def test_cli_fails_on_a_broken_kernel(lib, capsys) -> None:
    assert load_script().main(["--n", "100", "--variant", "full_tile_tail"]) == 1
    out = capsys.readouterr().out
    assert "forward: RULE BROKEN: [GM bounds]" in out and out.rstrip().endswith("FAILED")


@pytest.mark.parametrize("argv, message", [(["--n", "-1"], "--n must be in 0.."),
                                           (["--n", "10", "--range", "5:20"], "--range 5:20 must satisfy")])
def test_cli_rejects_bad_arguments(capsys, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit):
        load_script().main(argv)
    assert message in capsys.readouterr().err
