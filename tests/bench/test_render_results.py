"""scripts/bench/render_results.py: the committed tables equal what their JSON renders, and the check notices a change."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, run_script

import render_results as rr  # noqa: E402


def copy_tree(dst: Path) -> Path:
    """README.md and docs/ (pages and data) of this repository under dst."""
    shutil.copy2(REPO / "README.md", dst / "README.md")
    shutil.copytree(REPO / "docs", dst / "docs", ignore=shutil.ignore_patterns("img"))
    return dst


@pytest.mark.slow
def test_the_committed_tables_are_what_the_data_render() -> None:
    done = run_script("scripts/bench/render_results.py", "--check", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_table_is_in_a_document_and_names_only_files_that_exist() -> None:
    stale, problems = rr.process(REPO, write=False)
    assert not problems, problems
    for name, entry in rr.TABLES.items():
        for source in entry.sources:
            assert (REPO / "docs" / "data" / source).is_file(), f"{name}: docs/data/{source} is missing"


@pytest.mark.slow
def test_the_check_names_a_table_whose_figure_was_edited_by_hand(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    page = root / "docs" / "slope_study.md"
    text = page.read_text(encoding="utf-8")
    row = "| D slope 0.2 | 10 | 24.4 ± 0.3 |"  # grid25 at 20,000 steps
    assert text.count(row) == 1
    page.write_text(text.replace(row, "| D slope 0.2 | 10 | 24.9 ± 0.3 |"), encoding="utf-8")
    done = run_script("scripts/bench/render_results.py", "--check", "--root", str(root), timeout=120)
    assert done.returncode == 1
    assert "grid25_slopes (docs/slope_study.md)" in done.stderr
    assert "ring8_slopes" not in done.stderr  # only the edited table is named
    done = run_script("scripts/bench/render_results.py", "--root", str(root), timeout=120)  # re-render repairs it
    assert done.returncode == 0, done.stderr
    assert page.read_text(encoding="utf-8") == text


def test_the_check_names_a_table_whose_data_changed(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    data = root / "docs" / "data" / "bench_train_g_once_idle.json"
    report = json.loads(data.read_text(encoding="utf-8"))
    report["runs"][0][0]["ratio_to_torch"] += 0.5
    data.write_text(json.dumps(report), encoding="utf-8")
    stale, problems = rr.process(root, write=False)
    assert not problems
    assert "train_idle (docs/performance.md)" in stale and "headline (README.md)" not in stale
    assert any(item.startswith("train_idle (docs/results.md)") for item in stale)


@pytest.mark.slow
def test_unknown_and_unclosed_markers_are_errors(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    page = root / "docs" / "results.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n<!-- results:no_such_table -->\n<!-- results:int8 -->\n",
                    encoding="utf-8")
    done = run_script("scripts/bench/render_results.py", "--check", "--root", str(root), timeout=120)
    assert done.returncode == 1
    assert "unknown table 'no_such_table'" in done.stderr
    assert "is never closed" in done.stderr or "opens inside" in done.stderr


def test_two_trials_print_both_values_never_a_zero_standard_error() -> None:
    assert rr.pm([20.0, 20.0], 1) == "20.0 and 20.0"
    assert rr.pm([0.472, 0.658], 1, 100) == "47.2 and 65.8"
    assert rr.pm([8.0], 1) == "8.0"
    assert rr.pm([1.0, 2.0, 3.0], 2) == "2.00 ± 0.58"  # SE = sd / sqrt(3) = 1 / 1.732
    two_trial_rows = 0
    for name in ("grid25_slopes", "protocol_length", "lr_decay", "grid25_20k_lr_decay", "ring8_slopes"):
        lines = [line for line in rr.render(name, REPO, REPO / "docs" / "x.md").splitlines() if line.startswith("| ")]
        column = next(i for i, c in enumerate(lines[0].split(" | ")) if c.startswith("trials"))
        for line in lines[1:]:
            if line.split(" | ")[column].startswith("2"):  # "2" or "2 (0, 1)"
                two_trial_rows += 1
                assert "±" not in line, f"{name}: {line}"
    assert two_trial_rows >= 10
    text = rr.render("grid25_slopes", REPO, REPO / "docs" / "x.md")
    assert "| 2 | 20.0 and 20.0 | 47.2 and 65.8 |" in text


def test_a_difference_is_given_in_standard_errors_of_the_difference() -> None:
    a, b = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]
    d, t = rr.diff_se(b, a)
    assert d == pytest.approx(3.0) and t == pytest.approx(3.0 / (2 ** 0.5 / 3 ** 0.5))
    assert rr.compare("B", b, "A", a, 1, "points") == "B - A: +3.0 points (3.7 SE)"
    # the slope study's PReLU against slope 0.2 on grid25: 3.51 points, 1.07 SE (rounded, not truncated)
    assert "PReLU - slope 0.2: +3.5 HQ points (1.1 SE)" in rr.render("grid25_slopes", REPO, REPO / "docs" / "x.md")
    stats = lambda m, s, n: {"mean": m, "std": s, "n": n}  # noqa: E731
    assert rr.compare_stats("A", stats(2.0, 0.0, 3), "B", stats(1.0, 0.0, 3), 1, "x") == "A - B: +1.0 x (no spread)"


def test_links_in_a_table_point_from_the_page_that_holds_it() -> None:
    assert "[bench_op_family.json](docs/data/bench_op_family.json)" in rr.render("headline", REPO, REPO / "README.md")
    assert "[bench_op_family.json](data/bench_op_family.json)" in rr.render("op_family", REPO, REPO / "docs" / "x.md")


# ---------------------------------------------------------------- the app against PyTorch (bench_quality reports)

def quality_report() -> dict:
    """A bench_quality report as the benchmark writes it (records, summary by bench_quality.summarize): three
    seeds, FID 10/12/14 (app) and 20/22/24 (torch) on the 8 final samples, training 60 s (app) and 120 s (torch)."""
    import bench_quality

    records, steps = [], 4
    for seed in (0, 1, 2):
        for impl, base, train_s in (("app", 10.0, 60.0), ("torch", 20.0, 120.0)):
            fid = base + 2 * seed
            final = {"fid": fid, "kid": fid / 1000, "precision": 0.5 + seed / 100, "recall": 0.2, "n_reference": 100}
            records.append({"impl": impl, "seed": seed, "steps": steps, "train_s": train_s, "process_s": train_s + 30,
                            "img_per_s": steps * 64 / train_s, "loadavg_before": [1.5, 1, 1],
                            "loadavg_after": [2.5 + seed, 1, 1],
                            "points": [{"step": steps // 2, "n_samples": 3, "fid": fid + 50},
                                       {"step": steps, "n_samples": 3, "fid": fid + 30},
                                       {"step": steps, "n_samples": 8, **final}]})
    return {"settings": {"steps": steps, "samples": 8, "sample_every": steps // 2, "overrides": ["data=fashion_mnist"]},
            "seeds": [0, 1, 2], "impls": ["app", "torch"], "machine": {"cpu": "Test CPU", "cores": 2},
            "scoring": {"final_samples": 8, "curve_samples": 3, "reference": "fashion_mnist training images[:100] 32x32",
                        "n_reference": 100, "convention": "stylegan", "extractor": "inception-2015-12-05"},
            "records": records, "summary": bench_quality.summarize(records)}


def test_quality_table_gives_both_implementations_over_seeds_and_their_difference() -> None:
    text = rr.quality_vs_torch(quality_report())
    app, torch_row = (next(line for line in text.splitlines() if line.startswith(f"| {name}"))
                      for name in ("this app", "PyTorch"))
    # FID 10, 12, 14: mean 12, SE 2 / sqrt(3) = 1.15; KID x 10^3 the same numbers; 60 s = 1.0 min, 4 x 64 / 60 img/s
    assert "| 0, 1, 2 | **12.0 ± 1.2** | 10.0, 12.0, 14.0 | 12.00 ± 1.15 | 0.510 ± 0.006 |" in app
    assert "| 1.0 ± 0.0 | 4 ± 0 | 1.5 ± 0.0 |" in app
    assert "**22.0 ± 1.2** | 20.0, 22.0, 24.0 |" in torch_row and "| 2.0 ± 0.0 | 2 ± 0 |" in torch_row
    # -10 over sqrt(1.15^2 + 1.15^2) = 1.63: 6.1 SE; half the time, twice the images per second
    assert "FID app - PyTorch -10.0 (6.1 SE)" in text and "0.50x PyTorch's time (2.00x its img/s)" in text
    assert "8 samples per run" in text and "fashion_mnist training images[:100] 32x32 (100 images)" in text
    assert "load average 1.5-4.5" in text and "alternated app, PyTorch" in text


def test_quality_curve_reads_the_curve_count_only_and_headline_states_its_size() -> None:
    report = quality_report()
    curve = rr.quality_curve(report)
    assert "| 2 | 62.0 ± 1.2 | 60.0, 62.0, 64.0 | 72.0 ± 1.2 | 70.0, 72.0, 74.0 |" in curve
    assert "| 4 | 42.0 ± 1.2 |" in curve and "12.0" not in curve.split("\n\n")[0]  # not the 8-sample points
    line = rr.quality_headline(report)
    assert "(4 steps, 3 seeds each, FID on 8 samples against 100 training images)" in line
    assert "FID **12.0 ± 1.2** in this app, 22.0 ± 1.2 in the same recipe in PyTorch (-10.0, 6.1 SE)" in line
    assert line.endswith("(-10.0, 6.1 SE).") and "time" not in line


def bench_train_record(model: str, precision: str, img_per_s: float, torch_img_per_s: float, **fields) -> dict:
    """A scripts/bench/bench_train.py record with the fields the utilisation and bf16 tables read."""
    return {"model": model, "precision": precision, "impl": "onednn", "fusion": "conv_act", "img_per_s": img_per_s,
            "torch_img_per_s": torch_img_per_s, "achieved_gflops": img_per_s / 10,
            "torch_achieved_gflops": torch_img_per_s / 10, "peak_gflops": 100.0 if precision == "fp32" else 400.0,
            "peak_share": img_per_s / 1000, "torch_peak_share": torch_img_per_s / 1000, "gflop_per_step": 6.39,
            "batch_size": 64, "threads": 2, "cpu": {"model": "Test CPU"}, "load_average_before": [3.0, 1, 1],
            "load_average_after": [4.25, 1, 1], "ratio_to_fp32": None, "cpu_ratio_to_fp32": None, **fields}


def test_the_utilisation_and_bf16_tables_of_two_runs() -> None:
    """Each contender once per model and precision (PyTorch once, however many app records share it), both runs'
    values side by side; the targets (>= 1.6x fp32, >= 1.0x PyTorch) checked per run."""
    def run(bf16: float, torch_bf16: float) -> list[dict]:
        return [bench_train_record("dcgan32", "fp32", 100.0, 80.0, ratio_to_torch=1.25, cpu_ratio_to_torch=1.3),
                bench_train_record("dcgan32", "bf16", bf16, torch_bf16, ratio_to_fp32=bf16 / 100,
                                   cpu_ratio_to_fp32=1.5, ratio_to_torch=bf16 / torch_bf16, cpu_ratio_to_torch=1.1)]
    runs = (run(170.0, 150.0), run(150.0, 160.0))
    text = rr.train_utilisation(*runs)
    rows = [line for line in text.splitlines() if line.startswith("| DCGAN")]
    assert rows == ["| DCGAN-32 | fp32 | this app, onednn / conv_act | 100.0 and 100.0 | 10.0 and 10.0 | 100 and 100 "
                    "| **10.0 and 10.0%** |",
                    "| DCGAN-32 | fp32 | PyTorch | 80.0 and 80.0 | 8.0 and 8.0 | 100 and 100 | **8.0 and 8.0%** |",
                    "| DCGAN-32 | bf16 | this app, onednn / conv_act | 170.0 and 150.0 | 17.0 and 15.0 | 400 and 400 "
                    "| **17.0 and 15.0%** |",
                    "| DCGAN-32 | bf16 | PyTorch autocast | 150.0 and 160.0 | 15.0 and 16.0 | 400 and 400 "
                    "| **15.0 and 16.0%** |"]
    assert "DCGAN-32 6.39" in text and "run 1: DCGAN-32 3.0 -> 4.2" in text and "run 2:" in text
    speed = rr.bf16_speed(*runs)
    assert "| DCGAN-32 | onednn / conv_act | 170.0 and 150.0 | **1.70x and 1.50x** | 1.50x and 1.50x | " \
           "150.0 and 160.0 | **1.13x and 0.94x** | 1.10x and 1.10x |" in speed
    assert "DCGAN-32 bf16 >= 1.6x fp32: mixed (1 of 2 runs)" in speed
    assert "DCGAN-32 bf16 >= 1.0x PyTorch autocast bf16: mixed (1 of 2 runs)" in speed
    one = rr.bf16_speed(run(170.0, 150.0))
    assert "1.6x fp32: met (1 of 1 run)" in one and "PyTorch autocast bf16: met (1 of 1 run)" in one
    assert "1.6x fp32: not met (0 of 1 run)" in rr.bf16_speed(run(150.0, 150.0))


def test_the_profile_table_splits_each_precisions_step_into_onednn_kinds_and_the_rest() -> None:
    def profile(precision: str, fwd: float, bwd_w: float, wall: float) -> dict:
        return {"model": "dcgan64", "impl": "onednn", "fusion": "conv_act", "precision": precision, "batch_size": 64,
                "threads": 2, "steps": 2, "onednn_wall_ms_per_step": wall,
                "onednn": [{"kind": "convolution", "prop": "forward_training", "ms_per_step": fwd, "calls_per_step": 9},
                           {"kind": "convolution", "prop": "forward_training", "ms_per_step": fwd, "calls_per_step": 1},
                           {"kind": "matmul", "prop": "forward_training", "ms_per_step": bwd_w, "calls_per_step": 3}]}
    text = rr.profile_precisions(profile("fp32", 300.0, 0.0, 1000.0), profile("bf16", 100.0, 50.0, 500.0))
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0] == ("| oneDNN primitive | fp32 ms / step | fp32 share of the step | fp32 calls / step "
                       "| bf16 ms / step | bf16 share of the step | bf16 calls / step |")
    assert rows[1] == "| forward | 600 | 60.0% | 10 | 200 | 40.0% | 10 |"  # the two forward rows summed
    assert rows[2] == "| matmul | 0 | 0.0% | 3 | 50 | 10.0% | 3 |"
    assert rows[3].endswith("| 400 | 40.0% |  | 250 | 50.0% |  |")  # the step less oneDNN's time
    assert rows[4].endswith("| 1000 | 100% |  | 500 | 100% |  |")


def test_cpu_name_places_a_virtual_machines_cpu_by_family_and_flags() -> None:
    zen3 = {"cpu": {"model": "AMD EPYC", "vendor": "AuthenticAMD", "family": "25", "model_number": "1",
                    "flags": ["avx2", "fma"]}}
    assert rr.cpu_name(zen3) == "AMD EPYC (family 25, model 1: avx2, fma)"
    assert rr.cpu_name({"cpu": {"model": "Intel(R) Xeon(R) Processor", "flags": ["avx2"]}}) == \
        "Intel(R) Xeon(R) Processor (avx2)"  # records from before the family was kept
    assert rr.cpu_name({}) == ""  # a record without a CPU names none


def test_machine_peaks_says_where_onednn_has_no_primitive() -> None:
    peaks = json.loads((REPO / "docs" / "data" / "bench_peak_zen3.json").read_text())
    text = rr.machine_peaks(peaks)
    rows = [line for line in text.splitlines() if "| bf16 |" in line]
    assert len(rows) == 2 and all("| none |" in r and "oneDNN has no primitive here" in r for r in rows)
    gemm = next(p for p in peaks["problems"] if (p["problem"], p["precision"]) == ("gemm", "fp32"))
    assert f"| gemm | fp32 | {gemm['peak_gflops']:.1f} |" in text


def test_alternated_builds_are_paired_within_a_round_and_per_onednn_isa() -> None:
    def rec(isa: str | None, img_per_s: float) -> dict:
        return {"model": "dcgan32", "precision": "fp32", "impl": "onednn", "fusion": "conv_act", "batch_size": 64,
                "threads": 2, "img_per_s": img_per_s, "onednn": {"isa": isa} if isa else None}

    speeds = {("avx2", "a"): (100, 90), ("avx2", "b"): (110, 99), ("avx512_core", "a"): (200, 100),
              ("avx512_core", "b"): (180, 150)}  # per (isa, build): rounds 1 and 2
    runs = [{"round": r + 1, "build": build, "records": [rec(isa, speeds[isa, build][r])]}
            for r in range(2) for isa in ("avx2", "avx512_core") for build in ("a", "b")]
    rows = [line for line in rr.builds_ab_pairs({"runs": runs, "when": "now"}).splitlines() if "DCGAN" in line]
    assert rows == ["| avx2 | DCGAN-32 | 2 | 95.0 (90.0-100.0) | 104.5 (99.0-110.0) | **1.10x** (1.10); "
                    "higher in 2 of 2 |",
                    "| avx512_core | DCGAN-32 | 2 | 150.0 (100.0-200.0) | 165.0 (150.0-180.0) | **1.20x** (0.90-1.50); "
                    "higher in 1 of 2 |"]
    one_isa = [{**run, "records": [rec(None, r["img_per_s"]) for r in run["records"]]} for run in runs[:4]]
    assert "oneDNN ISA" not in rr.builds_ab_pairs({"runs": one_isa, "when": "now"})
