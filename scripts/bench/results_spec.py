"""The tables of docs/results.md and the README headline, as data for render_results.py.

A table: name (its marker), section, title, files (names under docs/data, or [name, label] pairs), rows (a path
into each file, see render_results.py; default runs[].rows[], every record's rows), where (field: value or
[values]), by (the grouping fields), columns (header, field, how: value | median | range | mean_se | stat |
summarised | count, digits, scale, names, where), caption, command, machine, and `also`: a docs page that opens
with the same table between its own markers. To add a table, add a dict here and run the renderer.
"""
from __future__ import annotations

BENCH_TRAIN = ("python scripts/bench/bench_train.py --json F --vs-torch --models dcgan32,dcgan64 --impls onednn "
               "--fusions conv_act --threads 2")
BF16 = BENCH_TRAIN + " --precisions fp32,bf16 --warmup 3 --steps 40 --max-seconds 40"
MODEL = {"dcgan32": "DCGAN-32", "dcgan64": "DCGAN-64"}
STEP_COLUMNS = [
    {"header": "model", "field": "model", "names": MODEL},
    {"header": "fusion", "field": "fusion"},
    {"header": "runs", "field": "ratio_to_torch", "how": "count"},
    {"header": "img/s (median)", "field": "img_per_s", "how": "median", "digits": 0},
    {"header": "PyTorch img/s (median)", "field": "torch_img_per_s", "how": "median", "digits": 0},
    {"header": "x PyTorch (range over runs)", "field": "ratio_to_torch", "how": "range"},
]
BF16_COLUMNS = [
    {"header": "model", "field": "model", "names": MODEL},
    {"header": "runs", "field": "ratio_to_fp32", "how": "count"},
    {"header": "bf16 img/s (median)", "field": "img_per_s", "how": "median", "digits": 0},
    {"header": "x this app's fp32 (range)", "field": "ratio_to_fp32", "how": "range"},
    {"header": "x PyTorch autocast bf16 (range)", "field": "ratio_to_torch", "how": "range"},
]
MODES = [{"header": "modes", "field": "modes", "how": "mean_se"},
         {"header": "high-quality %", "field": "hq_fraction", "how": "mean_se", "scale": 100},
         {"header": "reverse KL", "field": "reverse_kl", "how": "mean_se", "digits": 2}]
SE = "Mean ± standard error over the trials (two trials: both values)."
RING8_CMD = "python scripts/bench/bench_modes.py --batched --trials 10 --datasets ring8 --slopes S --json F"
RING8 = [["bench_modes_batched_ring8_protocol_slope0_10trials.json", "0 (ReLU)"],
         ["bench_modes_batched_ring8_protocol_slope0.01_10trials.json", "0.01"],
         ["bench_modes_batched_ring8_15k_10trials.json", "0.2"],
         ["bench_modes_batched_ring8_protocol_prelu_10trials.json", "PReLU"],
         ["bench_modes_batched_ring8_protocol_maxout_3trials.json", "maxout, 5 pieces"]]
GRID25 = [[f"bench_modes_batched_grid25_20k_{f}.json", label] for f, label in (
    ("slope0_10trials", "0 (ReLU)"), ("slope0.01_10trials", "0.01"), ("slope0.2_10trials", "0.2"),
    ("prelu_10trials", "PReLU"), ("maxout_2trials", "maxout, 5 pieces"))]
LABELS = {f"act.d_kind={k}, act.negative_slope={s}": name for k, s, name in (
    ("prelu", "-", "PReLU"), ("rrelu", "-", "RReLU"), ("leaky_relu", "0", "ReLU (slope 0)"),
    ("leaky_relu", "0.2", "slope 0.2"), ("leaky_relu", "0.01", "slope 0.01"))}
LABELS.update({"act.negative_slope=0, diagnostics.recycle=True": "slope 0, recycling",
               "act.negative_slope=0, diagnostics.recycle=-": "slope 0",
               "act.negative_slope=0.2, diagnostics.recycle=-": "slope 0.2",
               "act.negative_slope=0, train.lr=-, train.steps=-": "slope 0",
               "act.negative_slope=0.2, train.lr=-, train.steps=-": "slope 0.2",
               "act.negative_slope=0, train.lr=0.002, train.steps=500": "slope 0, lr 0.002, 500 steps",
               "train.lr=0.001": "lr 0.001", "train.lr=-": "lr 0.0002 (default)"})
DEAD = [{"header": "D", "field": "label", "names": LABELS},
        *[{"header": f"D/act2 {s} %", "field": f"final.D/act2.{s}_frac", "how": "stat", "scale": 100}
          for s in ("dead", "dormant", "persistent")],
        {"header": "Frechet distance", "field": "metrics.frechet_distance", "how": "stat", "digits": 0}]
XEON_AMX = "Intel Xeon (family 6, model 167) with AVX-512, AVX512-BF16 and AMX, 2 cores, idle"
FID_COLUMNS = [{"header": "run", "field": "_file"}, {"header": "seeds", "field": "fid", "how": "count"},
               {"header": "FID", "field": "fid", "how": "mean_se"},
               {"header": "precision", "field": "precision", "how": "mean_se", "digits": 3},
               {"header": "recall", "field": "recall", "how": "mean_se", "digits": 3}]

