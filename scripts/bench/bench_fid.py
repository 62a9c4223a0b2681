"""Inception feature extraction: this project's MindSpore port against torch's CPU run of the same archive.

    python scripts/bench/bench_fid.py                           # needs torch (the `bench` extra) and the weights
    python scripts/bench/bench_fid.py --batches 8 16 32 64 --rounds 3 --json docs/data/bench_fid.json
    python scripts/bench/bench_fid.py --markdown docs/data/bench_fid.json   # the table of docs/metrics.md

Both run in one process on the same network inputs (random uint8 32x32 gray images through the `stylegan`
preprocessing), with the same thread count, round-robin: each round times one batch of torch and one of ours per
batch size, so both see the same machine load. Reported per thread count and batch size: images/s of each (median
over rounds, min and max), the ratio per round, and seconds per 1,000 images; "pipeline" adds our preprocessing
(uint8 -> input) to our side, what an evaluation pays. Then the metrics' own cost on random 2048-d features of the
in-training sizes (--reference real, --samples generated): the statistics, FID by gan.metrics.fid (eigendecomposition)
and by scipy.linalg.sqrtm, KID (100 subsets), precision/recall. The JSON is one record of scripts/bench/records.py:
the machine and the load average before and after, a row per (threads, batch), and as context the versions, the
extractor, the settings and the metrics' costs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("GLOG_v", "3")

import numpy as np  # noqa: E402
import records  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def summary(rates: list[float]) -> dict:
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates), "runs": rates}


def markdown(run: dict) -> str:
    """The measurements of a bench_fid record as the markdown table of docs/metrics.md."""
    lines = ["| threads | batch | torch img/s | ours img/s (pipeline) | ours / torch (min-max) | s per 1,000: torch | "
             "ours (pipeline) |", "|---|---|---|---|---|---|---|"]
    for r in run["rows"]:
        lines.append(f"| {r['threads']} | {r['batch']} | {r['torch_img_s']['median']:.2f} | "
                     f"{r['ours_img_s']['median']:.2f} ({r['ours_pipeline_img_s']['median']:.2f}) | "
                     f"{r['ratio']['median']:.2f}x ({r['ratio']['min']:.2f}-{r['ratio']['max']:.2f}) | "
                     f"{r['torch_s_per_1000']:.0f} | {r['ours_s_per_1000']:.0f} "
                     f"({r['ours_pipeline_s_per_1000']:.0f}) |")
    machine, (before, after) = run["machine"] or {}, run["load_avg_1min"] or (None, None)
    lines += ["", f"{machine.get('model')}, {machine.get('cpus')} CPUs, load average {before} before and {after} "
              f"after (1 min); medians of {len(r['ratio']['runs'])} rounds."]
    m = run["context"].get("metrics")
    if m:
        lines[-1] += (f" Metrics on {m['samples']} generated and {m['reference']} reference features: statistics "
                      f"{m['statistics_s']:.1f} s, FID {m['fid_s']:.1f} s (scipy's sqrtm: {m['fid_sqrtm_s']:.1f} s), "
                      f"KID {m['kid_s']:.1f} s, precision/recall {m['precision_recall_s']:.1f} s.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", metavar="JSON", help="print the table of a JSON written before (its last "
                        "record) and exit")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32], help="batch sizes (default 16 32)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per batch size (default 3)")
    parser.add_argument("--threads", type=int, nargs="+", default=[os.cpu_count()],
                        help="thread counts, each for both (default: all CPUs)")
    parser.add_argument("--reference", type=int, default=10_000, help="real features for the metrics' cost")
    parser.add_argument("--samples", type=int, default=2_000, help="generated features for the metrics' cost")
    parser.add_argument("--json", default=str(ROOT / "docs" / "data" / "bench_fid.json"))
    args = parser.parse_args(argv)
    if args.markdown:
        try:
            print(markdown(records.read(Path(args.markdown))[-1]), end="")
        except records.RecordError as e:
            parser.error(f"--markdown: {e}")
        return 0

    import mindspore as ms
    import torch

    from gan.metrics.inception import FeatureExtractor, archive_path
    from gan.metrics.resize import inception_input

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    load_before, started = records.load_average(), records.utc_now()
    start, cpu0 = time.perf_counter(), time.process_time()
    model = torch.jit.load(str(archive_path()), map_location="cpu").eval()
    images = np.random.default_rng(0).integers(0, 256, (max(args.batches), 32, 32, 1), dtype=np.uint8)
    results = []
    for threads, batch in ((t, b) for t in args.threads for b in args.batches):
        torch.set_num_threads(threads)
        os.environ["LRELU_NUM_THREADS"] = str(threads)  # our kernels' worker threads, read when a graph compiles
        ours = FeatureExtractor(batch_size=batch)
        x = inception_input(images[:batch])
        x_torch = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))

        def run_torch() -> None:
            with torch.inference_mode():
                model(x_torch)

        def run_ours() -> None:
            ours.network(x)

        run_torch()  # warm-up: graph compile, oneDNN primitive creation
        run_ours()
        torch_rates, our_rates, pipeline_rates = [], [], []
        for _ in range(args.rounds):
            torch_rates.append(batch / timed(run_torch))
            our_rates.append(batch / timed(run_ours))
            pipeline_rates.append(batch / timed(ours.features, images[:batch]))
        row = {"threads": threads, "batch": batch, "torch_img_s": summary(torch_rates),
               "ours_img_s": summary(our_rates),
               "ours_pipeline_img_s": summary(pipeline_rates),
               "ratio": summary([o / t for o, t in zip(our_rates, torch_rates)]),
               "torch_s_per_1000": 1000 / statistics.median(torch_rates),
               "ours_s_per_1000": 1000 / statistics.median(our_rates),
               "ours_pipeline_s_per_1000": 1000 / statistics.median(pipeline_rates)}
        results.append(row)
        print(f"threads {threads}, batch {batch}: torch {row['torch_img_s']['median']:.2f} img/s, "
              f"ours {row['ours_img_s']['median']:.2f} "
              f"(pipeline {row['ours_pipeline_img_s']['median']:.2f}), ratio {row['ratio']['median']:.2f}x "
              f"[{row['ratio']['min']:.2f}, {row['ratio']['max']:.2f}]", flush=True)
    metrics = metric_costs(args.reference, args.samples)
    print("metrics: " + ", ".join(f"{k} {v:.1f} s" for k, v in metrics.items() if k.endswith("_s")), flush=True)
    context = {"torch": torch.__version__, "mindspore": ms.__version__,
               "input": "random uint8 32x32 gray images, stylegan convention -> (B, 299, 299, 3)", **ours.describe(),
               "rounds": args.rounds, "metrics": metrics}
    records.write(Path(args.json), [records.record(results, context=context, started=started, load_before=load_before,
                                                   wall_s=time.perf_counter() - start,
                                                   cpu_s=time.process_time() - cpu0)])
    return 0


def metric_costs(n_reference: int, n_samples: int) -> dict:
    """Seconds of each metric on random 2048-d features of these sizes (what an evaluation adds to its features)."""
    import scipy.linalg

    from gan.metrics.fid import FeatureSet, frechet_distance, kernel_distance, precision_recall

    rng = np.random.default_rng(0)
    real = np.abs(rng.standard_normal((n_reference, 2048))).astype(np.float32)
    generated = np.abs(rng.standard_normal((n_samples, 2048)) * 1.1).astype(np.float32)
    start = time.perf_counter()
    a, b = FeatureSet.of(real), FeatureSet.of(generated)
    costs = {"reference": n_reference, "samples": n_samples, "statistics_s": time.perf_counter() - start}
    costs["fid_s"] = timed(frechet_distance, a.mu, a.sigma, b.mu, b.sigma)
    costs["fid_sqrtm_s"] = timed(scipy.linalg.sqrtm, a.sigma @ b.sigma)
    costs["kid_s"] = timed(kernel_distance, real, generated)
    costs["precision_recall_s"] = timed(precision_recall, real, generated)
    return costs


if __name__ == "__main__":
    sys.exit(main())
