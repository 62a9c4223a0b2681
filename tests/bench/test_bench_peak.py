"""scripts/bench/bench_peak.py: the peak record (scripts/bench/records.py's shape: the machine and load, one row of
oneDNN, threads and GFLOP/s per problem and precision) from a real, short run, as a user runs it, its argument
checks, and records.cpu_info, which names the CPU of every record."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ops import onednn
from tests.helpers import needs_onednn, script_env

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "bench_peak.py"
import bench_peak  # noqa: E402
import records  # noqa: E402


@pytest.mark.parametrize("argv,message", [(["--rounds", "0"], "--rounds=0"), (["--threads", "0"], "--threads=0")])
def test_bad_arguments_are_named(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        bench_peak.main(["--json", str(tmp_path / "out.json"), *argv])
    assert message in capsys.readouterr().err


@pytest.mark.slow
@needs_onednn()
def test_a_short_run_records_the_machine_and_the_peaks(tmp_path: Path) -> None:
    out = tmp_path / "peak.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--json", str(out), "--threads", "1", "--rounds", "1",
                           "--reps", "1"], capture_output=True, text=True, timeout=600, env=script_env())
    assert done.returncode == 0, done.stderr[-3000:]
    [record] = records.read(out)
    assert record["machine"]["model"] and len(record["load_avg_1min"]) == 2 and record["wall_s"] > 0
    assert record["context"] == {"rounds": 1, "reps": 1} and "--json" in record["command"]
    [row] = record["rows"]
    assert row["threads"] == 1 and row["copy_gbps"] > 0 and row["onednn"]["version"].startswith("3.")
    problems = {(p["problem"], p["precision"]): p for p in row["problems"]}
    assert set(problems) == {(k, p) for k in ("gemm", "conv") for p in ("fp32", "bf16")}
    assert problems[("gemm", "fp32")]["gflop"] == pytest.approx(2 * 2048 ** 3 / 1e9, rel=1e-3)
    assert all(problems[(k, "fp32")]["peak_gflops"] > 0 for k in ("gemm", "conv"))
    assert row["peak_gflops"]["fp32"] == max(problems[(k, "fp32")]["peak_gflops"] for k in ("gemm", "conv"))
    if onednn.cpu_isa().bf16:  # AVX-512: bf16 measured (emulated without AVX512_BF16/AMX); AVX2: none, the error named
        assert row["peak_gflops"]["bf16"] > 0
    else:
        assert row["peak_gflops"]["bf16"] is None and problems[("gemm", "bf16")]["impl"]
    assert "avx512_bf16" in record["machine"]["flags"] or not row["onednn"]["bf16_dot"]


ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu avx fma avx2 sha_ni

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 26
model name\t: another
flags\t\t: avx512f
"""


def test_cpu_info_names_vendor_family_and_flags_of_the_first_processor(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(ZEN3)
    info = records.cpu_info(tmp_path / "cpuinfo")
    assert {k: info[k] for k in ("model", "vendor", "family", "model_number", "flags")} == {
        "model": "AMD EPYC", "vendor": "AuthenticAMD", "family": "25", "model_number": "1", "flags": ["avx2", "fma"]}
    assert records.cpu_info(tmp_path / "missing")["flags"] == []  # no /proc/cpuinfo: no flags claimed