SLOPE_FID = "slope_fid_fashion_mnist.json"
SLOPE_VARIANTS = {"d_norm=batch, lr=0.0002": "BatchNorm (default)", "d_norm=none, lr=0.0002": "none, default lr",
                  "d_norm=none, lr=0.001": "none, 5x lr (1e-3)"}
SLOPE_ACTS = {"relu": "ReLU", "leaky_relu 0.01": "LeakyReLU 0.01", "leaky_relu 0.2": "LeakyReLU 0.2"}
NOT_RELU = {"activation": ["leaky_relu 0.01", "leaky_relu 0.2"]}
SLOPE_MACHINE = "AMD EPYC (family 25, model 17), 2 cores, one thread per run, two (at times three) runs at a time"

INTRO = ("\n# Measured results\n\n"  # one paragraph, one line of markdown
         "The measured figures of the docs, rendered by `python scripts/bench/render_results.py` from the JSON"
         " under [docs/data](data) by the specs in `scripts/bench/results_spec.py` (the suite fails when the "
         "text and the data differ). Each table names its command, its machine and its data; **±** is the "
         "standard error over trials (SE) unless a header says SD (over seeds), and two trials print both "
         "values. Speed was measured on 2-core machines: only ratios measured side by side in one run are "
         "quoted; absolute times move with the load.\n")

SECTIONS = [
    {"title": "Operator speed", "text": "The project's activation ops against MindSpore's built-ins "
     "([operator.md](operator.md)), their rounding error, and `inplace=True`'s memory."},
    {"title": "Training speed per CPU", "text": "The default CPU path (`conv_impl=onednn`, `fusion=conv_act`) against "
     "PyTorch 2.13 running the same DCGAN on the same 2 threads ([performance.md](performance.md))."},
    {"title": "bf16 against fp32", "text": "`precision=bf16` against this app's fp32 and PyTorch's autocast bf16, "
     "speed and quality ([precision.md](precision.md))."},
    {"title": "Quality against PyTorch", "text": "The DCGAN recipe against its PyTorch twin at equal work on "
     "Fashion-MNIST ([vs_pytorch.md](vs_pytorch.md))."},
    {"title": "FID parity and the default run", "text": "The Inception-v3 port against the reference, and the default "
     "MNIST run in standard units ([metrics.md](metrics.md))."},
    {"title": "Slope study and dead channels", "text": "D's activation against FID on Fashion-MNIST "
     "(`experiment=slope_study`); on MNIST without a normaliser (`experiment=dead_channels`, 300 steps, 3 seeds), "
     "ReDo recycling, and the recipes "
     "([slope_study.md](slope_study.md), [diagnostics.md](diagnostics.md))."},
    {"title": "The 2D mode-collapse benchmark", "text": "PacGAN's ring of 8 and grid of 25 Gaussians, D's activation "
     "per row, at the 2D protocol (the rate decaying to 0 over the second half; [sweeps.md](sweeps.md), "
     "[slope_study.md](slope_study.md)). PacGAN's GAN reaches 98.2% (ring8) and 94.8% (grid25) high quality after "
     "about 400,000 steps."},
    {"title": "Overheads", "text": "What diagnostics, probes, the launch mode, fusion, the dashboard, export and "
     "data parallelism cost ([diagnostics.md](diagnostics.md), [fusion.md](fusion.md), [deploy.md](deploy.md))."},
]

