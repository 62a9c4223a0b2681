"""What can be checked of the Ascend C path without CANN: the build script's refusal, the kernel-side subset
of tiling.h, the UB budget of the host tiling, and that the MindSpore registration matches the op definition.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "ops" / "csrc"
ASCENDC = CSRC / "ascendc"
BUILD_SCRIPT = ROOT / "scripts" / "build_ascend_ops.sh"


def run_build_script(env_updates: dict[str, str]) -> subprocess.CompletedProcess:
    """The build script with ASCEND_* removed from the environment, then env_updates applied."""
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")}
    env.update(env_updates)
    return subprocess.run(["bash", str(BUILD_SCRIPT)], env=env, capture_output=True, text=True, timeout=60)


def test_build_script_fails_clearly_without_cann() -> None:
    result = run_build_script({})
    assert result.returncode == 1
    assert "the CANN toolkit was not found: set ASCEND_HOME_PATH or ASCEND_TOOLKIT_HOME" in result.stderr


def test_build_script_fails_clearly_without_msopgen(tmp_path: Path) -> None:
    result = run_build_script({"ASCEND_HOME_PATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 1
    assert f"msopgen was not found on PATH or in {tmp_path}" in result.stderr


BUDGET_PROGRAM = r"""
#include <cstdio>
#include "tiling.h"
#include "lrelu_ascend_layout.h"
// For each dtype size, direction and clamp: the plan the host tiling makes for a 192 KiB UB and 40 cores,
// and the UB bytes the kernel allocates for it (queues, fp32 scratch, compare mask).
int main() {
  const int64_t sizes[2] = {4, 2};
  for (int64_t e : sizes)
    for (int backward = 0; backward < 2; ++backward)
      for (int clamp = 0; clamp < 2; ++clamp) {
        const lrelu::TilingParams p = {1 << 24, e, 192 * 1024, lrelu::kAscendUsableFraction,
                                       lrelu::kAscendAlignElems * e, 40, lrelu::kAscendBuffers,
                                       lrelu::ascend_live_tensors(e, backward, clamp)};
        const lrelu::TilingPlan plan = lrelu::plan_tiling(p);
        const int64_t bytes = plan.tile_len * (lrelu::kAscendBuffers * lrelu::ascend_queues(backward) * e +
                                               4 * lrelu::ascend_scratch_tiles(e, backward, clamp) + 1);
        std::printf("%ld %d %d %ld %ld\n", e, backward, clamp, plan.tile_len, bytes);
      }
}
"""


def test_kernel_ub_allocation_fits_the_planned_budget(tmp_path: Path) -> None:
    source = tmp_path / "budget.cc"
    source.write_text(BUDGET_PROGRAM)
    subprocess.run(["g++", "-std=c++17", "-Wall", "-Werror", f"-I{CSRC}", f"-I{ASCENDC}", str(source),
                    "-o", str(tmp_path / "budget")], check=True)
    rows = [line.split() for line in subprocess.run([str(tmp_path / "budget")], capture_output=True,
                                                    text=True, check=True).stdout.splitlines()]
    assert len(rows) == 8
    for elem_size, _, _, tile_len, bytes_used in (map(int, row) for row in rows):
        assert tile_len > 0 and tile_len % 64 == 0
        assert bytes_used <= int(192 * 1024 * 0.6)


DEVICE_SUBSET = r"""
#include <cstdint>
#define __aicore__
#include "tiling.h"
// Only the structs and core_range() exist inside a kernel; host functions must be compiled out.
int64_t first_end(const lrelu::TilingPlan& plan) { return lrelu::core_range(plan, 0).end; }
int uses_host_function() { return lrelu::cpu_default_buffer_bytes() > 0; }
"""


def test_kernel_side_of_tiling_header_has_only_structs_and_core_range(tmp_path: Path) -> None:
    source = tmp_path / "device.cc"
    source.write_text(DEVICE_SUBSET)
    result = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-D__CCE_AICORE__=220", f"-I{CSRC}",
                             str(source)], capture_output=True, text=True)
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "cpu_default_buffer_bytes" in errors[0], result.stderr


def test_mindspore_registration_matches_the_op_definition() -> None:
    from ops.ascend import GRAD_OP_NAME, OP_NAME, ascend_leaky_relu_primitive, reg_info

    definition = {op["op"]: op for op in json.loads((ASCENDC / "leaky_relu_custom.json").read_text())}
    for op_name, inputs, output in [(OP_NAME, ("x",), "y"), (GRAD_OP_NAME, ("dy", "x"), "dx")]:
        info = reg_info(op_name, inputs, output, 0.2, -1.0)
        spec = definition[op_name]
        assert [i["name"] for i in info["inputs"]] == [i["name"] for i in spec["input_desc"]]
        assert [o["name"] for o in info["outputs"]] == [o["name"] for o in spec["output_desc"]]
        assert [a["name"] for a in info["attr"]] == [a["name"] for a in spec["attr"]]
    prim = ascend_leaky_relu_primitive(0.2, 256.0)
    assert (prim.attrs["negative_slope"], prim.attrs["clamp"]) == (pytest.approx(0.2), 256.0)
    assert ascend_leaky_relu_primitive(0.2, None).attrs["clamp"] == -1.0
