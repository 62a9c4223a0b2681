"""Sample quality and speed of the DCGAN recipe in this app and in the project's PyTorch reference
(scripts/bench/torch_dcgan.py) at equal work: same networks, initial weights, data order, latents, optimiser, batch
and steps. Per seed and implementation: train --steps steps, write --samples samples (the .npz of
scripts/generate.py --npz, on the run's fixed latents), score them with one metric code path, record wall times.

    python scripts/bench/bench_quality.py --json F --seeds 0,1,2 --steps 10000 --samples 10000 --metrics fid \\
        data=fashion_mnist
    python scripts/bench/bench_quality.py ... --sample-every 2000 --curve-samples 2000   # also along the run
    python scripts/bench/bench_quality.py ... --rescore --metrics fid --score-samples 5000  # score the saved runs again
    python scripts/bench/bench_quality.py --json F --impls app ...   # this app only (no PyTorch needed)

The app side is `python train.py OVERRIDES seed=S train.steps=N` through gan.training.loop.run, with its in-training
evaluation and dead-channel checks off (the reference has neither: equal work), samples from the checkpoint by
gan.models.checkpoint.generator_from_checkpoint (EMA off in both: the recipe has none). Runs alternate (app seed 0,
torch seed 0, app seed 1, ...), one at a time, each in a process of its own, so the machine's load falls on both alike;
each run's row holds the load average before and after it. The JSON is one record of scripts/bench/records.py (a
row per run, with its points: the metrics per sample step and count; the settings, scoring and the summary over
seeds as context), rewritten after every run; --resume keeps the finished runs of an interrupted benchmark with the
same settings, --rescore scores its saved samples again.
The PyTorch runs get OMP_WAIT_POLICY=PASSIVE (--torch-env): with libgomp's default spinning, torch's two threads
ran about 10x slower than with it on this shared, loaded machine, a slowdown that is not the framework's speed.

Times: train_s is the step loop with its input fetching (gan.training.outputs.RunSummary.train_seconds for the app:
graph compilation at the first step included, sample grids and checkpoints between steps excluded); process_s is the
whole worker process (imports, data, compilation, training, outputs, writing the samples).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

os.environ.setdefault("GLOG_v", "3")
ROOT = Path(__file__).resolve().parents[2]

import numpy as np  # noqa: E402
import records  # noqa: E402

IMPLS = ("app", "torch")
# What the app's runs turn off: the reference trains and nothing else (scored afterwards by this script).
APP_OFF = ("eval.enabled=false", "diagnostics.enabled=false")
TRAIN_RECORD = "train.json"
DEFAULT_TORCH_ENV = ["OMP_WAIT_POLICY=PASSIVE"]
VOLATILE = ("command", "started", "finished", "machine")  # of report["scoring"]: when and where, not how
TOP = ("command", "commit", "started", "machine")  # a report's fields that are its record's own


# ---------------------------------------------------------------- the workers (one process per run)

def sample_steps(steps: int, every: int) -> list[int]:
    """The steps that write samples: every `every` steps (0: none) and the last."""
    return sorted(set(range(every, steps + 1, every) if every else ()) | {steps})


def app_overrides(seed: int, steps: int, every: int, overrides: list[str]) -> list[str]:
    """train.py's overrides of one app run: a checkpoint at every sample step (all kept), evaluation and
    diagnostics off, then the user's OVERRIDES."""
    due = sample_steps(steps, every)
    return [f"seed={seed}", f"train.steps={steps}", f"train.ckpt_every={every or steps}",
            f"train.keep_last={len(due)}", *APP_OFF, *overrides]


def train_app(seed: int, steps: int, out: Path, samples: int, every: int, overrides: list[str]) -> dict:
    """One app run in `out`/run (gan.training.loop.run), then `samples` samples from each sample step's checkpoint."""
    from mindspore import Tensor
    from torch_dcgan import sample_file, write_samples

    from gan.config.schema import compose_config, to_config
    from gan.models.checkpoint import checkpoint_path
    from gan.models.from_checkpoint import generator_from_checkpoint
    from gan.training.loop import run

    began = time.perf_counter()
    cfg = compose_config(app_overrides(seed, steps, every, overrides))
    summary = run(cfg, out / "run")
    run_s = time.perf_counter() - began
    conf = to_config(cfg)
    files = {}
    for step in sample_steps(steps, every):
        net, _ = generator_from_checkpoint(checkpoint_path(out / "run", step), use_ema=False)
        files[step] = str(write_samples(lambda z: net(Tensor(z)).asnumpy(), conf, samples, sample_file(out, step)))
    last = summary.history[-1]
    return {"impl": "app", "steps": steps, "train_s": summary.train_seconds, "run_s": run_s,
            "sample_s": time.perf_counter() - began - run_s,
            "img_per_s": steps * conf.train.batch_size / summary.train_seconds, "samples": files,
            "final": {"loss_d": last.loss_d, "loss_g": last.loss_g, "d_real": last.d_real, "d_fake": last.d_fake},
            "skipped_steps": summary.skipped_steps}