TABLES = [
    {"name": "op_family", "section": "Operator speed", "title": "Forward and forward+backward against the built-in, "
     "16M float32 elements, 2 threads:", "files": ["bench_op_family.json"],
     "by": ["kind", "impl"],
     "columns": [{"header": "kind", "field": "kind"}, {"header": "impl", "field": "impl"},
                 {"header": "fwd ms", "field": "fwd_ms", "how": "median", "digits": 1},
                 {"header": "built-in fwd ms", "field": "builtin_fwd_ms", "how": "median", "digits": 1},
                 {"header": "fwd x", "field": "fwd_ratio", "how": "median"},
                 {"header": "fwd+bwd x", "field": "fwdbwd_ratio", "how": "median"}],
     "caption": "Medians over 3 runs, each timing both sides round-robin in one process.",
     "command": "python scripts/bench/bench_op.py --kinds leaky_relu,prelu,rrelu,elu --sizes 16777216 --json F",
     "machine": "Intel Xeon with AVX-512, 2 cores, shared (quiet windows)"},
    {"name": "accuracy", "section": "Operator speed", "title": "Rounding error against exact arithmetic:",
     "files": ["bench_accuracy.json"],
     "columns": [{"header": "dtype", "field": "dtype"}, {"header": "slope", "field": "slope"},
                 {"header": "forward max rel", "field": "forward_max_rel", "digits": ".2g"},
                 {"header": "gradient max rel", "field": "backward_max_rel", "digits": ".2g"},
                 {"header": "bits equal the reference", "field": "bit_exact_with_reference",
                  "names": {"False": "no", "True": "yes"}}],
     "caption": "1,114,112 values (normal(0, 100) and 0 to -65504); relative errors where the exact result is normal.",
     "command": "python scripts/bench/bench_accuracy.py --json F", "machine": "any CPU (exactness)"},
    {"name": "inplace", "section": "Operator speed", "title": "Peak memory of a chain of 8 LeakyReLU layers, graph "
     "mode:", "files": ["bench_inplace.json"],
     "columns": [{"header": "inplace", "field": "inplace", "names": {"False": "no", "True": "yes"}},
                 {"header": "peak MiB", "field": "peak_mib", "digits": 0},
                 {"header": "activations at the peak", "field": "peak_tensors", "digits": 1}],
     "caption": "32 MiB float32 activations, one forward+backward, each variant in a fresh process.",
     "command": "python scripts/bench/bench_inplace.py --json F",
     "machine": "AMD EPYC (family 25, model 17), 2 cores"},
    {"name": "train_xeon_avx512_idle", "section": "Training speed per CPU", "title": "An Intel Xeon with AVX-512 "
     "(the file does not record the model):",
     "files": ["bench_train_g_once_idle.json"], "by": ["model", "fusion"],
     "columns": STEP_COLUMNS, "command": BENCH_TRAIN.replace(" --fusions conv_act", " --fusions none,conv_act"),
     "machine": "Intel Xeon with AVX-512, 2 cores, idle"},
    {"name": "train_xeon_avx512", "section": "Training speed per CPU", "title": "An Intel Xeon with AVX-512 and no "
     "bf16 instructions:", "files": ["bench_train_xeon_avx512.json"],
     "by": ["model", "fusion"], "where": {"precision": "fp32"}, "columns": STEP_COLUMNS, "command": BENCH_TRAIN,
     "machine": "Intel Xeon (family 6, model 207), AVX-512 VNNI, 2 cores, idle"},
    {"name": "train_epyc_zen3", "section": "Training speed per CPU", "title": "An AMD EPYC Zen 3 (AVX2, no AVX-512):",
     "files": ["bench_train_zen3.json", "bench_train_zen3_after_bf16.json"],
     "by": ["model", "fusion"], "where": {"precision": "fp32"}, "columns": STEP_COLUMNS, "command": BENCH_TRAIN,
     "caption": "Two days, 3 runs each.", "machine": "AMD EPYC (family 25, model 1), AVX2, 2 cores, idle"},
    {"name": "fusion_choice", "section": "Training speed per CPU", "title": "The convolutions and fusions, one run "
     "each on 1 and 2 threads, a quiet machine:", "files": [
         ["bench_train_onednn_pool_1thread.json", "1"], ["bench_train_onednn_pool.json", "2"]],
     "by": ["model", "impl", "fusion"],
     "columns": [{"header": "model", "field": "model", "names": MODEL}, {"header": "conv_impl", "field": "impl"},
                 {"header": "fusion", "field": "fusion"},
                 *[{"header": f"img/s, {n} thread{'s' * (n > 1)}", "field": "img_per_s", "digits": 0,
                    "where": {"_file": str(n)}} for n in (1, 2)]],
     "command": "python scripts/bench/bench_train.py --json F --vs-torch --impls onednn "
                "--fusions none,conv_act [--threads 1]", "machine": "Intel Xeon with AVX-512, 2 cores"},
    {"name": "machine_peaks", "section": "Training speed per CPU", "title": "Each CPU's peak through oneDNN on 2 "
     "threads (the better of a 2048^3 GEMM and a DCGAN-sized convolution), the denominator of a step's share:",
     "files": [[f"bench_peak{s}.json", label] for s, label in (
         ("_amx", "Xeon, AMX"), ("_xeon_avx512", "Xeon, AVX-512, no bf16"), ("_zen3", "EPYC Zen 3"),
         ("_zen5", "EPYC Zen 5"))],
     "columns": [{"header": "CPU", "field": "_file"}, {"header": "oneDNN ISA", "field": "onednn.isa"},
                 {"header": "fp32 GFLOP/s", "field": "peak_gflops.fp32", "digits": 0},
                 {"header": "bf16 GFLOP/s", "field": "peak_gflops.bf16", "digits": 0}],
     "caption": "Without bf16 instructions oneDNN emulates bf16 (AVX-512) or has no bf16 kernel (AVX2: -).",
     "command": "python scripts/bench/bench_peak.py --json F", "machine": "the CPU of each row, 2 cores, idle"},
    {"name": "utilisation_amx", "section": "Training speed per CPU", "title": "The step's share of that peak on the "
     "Xeon with AMX (convolution FLOPs only):", "files": ["bench_train_amx_col2im.json"],
     "by": ["model", "precision"],
     "columns": [{"header": "model", "field": "model", "names": MODEL}, {"header": "precision", "field": "precision"},
                 {"header": "achieved GFLOP/s (median)", "field": "achieved_gflops", "how": "median", "digits": 0},
                 {"header": "share of the peak % (range)", "field": "peak_share", "how": "range", "scale": 100,
                  "digits": 0}],
     "command": BF16, "machine": XEON_AMX},
    {"name": "bf16_xeon_amx", "section": "bf16 against fp32", "title": "An Intel Xeon with AMX, both precisions "
     "channels last:", "files": ["bench_train_amx_col2im.json"], "by": ["model"],
     "where": {"precision": "bf16"}, "columns": BF16_COLUMNS, "command": BF16, "machine": XEON_AMX},
    {"name": "bf16_epyc_zen5", "section": "bf16 against fp32", "title": "An AMD EPYC Zen 5 (AVX512-BF16, no AMX), "
     "NCHW, timed without lead-in steps (which inflates the ratio to fp32):",
     "files": ["bench_train_zen5_bf16_blocked16.json"], "by": ["model"],
     "where": {"precision": "bf16"}, "columns": BF16_COLUMNS, "command": BF16 + " --no-lead-in",
     "machine": "AMD EPYC (family 26, model 2), AVX512-BF16, 2 cores, idle"},
    {"name": "bf16_quality", "section": "bf16 against fp32", "title": "The default MNIST run (1,000 steps) in "
     "Inception-v3 metrics, 1,000 samples, both precisions channels last:",
     "files": [["fid_fp32_mnist_amx.json", "fp32"], ["fid_bf16_mnist_amx.json", "bf16"]],
     "by": ["_file"], "columns": FID_COLUMNS,
     "command": "python train.py seed=S precision=P; python scripts/fid.py data:mnist RUN", "machine": XEON_AMX},
    {"name": "layouts", "section": "bf16 against fp32", "title": "NCHW against channels last (`model.layout`), "
     "oneDNN capped at each lower instruction set on the Xeon with AMX, median img/s over 3 rounds:",
     "files": ["bench_train_isa_layouts_ab.json"],
     "by": ["onednn.isa", "model", "precision"],
     "columns": [{"header": "ONEDNN_MAX_CPU_ISA", "field": "onednn.isa",
                  "names": {isa.lower(): isa for isa in ("AVX512_CORE_BF16", "AVX512_CORE", "AVX2")}},
                 {"header": "model", "field": "model", "names": MODEL}, {"header": "precision", "field": "precision"},
                 *[{"header": f"{name} img/s", "field": "img_per_s", "how": "median", "digits": 0,
                    "where": {"overrides.0": f"model.layout={name.lower()}"}} for name in ("NCHW", "NHWC")]],
     "command": "ONEDNN_MAX_CPU_ISA=I python scripts/bench/bench_train.py --json F --models dcgan32,dcgan64 "
                "--impls onednn --fusions conv_act --precisions fp32,bf16 --peak none --override model.layout=L",
     "machine": XEON_AMX},
    {"name": "quality_vs_torch", "section": "Quality against PyTorch", "title": "Fashion-MNIST 32x32, 10,000 steps, "
     "FID on 5,000 samples against 10,000 training images:", "files": ["bench_quality_fashion_mnist_10k.json"],
     "rows": "runs[].rows[].points[]", "where": {"step": 10000, "n_samples": 5000}, "by": ["impl"],
     "columns": [{"header": "implementation", "field": "impl",
                  "names": {"app": "this app (MindSpore)", "torch": "PyTorch reference"}},
                 {"header": "seeds", "field": "fid", "how": "count"},
                 {"header": "FID", "field": "fid", "how": "mean_se"},
                 {"header": "KID x 1000", "field": "kid", "how": "mean_se", "scale": 1000, "digits": 2},
                 {"header": "img/s", "field": "img_per_s", "how": "median", "digits": 0}],
     "command": "python scripts/bench/bench_quality.py --steps 10000 --samples 5000 --json F",
     "machine": "Intel Xeon, 2 cores"},
    {"name": "torch_step1", "section": "Quality against PyTorch", "title": "Step 1 from the same weights and batches, "
     "the app against PyTorch:", "files": ["torch_dcgan_equivalence.json"],
     "columns": [{"header": "value", "field": "value"}, {"header": "this app", "field": "app", "digits": 6},
                 {"header": "PyTorch", "field": "torch", "digits": 6},
                 {"header": "relative difference", "field": "rel", "digits": 7}],
     "command": "python scripts/bench/torch_dcgan.py check --json F", "machine": "Intel Xeon, 2 cores"},
    {"name": "inception_parity", "section": "FID parity and the default run", "title": "The MindSpore Inception-v3 "
     "against the reference TorchScript archive on the same images:", "files": ["inception_parity.json"],
     "columns": [{"header": "set", "field": "set"}, {"header": "images", "field": "images"},
                                   {"header": "max abs feature difference", "field": "max_abs_diff", "digits": 6},
                                   {"header": "largest feature", "field": "torch_feature_max", "digits": 2}],
     "command": "python scripts/bench/check_inception.py", "machine": "Intel Xeon, 2 cores"},
    {"name": "default_fid", "section": "FID parity and the default run", "title": "`python train.py` (MNIST, 1,000 "
     "steps) scored on 1,000 samples against 1,000 training digits:", "files": [["fid_default_mnist.json", "fp32"]],
     "by": ["_file"], "columns": FID_COLUMNS,
     "caption": "Two real sets of 1,000 digits give the floor at that count (`real_vs_real` in the file).",
     "command": "python train.py seed=S; python scripts/fid.py data:mnist RUN", "machine": "Intel Xeon, 2 cores"},
    {"name": "fid_speed", "section": "FID parity and the default run", "title": "Inception-v3 features, this port "
     "against torch's run of the same archive, images per second (median of 3 rounds):", "files": ["bench_fid.json"],
     "by": ["threads", "batch"],
     "columns": [{"header": "threads", "field": "threads"}, {"header": "batch", "field": "batch"},
                 {"header": "ours img/s", "field": "ours_img_s.median", "digits": 1},
                 {"header": "torch img/s", "field": "torch_img_s.median", "digits": 1}],
     "command": "python scripts/bench/bench_fid.py --batches 16 32 64 --threads 1 2 --rounds 3 --json F",
     "machine": "Intel Xeon, 2 cores, loaded"},
    {"name": "slope_fid", "section": "Slope study and dead channels", "also": "docs/slope_study.md",
     "title": "The slope study: final FID by D's activation and normaliser, Fashion-MNIST 32x32, 10,000 steps:",
     "files": [SLOPE_FID], "rows": "runs[].context.cells[]",
     "columns": [{"header": "D normaliser", "field": "variant", "names": SLOPE_VARIANTS},
                 {"header": "D activation", "field": "activation", "names": SLOPE_ACTS},
                 {"header": "seeds", "field": "fid.n"}, {"header": "FID", "how": "summarised", "field": "fid"},
                 {"header": "FID - ReLU", "field": "vs_relu.fid_diff", "digits": "+.1f", "where": NOT_RELU},
                 {"header": "in SE", "field": "vs_relu.in_se", "digits": "+.1f", "where": NOT_RELU},
                 {"header": "KID x 1000", "how": "summarised", "field": "kid", "scale": 1000, "digits": 2},
                 {"header": "D dead or dormant %", "how": "summarised", "field": "d_dead_or_dormant", "scale": 100}],
     "caption": "FID and KID on 2,000 samples against 10,000 training images (Inception-v3, the TF archive's "
     "weights), mean ± SE over seeds; FID - ReLU in standard errors of the difference; dead or dormant: share of "
     "D's channels at the last check; stability: the next table ([slope_study.md](slope_study.md)).",
     "command": "python train.py -m experiment=slope_study; python scripts/bench/slope_study.py DIR --json F",
     "machine": SLOPE_MACHINE},
    {"name": "slope_fid_curve", "section": "Slope study and dead channels", "also": "docs/slope_study.md",
     "title": "The FID curve of each cell:",
     "files": [SLOPE_FID], "rows": "runs[].rows[].fid_curve[]", "where": {"finished": True},
     "by": ["variant", "activation"],
     "columns": [{"header": "D normaliser", "field": "variant", "names": SLOPE_VARIANTS},
                 {"header": "D activation", "field": "activation", "names": SLOPE_ACTS},
                 *[{"header": f"FID at {s:,}", "field": "fid", "how": "mean_se", "where": {"step": s}}
                   for s in (2500, 5000, 7500, 10000)]],
     "caption": "Mean ± SE over seeds.", "command": "python train.py -m experiment=slope_study",
     "machine": SLOPE_MACHINE},
    {"name": "slope_stability", "section": "Slope study and dead channels", "also": "docs/slope_study.md",
     "title": "Stability: the spread of the final FID over seeds, and unstable runs:",
     "files": [SLOPE_FID], "rows": "runs[].context.cells[]",
     "columns": [{"header": "D normaliser", "field": "variant", "names": SLOPE_VARIANTS},
                 {"header": "D activation", "field": "activation", "names": SLOPE_ACTS},
                 {"header": "seeds", "field": "fid.n"}, {"header": "FID SD over seeds", "field": "fid.sd"},
                 {"header": "unstable runs", "field": "unstable"},
                 {"header": "SD reduction vs ReLU", "field": "vs_relu.spread.reduction", "digits": "+.0%",
                  "where": NOT_RELU},
                 {"header": "95% interval, from", "field": "vs_relu.spread.ci95.0", "digits": "+.0%",
                  "where": NOT_RELU},
                 {"header": "to", "field": "vs_relu.spread.ci95.1", "digits": "+.0%", "where": NOT_RELU}],
     "caption": "Spread: SD of a cell's final FID over its seeds; reduction: 1 - SD / SD(ReLU) in the same D "
     "variant, with its 95% interval (F distribution of the variance ratio); unstable: runs that regressed or had a "
     "collapse event ([slope_study.md](slope_study.md)). The articles' claim to test: a LeakyReLU D about 40% more "
     "stable than a ReLU one.",
     "command": "python scripts/bench/slope_study.py DIR --json F", "machine": SLOPE_MACHINE},
    {"name": "slope_death_vs_fid", "section": "Slope study and dead channels", "also": "docs/slope_study.md",
     "title": "Channel death against "
     "FID: Pearson's r between a run's share of dead or dormant D channels at the last check and its final FID:",
     "files": [SLOPE_FID], "rows": "runs[].context.death_vs_fid{}",
     "columns": [{"header": "runs of", "field": "_key", "names": {**SLOPE_VARIANTS, "all": "every D"}},
                 {"header": "runs", "field": "n"}, {"header": "Pearson r", "field": "pearson_r", "digits": 2}],
     "caption": "Each run's shares and FID are rows of the data file.",
     "command": "python scripts/bench/slope_study.py DIR --json F", "machine": SLOPE_MACHINE},
    {"name": "mnist_dead_channels", "section": "Slope study and dead channels", "title": "D's third layer at the last "
     "check, percent of its channels, mean ± SD over 3 seeds:", "files": ["slope_study_mnist.json"],
     "columns": DEAD,
     "command": "python train.py -m experiment=dead_channels act.d_kind=K act.negative_slope=S seed=0,1,2",
     "machine": "Intel Xeon, 2 cores, shared"},
    {"name": "redo", "section": "Slope study and dead channels", "title": "ReDo recycling of a slope-0 D, the same "
     "setting:", "files": ["redo_recycle.json"], "columns": DEAD,
     "command": "python train.py -m experiment=dead_channels act.negative_slope=0 diagnostics.recycle=true seed=S",
     "machine": "Intel Xeon, 2 cores, shared"},
    {"name": "batchnorm_d", "section": "Slope study and dead channels", "title": "With the default BatchNorm D "
     "(`python train.py`, one run each):", "files": ["dead_channels_batchnorm.json"],
     "columns": DEAD, "command": "python train.py -m act.negative_slope=0,0.2; "
     "python train.py -m act.negative_slope=0 train.lr=0.002 train.steps=500", "machine": "Intel Xeon, 2 cores"},
    {"name": "probes", "section": "Slope study and dead channels", "title": "Choosing the learning rate: a ReLU D "
     "without a normaliser, one run each:", "files": ["slope_study_probes.json"],
     "columns": [{"header": "run", "field": "label", "names": LABELS},
                 *[{"header": f"D/act2 {s} %", "field": f"final.D/act2.{s}_frac", "how": "stat", "scale": 100}
                   for s in ("dead", "persistent")]],
     "command": "python train.py model.d_norm=none act.negative_slope=0 act.g_negative_slope=0.2 train.steps=500 "
                "diagnostics.interval=50 [train.lr=0.001]", "machine": "Intel Xeon, 2 cores, shared"},
    {"name": "recipes_mnist", "section": "Slope study and dead channels", "title": "Recipes on MNIST, 1,000 steps, "
     "mean (min-max) over the seeds:", "files": ["recipes_mnist.json"],
     "columns": [{"header": "recipe", "field": "recipe"}, {"header": "seeds", "field": "seeds"},
                 {"header": "classes", "field": "class_coverage.mean", "digits": 1},
                 {"header": "Frechet distance (classifier)", "field": "frechet_distance.mean", "digits": 0},
                 {"header": "min", "field": "frechet_distance.min", "digits": 0},
                 {"header": "max", "field": "frechet_distance.max", "digits": 0}],
     "command": "python train.py runtime.threads=1 [experiment=...] seed=S; "
                "python scripts/compare_runs.py RUNS --json F",
     "machine": "Intel Xeon, 2 cores, shared"},
    {"name": "ring8_slopes", "section": "The 2D mode-collapse benchmark", "title": "ring8, 15,000 steps, per D "
     "activation:", "files": RING8, "where": {"steps": 15000}, "by": ["_file"],
     "columns": [{"header": "D activation", "field": "_file"}, {"header": "trials", "field": "modes", "how": "count"},
                 *MODES], "caption": SE,
     "command": RING8_CMD,
     "machine": "one core of an Intel Xeon, shared"},
    {"name": "grid25_slopes", "section": "The 2D mode-collapse benchmark", "title": "grid25, 20,000 steps, per D "
     "activation:", "files": GRID25, "where": {"steps": 20000}, "by": ["_file"],
     "columns": [{"header": "D activation", "field": "_file"}, {"header": "trials", "field": "modes", "how": "count"},
                 *MODES], "caption": SE,
     "command": "python scripts/bench/bench_modes.py --batched --trials 10 --datasets grid25 --slopes S "
                "--eval-at 10000,20000 --json F", "machine": "one core of an Intel Xeon, shared"},
    {"name": "grid25_length", "section": "The 2D mode-collapse benchmark", "title": "grid25 at 60,000 steps (the rate "
     "falling over the second half), D slope 0.2:", "files": ["bench_modes_batched_grid25_60k_lr_decay.json"],
     "by": ["steps"],
     "columns": [{"header": "steps", "field": "steps"}, {"header": "trials", "field": "modes", "how": "count"},
                 *MODES], "caption": SE, "command": "python scripts/bench/bench_modes.py --batched --trials 2 "
     "--datasets grid25 --slopes 0.2 --eval-at 10000,20000,30000,40000,50000,60000 --json F",
     "machine": "one core of an Intel Xeon, shared"},
    {"name": "toy2d_step_cost", "section": "The 2D mode-collapse benchmark", "title": "Per trial-step cost of 10 "
     "separate `train.py` trials against one batched model, one core:",
     "files": [["toy2d_step_cost_g_once.json", "G's forward once"]],
     "where": {"label": ["g_once_c0", "g_once_c1"]}, "by": ["side"],
     "columns": [{"header": "side", "field": "side"},
                 {"header": "CPU ms per trial-step (range over blocks)", "field": "cpu_ms_per_trial_step",
                  "how": "range", "digits": 1}],
     "command": "python scripts/bench/bench_toy2d_step.py --trials 10 --steps 20 --rounds 2 --json F --append "
                "--label g_once_cN",
     "machine": "Intel Xeon, one core each side"},
    {"name": "diagnostics_overhead", "section": "Overheads", "title": "Dead-channel diagnostics, DCGAN-32 step, "
     "medians of 8 round-robin rounds:", "files": ["bench_diagnostics.json"],
     "columns": [{"header": "step s without", "field": "step_s_without", "digits": 3},
                 {"header": "ordinary step s", "field": "step_s_ordinary", "digits": 3},
                 {"header": "check step s", "field": "step_s_check", "digits": 3},
                 {"header": "% over a run at the default interval", "field": "overhead_pct_at_interval",
                  "digits": 1}],
     "command": "python scripts/bench/bench_diagnostics.py --steps 8 --json F", "machine": "Intel Xeon, 2 cores"},
    {"name": "probe_overhead", "section": "Overheads", "title": "Probes in a user's own loop "
     "([your_model.md](your_model.md)), per step:", "files": ["probe_overhead.json"],
     "where": {"step": ["ordinary", "check"]},
     "columns": [{"header": "step", "field": "step"},
                 {"header": "x a step without probes", "field": "ratio_to_without"}],
     "caption": "Medians over rounds; a check step also reads the statistics.",
     "command": "python scripts/bench/bench_probe_overhead.py --json F --rounds 5 --steps 30 --checks 5",
     "machine": "Intel Xeon, 2 cores, loaded"},
    {"name": "probe_compile", "section": "Overheads", "title": "The first check step's compile in a user's own loop "
     "([your_model.md](your_model.md)): the probed twin against the plain one:", "files": ["probe_compile.json"],
     "by": ["model"],
     "columns": [{"header": "model", "field": "model", "names": {"model_zoo_dcgan16": "model-zoo DCGAN 16x16",
                                                                  "pix2pix_unet16": "U-Net + PatchGAN 16x16"}},
                 {"header": "probed layers", "field": "probed_layers"},
                 {"header": "rounds", "field": "probed_compile_s", "how": "count"},
                 {"header": "plain compile s (median)", "field": "plain_compile_s", "how": "median", "digits": 0},
                 {"header": "probed compile s (median)", "field": "probed_compile_s", "how": "median", "digits": 0}],
     "caption": "Paid once per run; grows with the probed layers and the machine's load.",
     "command": "python scripts/bench/bench_probe_compile.py --json F --rounds 2",
     "machine": "AMD EPYC (family 25, model 17), 2 cores, loaded"},
    {"name": "host_blocking", "section": "Overheads", "title": "`runtime.host_blocking` on whole ring8 runs, one core:",
     "files": ["host_blocking_ring8.json"], "rows": "runs[]",
     "columns": [{"header": "run", "field": "label"}, {"header": "wall s", "field": "wall_s", "digits": 1}],
     "caption": "Start-up and compile included; the metrics are identical across the runs.",
     "command": "taskset -c 0 python train.py experiment=ring8 train.steps=500 runtime.host_blocking=B",
     "machine": "Intel Xeon, 2 cores"},
    {"name": "quantize", "section": "Overheads", "title": "int8 activations against the float generator "
     "([deploy.md](deploy.md)), the default run's checkpoint:", "files": ["quantize_default.json"],
     "columns": [{"header": "float Frechet distance", "field": "float.frechet_distance", "digits": 1},
                 {"header": "int8 Frechet distance", "field": "int8.frechet_distance", "digits": 1},
                 {"header": "int8 classes", "field": "int8.class_coverage"},
                 {"header": "output PSNR dB", "field": "output_error.psnr_db", "digits": 1}],
     "command": "python scripts/quantize.py RUN --calib 512", "machine": "Intel Xeon, 2 cores"},
    {"name": "dashboard_size", "section": "Overheads", "title": "`scripts/dashboard.py` on a sweep of 30 runs:",
     "files": ["bench_dashboard.json"],
     "columns": [{"header": "runs", "field": "shape"}, {"header": "channels per run", "field": "channels_per_run"},
                 {"header": "input MB", "field": "input_mb", "digits": 0},
                 {"header": "render s (median)", "field": "render_s", "how": "median", "digits": 1}],
     "command": "python scripts/bench/bench_dashboard.py --json F", "machine": "Intel Xeon, 2 cores"},
    {"name": "fusion_steps", "section": "Overheads", "title": "The training step per `fusion` value:",
     "files": ["bench_fusion.json"], "rows": "runs[].rows[].steps[]",
     "columns": [{"header": "image size", "field": "image_size"}, {"header": "fusion", "field": "fusion"},
                 {"header": "img/s", "field": "img_per_s", "digits": 0}],
     "command": "python scripts/bench/bench_fusion.py --repeats 7 --steps 4 --json F",
     "machine": "Intel Xeon, 2 cores"},
    {"name": "generate_memory", "section": "Overheads", "title": "`scripts/generate.py --npz`:",
     "files": ["bench_generate.json"],
     "columns": [{"header": "images", "field": "n"}, {"header": "peak RSS MiB", "field": "peak_rss_mib", "digits": 0},
                 {"header": "seconds", "field": "seconds", "digits": 1}],
     "command": "python scripts/generate.py RUN --npz F -n N", "machine": "Intel Xeon, 2 cores"},
    {"name": "distributed", "section": "Overheads", "title": "Data parallelism on one 2-core machine:",
     "files": ["distributed_2ranks.json"], "rows": "runs[]",
     "columns": [{"header": "run", "field": "label"}, {"header": "wall s", "field": "wall_s", "digits": 0}],
     "caption": "Start-up and compile included.", "command": "msrun --worker_num=2 train.py train.steps=300",
     "machine": "Intel Xeon, 2 cores"},
]

