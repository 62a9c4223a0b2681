"""scripts/bench/swap_exactness.py --quick: the JSON is one record whose rows hold every layer x dtype x mode x output,
and its headline claims (LeakyReLU and PReLU bit for bit on normal float32 numbers, float16 within 1 ulp); --render
prints the table."""
import json
from pathlib import Path

import pytest
import records

from tests.helpers import run_script

pytestmark = pytest.mark.slow  # every test here is end-to-end


def test_quick_run_writes_the_records_and_renders_them(tmp_path: Path) -> None:
    out = tmp_path / "exactness.json"
    result = run_script("scripts/bench/swap_exactness.py", "--quick", "--json", str(out), timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    [run] = records.check(json.loads(out.read_text()), str(out))
    assert run["context"]["quick"] and run["context"]["mindspore"] and len(run["load_avg_1min"]) == 2
    slopes = [r for r in run["rows"] if r["layer"] == "nn.RReLU"]
    compared = {(r["layer"], r["dtype"], r["mode"], r["output"], r["class"]): r for r in run["rows"]
                if r["layer"] != "nn.RReLU"}
    layers = {"nn.LeakyReLU(0.2)", "nn.LeakyReLU(0.01)", "nn.LeakyReLU(0)", "nn.ReLU", "nn.PReLU(4)", "nn.ELU"}
    assert {k[0] for k in compared} == layers
    for mode in ("pynative", "graph"):
        for layer in ("nn.LeakyReLU(0.2)", "nn.PReLU(4)"):
            for output in ("y", "dx"):
                r = compared[(layer, "float32", mode, output, "normal")]
                assert r["bitwise"] == r["n"] > 1000
        zero = compared[("nn.LeakyReLU(0.2)", "float32", mode, "dx", "zero")]
        assert zero["bitwise"] == 0  # MindSpore's tie gradient (1 + alpha) / 2 against alpha
        half = compared[("nn.LeakyReLU(0.2)", "float16", mode, "y", "normal")]
        assert half["max_ulp"] == 1 and half["ulp_error_ours"] <= 0.5 < half["ulp_error_mindspore"]
    assert {(r["who"], r["training"]) for r in slopes} == {(w, t) for w in ("mindspore", "swapped")
                                                           for t in (True, False)}
    rendered = run_script("scripts/bench/swap_exactness.py", "--render", str(out))
    assert rendered.returncode == 0 and rendered.stdout.startswith("| layer | dtype | output | mode | normal |")
    assert "| nn.LeakyReLU(0.2) | float32 | y | pynative | same bits |" in rendered.stdout
