"""scripts/bench/bench_accuracy.py: the op's rounding error, bit-exact with the reference, never worse than naive
fp16."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_script

pytestmark = pytest.mark.slow  # every test here is end-to-end


def test_the_op_is_bit_exact_and_float16_beats_naive_float16_math(tmp_path: Path) -> None:
    out = tmp_path / "accuracy.json"
    done = run_script("scripts/bench/bench_accuracy.py", "--slopes", "0.2", "--json", str(out), timeout=600)
    assert done.returncode == 0, done.stderr
    f32, f16 = json.loads(out.read_text())
    assert (f32["dtype"], f16["dtype"]) == ("float32", "float16")
    assert f32["bit_exact_with_reference"] and f16["bit_exact_with_reference"]
    assert f32["forward_max_rel"] < 2 ** -23 and f32["backward_max_rel"] < 2 ** -23  # one float32 rounding
    assert f16["forward_max_rel"] < 2 ** -11  # one float16 rounding, where naive math rounds twice
    assert f16["forward_max_abs"] < f16["naive_fp16_forward_max_abs"]