HEADLINE = [
    {"claim": "Fashion-MNIST FID vs PyTorch's same DCGAN, 10,000 steps",
     "measured": "**{app}** here, {torch} in PyTorch", "n": "3 seeds, ± SE",
     "cells": {k: {"files": ["bench_quality_fashion_mnist_10k.json"], "rows": "runs[].rows[].points[]",
                   "where": {"step": 10000, "n_samples": 5000, "impl": k}, "field": "fid", "how": "mean_se"}
               for k in ("app", "torch")}},
    {"claim": "LeakyReLU op vs `nn.LeakyReLU`, 16M float32",
     "measured": "forward **{fwd}x**, forward+backward **{bwd}x** as fast", "n": "median of 3 runs",
     "cells": {k: {"files": ["bench_op_family.json"],
                   "where": {"kind": "leaky_relu", "impl": "select"}, "field": f, "how": "median"}
               for k, f in (("fwd", "fwd_ratio"), ("bwd", "fwdbwd_ratio"))}},
    {"claim": "DCGAN-32 / DCGAN-64 step vs PyTorch 2.13, CPU, 2 threads",
     "measured": "**{a}x / {b}x**", "n": "3 runs",
     "cells": {k: {"files": ["bench_train_g_once_idle.json"],
                   "where": {"model": m, "fusion": "conv_act"}, "field": "ratio_to_torch", "how": "range"}
               for k, m in (("a", "dcgan32"), ("b", "dcgan64"))}},
    {"claim": "bf16 vs fp32 step, DCGAN-32 / DCGAN-64, Xeon with AMX",
     "measured": "**{a}x / {b}x**", "n": "12 runs",
     "cells": {k: {"files": ["bench_train_amx_col2im.json"],
                   "where": {"model": m, "precision": "bf16"}, "field": "ratio_to_fp32", "how": "range"}
               for k, m in (("a", "dcgan32"), ("b", "dcgan64"))}},
    {"claim": "2D ring8, 15,000 steps", "measured": "{m} of 8 modes, **{hq}%** high quality", "n": "10 trials, ± SE",
     "cells": {k: {"files": ["bench_modes_batched_ring8_15k_10trials.json"],
                   "where": {"steps": 15000}, "field": f, "how": "mean_se", "scale": s}
               for k, f, s in (("m", "modes", 1), ("hq", "hq_fraction", 100))}},
    {"claim": "2D grid25, 20,000 steps", "measured": "{m} of 25 modes, {hq}% high quality", "n": "10 trials, ± SE",
     "cells": {k: {"files": ["bench_modes_batched_grid25_20k_slope0.2_10trials.json"],
                   "where": {"steps": 20000}, "field": f, "how": "mean_se", "scale": s}
               for k, f, s in (("m", "modes", 1), ("hq", "hq_fraction", 100))}},
    *[{"claim": f"Fashion-MNIST FID by D slope 0 / 0.01 / 0.2, {d}, 10,000 steps",
       "measured": "{relu} / {a} / {b}", "n": "3 seeds, ± SE",
       "cells": {k: {"files": [SLOPE_FID], "where": {"finished": True, **variant, "activation": a},
                     "field": "fid", "how": "mean_se"}
                 for k, a in (("relu", "relu"), ("a", "leaky_relu 0.01"), ("b", "leaky_relu 0.2"))}}
      for d, variant in (("BatchNorm D", {"d_norm": "batch"}),
                         ("D without a normaliser, lr 1e-3", {"d_norm": "none", "lr": 0.001}))],
    {"claim": "MNIST, the default run (1,000 steps)", "measured": "FID **{fid}** on 1,000 samples",
     "n": "3 seeds, ± SE", "cells": {"fid": {"files": ["fid_default_mnist.json"],
                                             "field": "fid", "how": "mean_se"}}},
    {"claim": "Dormant channels in D's third layer, no normaliser",
     "measured": "ReLU {relu}%, LeakyReLU 0.2 {leaky}%",
     "n": "3 seeds, ± SD",
     "cells": {k: {"files": ["slope_study_mnist.json"],
                   "where": {"label": f"act.d_kind=leaky_relu, act.negative_slope={s}"},
                   "field": "final.D/act2.dormant_frac", "how": "stat", "scale": 100}
               for k, s in (("relu", "0"), ("leaky", "0.2"))}},
]