def worker_command(impl: str, python: str, seed: int, steps: int, out: Path, samples: int, every: int,
                   overrides: list[str]) -> list[str]:
    """The command of one run: this script's --worker for the app, scripts/bench/torch_dcgan.py train for PyTorch."""
    if impl == "app":
        return [python, str(Path(__file__).resolve()), "--worker", "--seed", str(seed), "--steps", str(steps),
                "--out", str(out), "--samples", str(samples), "--sample-every", str(every), *overrides]
    steps_list = ",".join(str(s) for s in sample_steps(steps, every))
    return [python, str(Path(__file__).resolve().with_name("torch_dcgan.py")), "train", "--steps", str(steps),
            "--out", str(out), "--samples", str(samples), "--sample-steps", steps_list, f"seed={seed}", *overrides]


def run_worker(command: list[str], out: Path, log: Path, timeout: float | None, env: dict[str, str]) -> dict:
    """Run one worker to completion (its output to `log`, `env` added to the environment); its train.json plus
    process_s and the load averages."""
    load_before = os.getloadavg()
    began = time.perf_counter()
    with open(log, "w") as f:
        result = subprocess.run(command, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                env={**os.environ, "GLOG_v": "3", "PYTHONPATH": str(ROOT), **env})
    process_s = time.perf_counter() - began
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise RuntimeError(f"{' '.join(command)} failed (exit {result.returncode}); end of {log}:\n{tail}")
    record = json.loads((out / TRAIN_RECORD).read_text())
    return {**record, "process_s": process_s, "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}


# ---------------------------------------------------------------- metrics (one code path for both implementations)

# samples, counts -> {n: metrics of the first n samples} for each n of counts (features computed once)
Scorer = Callable[[np.ndarray, Sequence[int]], dict[int, dict]]


def per_prefix(metrics: Callable[[np.ndarray], dict]) -> Scorer:
    """A Scorer from a function of samples that has nothing to share between the prefixes."""
    return lambda samples, counts: {n: metrics(samples[:n]) for n in counts}


def load_samples(path: str | Path, n: int | None = None) -> np.ndarray:
    """The first n (all: None) float32 (N, C, H, W) samples of a scripts/generate.py --npz file."""
    with np.load(path, allow_pickle=False) as archive:
        samples = archive["samples"]
    if n is not None and len(samples) < n:
        raise ValueError(f"{path} holds {len(samples)} samples, fewer than the {n} to score")
    return samples[:n]


def classifier_metrics(overrides: list[str]) -> tuple[Scorer, dict]:
    """The project's MNIST classifier metrics (gan.metrics.sample_quality.image_metrics); data=mnist only."""
    from gan.config.schema import compose_config, to_config
    from gan.metrics.classifier import cache_path, load_classifier
    from gan.metrics.sample_quality import image_metrics

    data = to_config(compose_config(overrides)).data.name
    if data != "mnist":
        raise ValueError(f"--metrics=classifier scores MNIST digits only, not data={data}")
    classifier = load_classifier()  # trained first (minutes, once per machine) when it is not cached
    return per_prefix(lambda samples: image_metrics(samples, classifier)), {"classifier": cache_path().name}


def fid_metrics(overrides: list[str]) -> tuple[Scorer, dict]:
    """FID, KID and precision/recall in Inception features (gan.metrics.fid) against the reference a training run of
    OVERRIDES uses (gan.training.evaluation.standard_metrics: its first eval.fid_reference training images,
    eval.fid_convention), the samples' features computed once for all counts."""
    from gan.config.schema import compose_config, to_config
    from gan.metrics.fid import FeatureSet, compare
    from gan.training.evaluation import standard_metrics
    from gan.training.runtime import setup_runtime
    from gan.training.tasks import build_task

    conf = to_config(compose_config([*overrides, "eval.enabled=true", "eval.fid=true"]))
    setup_runtime(conf.runtime)
    metrics = standard_metrics(conf, build_task(conf), say=lambda text: print(text, flush=True))

    def score(samples: np.ndarray, counts: Sequence[int]) -> dict[int, dict]:
        features = metrics.features(samples, progress=True).features
        return {n: compare(metrics.reference.features, FeatureSet.of(features[:n])) for n in counts}

    return score, metrics.describe()


METRICS: dict[str, Callable[[list[str]], tuple[Scorer, dict]]] = {
    "fid": fid_metrics,
    "classifier": classifier_metrics,
    "none": lambda overrides: (per_prefix(lambda samples: {}), {}),
}


def score_record(record: dict, score: Scorer, final_samples: int, curve_samples: int, curve: bool = True) -> None:
    """record["points"]: the metrics of every sample step's file on its first curve_samples samples (the curve; with
    curve=False the last step's only), and at the last step on its first final_samples too (the benchmark's figure)."""
    began = time.perf_counter()
    points = []
    for step, path in sorted(record["samples"].items(), key=lambda kv: int(kv[0])):
        if not curve and int(step) != record["steps"]:
            continue
        counts = sorted({curve_samples, final_samples} if int(step) == record["steps"] else {curve_samples})
        scores = score(load_samples(path, max(counts)), counts)
        points += [{"step": int(step), "n_samples": n, **scores[n]} for n in counts]
    record["points"], record["score_s"] = points, time.perf_counter() - began


def final_point(record: dict, final_samples: int) -> dict:
    """The record's point at its last step on final_samples samples."""
    return next(p for p in record["points"] if p["step"] == record["steps"] and p["n_samples"] == final_samples)


# ---------------------------------------------------------------- the benchmark

def summarize(records: list[dict]) -> list[dict]:
    """Per (implementation, step, samples scored): every numeric metric over seeds as {"mean", "se", "n", "values"};
    the last step's also holds the timings."""
    groups: dict[tuple[str, int, int], list[dict]] = {}
    for r in records:
        for point in r["points"]:
            timings = {k: r[k] for k in ("train_s", "img_per_s", "process_s")} if point["step"] == r["steps"] else {}
            groups.setdefault((r["impl"], point["step"], point["n_samples"]), []).append({**point, **timings})
    out = []
    for (impl, step, n), points in sorted(groups.items()):
        keys = sorted({k for p in points for k, v in p.items() if isinstance(v, (int, float))} - {"step", "n_samples"})
        stats = {}
        for key in keys:
            values = [float(p[key]) for p in points if key in p]
            m = sum(values) / len(values)
            sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
            stats[key] = {"mean": m, "se": sd / math.sqrt(len(values)), "n": len(values), "values": values}
        out.append({"impl": impl, "step": step, "n_samples": n, **stats})
    return out


def training_settings(args: argparse.Namespace) -> dict:
    """What the runs depend on: --resume and --rescore refuse a report written with others."""
    return {"steps": args.steps, "samples": args.samples, "sample_every": args.sample_every,
            "overrides": args.overrides, "torch_env": args.torch_env}


def scoring_settings(args: argparse.Namespace, about: dict) -> dict:
    return {"metrics": args.metrics, "final_samples": args.score_samples or args.samples,
            "curve_samples": args.curve_samples or args.score_samples or args.samples,
            "curve_seeds": args.curve_seeds, **about}


def record_of(report: dict) -> dict:
    """A report as its data file's record (scripts/bench/records.py): the runs as rows, the rest as context, the load
    average before the first run and after the last; wall and CPU time and exit status are not one process's."""
    rows = report["records"]
    first, last = (rows[0], rows[-1]) if rows else ({}, {})
    return {"label": None, **{k: report.get(k) for k in TOP},
            "load_avg_1min": [first.get("loadavg_before", [None])[0], last.get("loadavg_after", [None])[0]],
            "wall_s": None, "cpu_s": None, "returncode": None,
            "context": {k: v for k, v in report.items() if k not in (*TOP, "records")}, "rows": rows}


def report_of(run: dict) -> dict:
    """The report a record_of record holds (the inverse of record_of)."""
    return {**{k: run[k] for k in TOP}, **run["context"], "records": run["rows"]}


def write_report(path: Path, report: dict) -> None:
    records.write(path, [record_of(report)])


def earlier_report(args: argparse.Namespace, path: Path) -> dict:
    """The report in `path` (its last record), which must have been written with this command's training settings."""
    try:
        old = report_of(records.read(path)[-1])
    except records.RecordError as e:
        raise SystemExit(f"{e}; is it a bench_quality.py report?") from None
    if old.get("settings") != training_settings(args):
        raise SystemExit(f"{path} was written with other settings {old.get('settings')}, not "
                         f"{training_settings(args)}; use another --json or the same settings")
    return old


def same_scoring(report: dict, scoring: dict) -> bool:
    return {k: v for k, v in report.get("scoring", {}).items() if k not in VOLATILE} == scoring


def score_all(args: argparse.Namespace, score: Scorer, about: dict, argv: list[str]) -> None:
    """--rescore: the runs of --from (default --json) scored with this command's metrics into --json, saving after
    each; runs --json or a --reuse report already holds with this scoring (the same sample files) are kept, so a
    rescore can follow a benchmark that is still running, and rescores of parts of it can run side by side."""
    report = earlier_report(args, args.source)
    scoring = scoring_settings(args, about)
    done = {}
    scored = [args.json] if args.json.exists() and args.json != args.source else []
    for path in scored + args.reuse:
        target = earlier_report(args, path)
        if same_scoring(target, scoring):
            done |= {(r["impl"], r["seed"], json.dumps(r["samples"])): r for r in target["records"]}
        elif path in args.reuse:
            raise SystemExit(f"--reuse: {path} was scored with {target.get('scoring')}, not {scoring}")
    report["scoring"] = {**scoring, "command": "python scripts/bench/bench_quality.py " + " ".join(argv),
                         "started": records.utc_now(), "machine": records.cpu_info()}
    for i, record in enumerate(report["records"]):
        key = (record["impl"], record["seed"], json.dumps(record["samples"]))
        if key in done:
            report["records"][i] = done[key]
            continue
        score_record(record, score, scoring["final_samples"], scoring["curve_samples"],
                     curve=record["seed"] in args.curve_seeds)
        report["summary"] = summarize(report["records"][:i + 1])
        write_report(args.json, {**report, "records": report["records"][:i + 1]})
        print(f"scored {record['impl']} seed {record['seed']}: {final_point(record, scoring['final_samples'])}",
              flush=True)
    report["summary"] = summarize(report["records"])
    report["scoring"]["finished"] = records.utc_now()
    write_report(args.json, report)


def benchmark(args: argparse.Namespace, argv: list[str], score: Scorer, about: dict) -> dict:
    """Every (seed, implementation) run, alternating, each scored; the report is written after each run."""
    report = {"command": "python scripts/bench/bench_quality.py " + " ".join(argv), "settings": training_settings(args),
              "seeds": args.seeds, "impls": args.impls, "app_disabled": list(APP_OFF), "commit": records.commit(),
              "started": records.utc_now(), "machine": records.cpu_info(),
              "python": {"app": args.app_python, "torch": args.torch_python},
              "scoring": scoring_settings(args, about), "records": []}
    if args.resume and args.json.exists():
        old = earlier_report(args, args.json)
        if not same_scoring(old, report["scoring"]):
            raise SystemExit(f"--resume: {args.json} was scored with {old.get('scoring')}, this command scores with "
                             f"{report['scoring']}; resume with the same scoring (--rescore changes it afterwards)")
        report["records"] = [r for r in old["records"] if r["seed"] in args.seeds and r["impl"] in args.impls]
        report["started"] = old.get("started", report["started"])
    done = {(r["impl"], r["seed"]) for r in report["records"]}
    scoring = report["scoring"]
    for seed in args.seeds:
        for impl in args.impls:
            if (impl, seed) in done:
                continue
            out = args.work / f"{impl}_seed{seed}"
            out.mkdir(parents=True, exist_ok=True)
            python = args.app_python if impl == "app" else args.torch_python
            command = worker_command(impl, python, seed, args.steps, out, args.samples, args.sample_every,
                                     args.overrides)
            env = dict(e.split("=", 1) for e in args.torch_env) if impl == "torch" else {}
            print(f"{impl} seed {seed}: {' '.join(command)}", flush=True)
            record = {**run_worker(command, out, out / "worker.log", args.timeout, env), "seed": seed,
                      "command": command, "env": env}
            score_record(record, score, scoring["final_samples"], scoring["curve_samples"],
                         curve=seed in args.curve_seeds)
            report["records"].append(record)
            report["summary"] = summarize(report["records"])
            report["finished"] = records.utc_now()
            write_report(args.json, report)
            last = final_point(record, scoring["final_samples"])
            print(f"{impl} seed {seed}: train {record['train_s']:.1f} s ({record['img_per_s']:.0f} img/s), process "
                  f"{record['process_s']:.1f} s, load {record['loadavg_before'][0]}-{record['loadavg_after'][0]}, "
                  + ", ".join(f"{k} {v:.4g}" for k, v in last.items() if k != "step"), flush=True)
    return report


def int_list(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="write the report here (required unless --worker)")
    parser.add_argument("--seeds", type=int_list, default=[0, 1, 2], help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--impls", default="app,torch", help=f"comma-separated subset of {IMPLS}, in run order")
    parser.add_argument("--steps", type=int, default=1000, help="training steps of every run (default 1000)")
    parser.add_argument("--samples", type=int, default=1000, help="samples written per run and sample step")
    parser.add_argument("--sample-every", type=int, default=0, help="also sample every this many steps")
    parser.add_argument("--metrics", default="none", help=f"one of {list(METRICS)} (default none)")
    parser.add_argument("--score-samples", type=int, default=None,
                        help="samples scored at the last step (default --samples)")
    parser.add_argument("--curve-samples", type=int, default=None,
                        help="samples scored at the earlier sample steps (default --score-samples)")
    parser.add_argument("--curve-seeds", type=int_list, default=None,
                        help="seeds whose earlier sample steps are scored (default all; the last step always is)")
    parser.add_argument("--rescore", action="store_true",
                        help="train nothing: score the runs of --from again with these metrics and counts into --json")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="--rescore: the benchmark report to read (default --json)")
    parser.add_argument("--reuse", type=Path, action="append", default=[], metavar="REPORT",
                        help="--rescore: keep the runs this report scored the same way (repeatable)")
    parser.add_argument("--torch-env", action="append", default=None, metavar="KEY=VALUE",
                        help="environment of the PyTorch runs (default OMP_WAIT_POLICY=PASSIVE: libgomp's spinning "
                             "threads slow torch about 10x on a loaded machine)")
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "bench_quality",
                        help="folder of the runs, their samples and logs (default outputs/bench_quality)")
    parser.add_argument("--app-python", default=sys.executable, help="the app's interpreter (default this one)")
    parser.add_argument("--torch-python", default=sys.executable, help="the interpreter with torch (default this one)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds one run may take (default no limit)")
    parser.add_argument("--resume", action="store_true", help="keep the finished runs of --json (same settings)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one app run (worker_command)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("overrides", nargs="*", help="train.py overrides for both, e.g. data=fashion_mnist")
    args = parser.parse_args(argv)
    for name in ("steps", "samples", "score_samples", "curve_samples"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')}={value} must be at least 1")
        if name.endswith("_samples") and value is not None and value > args.samples:
            parser.error(f"--{name.replace('_', '-')}={value} is more than the --samples={args.samples} written")
    args.torch_env = DEFAULT_TORCH_ENV if args.torch_env is None else args.torch_env
    if any("=" not in e for e in args.torch_env):
        parser.error(f"--torch-env {args.torch_env}: give KEY=VALUE")
    if args.sample_every < 0:
        parser.error(f"--sample-every={args.sample_every} must be >= 0 (0: at the last step only)")
    if args.worker:
        args.out.mkdir(parents=True, exist_ok=True)
        record = train_app(args.seed, args.steps, args.out, args.samples, args.sample_every, args.overrides)
        (args.out / TRAIN_RECORD).write_text(json.dumps(record, indent=1) + "\n")
        return 0
    args.impls = [s for s in args.impls.split(",") if s]
    bad = [i for i in args.impls if i not in IMPLS]
    if bad or not args.impls:
        parser.error(f"--impls: {bad or args.impls} not in {list(IMPLS)}")
    if args.metrics not in METRICS:
        parser.error(f"--metrics={args.metrics!r} is not one of {list(METRICS)}")
    if args.json is None:
        parser.error("--json is required")
    if not args.seeds or any(s < 0 for s in args.seeds):
        parser.error(f"--seeds={args.seeds}: give non-negative integers, e.g. 0,1,2")
    try:
        from torch_dcgan import recipe_config

        if "torch" in args.impls:
            recipe_config(args.overrides)  # refuse what the reference does not implement before any run
        score, about = METRICS[args.metrics](args.overrides)
    except ValueError as err:
        parser.error(str(err))
    args.curve_seeds = args.seeds if args.curve_seeds is None else args.curve_seeds
    if args.rescore:
        args.source = args.source or args.json
        if not args.source.exists():
            parser.error(f"--rescore: {args.source} does not exist (run the benchmark first)")
        score_all(args, score, about, argv)
    else:
        benchmark(args, argv, score, about)
    return 0


if __name__ == "__main__":
    sys.exit(main())