# Tables of fresh bench_train.py runs (records.py's shape): `bench_train.py --render A.json [B.json ...]`.
RUN_TABLES = [
    {"name": "utilisation", "title": "Utilisation: the step's convolution GFLOP/s against the peak of its precision",
     "by": ["_file", "model", "precision"],
     "columns": [{"header": "run", "field": "_file"}, {"header": "model", "field": "model", "names": MODEL},
                 {"header": "precision", "field": "precision"}, {"header": "img/s", "field": "img_per_s", "digits": 1},
                 {"header": "GFLOP/s", "field": "achieved_gflops", "digits": 1},
                 {"header": "peak GFLOP/s", "field": "peak_gflops", "digits": 0},
                 {"header": "share of peak %", "field": "peak_share", "scale": 100, "digits": 1},
                 {"header": "PyTorch img/s", "field": "torch_img_per_s", "digits": 1},
                 {"header": "PyTorch share %", "field": "torch_peak_share", "scale": 100, "digits": 1},
                 {"header": "load before", "field": "load_average_before", "digits": 1},
                 {"header": "load after", "field": "load_average_after", "digits": 1}]},
    {"name": "bf16", "title": "bf16 against this app's fp32 (wall and CPU time) and PyTorch's autocast bf16",
     "where": {"precision": "bf16"}, "by": ["_file", "model"],
     "columns": [{"header": "run", "field": "_file"}, {"header": "model", "field": "model", "names": MODEL},
                 {"header": "img/s", "field": "img_per_s", "digits": 1},
                 {"header": "x fp32", "field": "ratio_to_fp32"}, {"header": "CPU x fp32", "field": "cpu_ratio_to_fp32"},
                 {"header": "x PyTorch bf16", "field": "ratio_to_torch"}]},
]
