"""Run folders read as typed records for the viewers (gan.analysis.dashboard, gan.analysis.sweep): `Run`, and
`Group`s of runs that differ only in their seed.

No MindSpore here: a run folder is only files, so any past run can be read. Run folders come from other people:
files are read with bounds (gan.core.untrusted), and every value the viewers compute with must be a number (an error
names the file and key). Files read per run (a folder holding `diagnostics.jsonl` or `losses.jsonl`):

- `diagnostics.jsonl`   one record per diagnostics check (gan.analysis.channels): per layer (display name) its
                        statistics and full Cell `path` (records of older runs have none), optionally learned slopes
                        `{"slopes": {"D/act1": [per channel]}}` (PReLU / adaptive activations) and the `unprobed`
                        activations;
- `losses.jsonl`        one line per log interval: {"step", "loss_d", "loss_g", "d_x", "d_g_z"};
- `metrics.jsonl`       one record per evaluation; `metrics.json` the latest values;
- `events.jsonl`        optional {"step", "kind", "detail"} per event (gan.run.files.EVENT_KINDS);
- `.hydra/overrides.yaml` the settings a sweep varies: runs that differ only in `seed` form one group (without
                        the file: the run's hparams, `gan.config.schema.HPARAM_KEYS`, from `.hydra/config.yaml`);
- `samples/step_*.png`  the newest one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from gan.config.activation_kinds import ACTIVATION_KINDS
from gan.config.schema import HPARAM_KEYS, flatten
from gan.core.untrusted import UntrustedFileError, read_json, read_yaml
from gan.run.directory import FAILED_STATES, STATUS_FILE, job_state
from gan.run.files import (
    CONFIG_FILES,
    DIAGNOSTICS_FILE,
    EVENT_KINDS,
    EVENTS_FILE,
    LOSSES_FILE,
    METRICS_FILE,
    METRICS_HISTORY_FILE,
    OVERRIDES_FILE,
    natural_order,
    read_events,
    read_jsonl,
    read_overrides,
)

SEED_KEY = "seed"
Points = list[tuple[int, float | None]]  # (step, value) of one quantity over a run


@dataclass(frozen=True, eq=False)
class Run:
    """Everything the viewers show about one run, read from its files (a missing file gives an empty part)."""

    dir: Path
    name: str  # the folder as the viewer names it: relative to the directory it was given
    settings: dict[str, str] = field(default_factory=dict)  # what groups compare: overrides, else hparams
    activations: str = ""  # each network's activation kind and parameters, e.g. "D prelu (prelu_init=0.25), ..."
    seed: str | None = None
    diagnostics: list[dict] = field(default_factory=list)
    losses: list[dict] = field(default_factory=list)
    metrics_history: list[dict] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)  # the latest evaluation (metrics.json)
    events: list[dict] = field(default_factory=list)  # in file order; several may share a step
    sample: Path | None = None  # the newest samples/step_*.png

    def layer_points(self, layer: str, metric: str) -> Points:
        """(step, value) of one layer's statistic over the run's checks."""
        return [(rec["step"], rec["layers"][layer].get(metric)) for rec in self.diagnostics if layer in rec["layers"]]

    def log_points(self, log: str, key: str) -> Points:
        """(step, value) of `key` over the run's "losses" or "metrics_history" records."""
        return [(rec["step"], rec.get(key)) for rec in getattr(self, log)]

    def last_step(self) -> int | None:
        """The last step any of the run's step logs reached (None before its first record)."""
        steps = [records[-1]["step"] for records in (self.losses, self.diagnostics, self.metrics_history) if records]
        return max(steps) if steps else None


class Group(NamedTuple):
    """Runs that differ only in their seed (one line with a min-max band on the charts); `index`: its place among
    the groups (its line style)."""

    index: int
    label: str
    runs: tuple[Run, ...]


class Grouping(NamedTuple):
    """Runs grouped by the settings that vary across them (all but the seed)."""

    groups: list[Group]
    common: dict[str, str]  # the settings all runs share
    varied: list[str]  # the settings that differ between groups

    def group_of(self, run: Run) -> Group:
        """The group holding `run`."""
        return next(g for g in self.groups if any(r is run for r in g.runs))


def readable(text: str) -> str:
    """Text for a page or table: bytes of a file name that are not UTF-8 (which Python keeps as surrogate escapes,
    unwritable as UTF-8) become U+FFFD, so a folder named x\\xff\\xfey shows as x\ufffd\ufffdy."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def relative_name(folder: Path, root: Path) -> str:
    """A run folder's name below the directory a viewer was given (the folder's own name when it is that one)."""
    return str(folder.relative_to(root)) if folder != root else folder.name


def find_runs(root: str | Path) -> list[Path]:
    """Run directories at or below `root`: folders holding diagnostics.jsonl or losses.jsonl, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory; pass a run directory or a sweep directory of runs")
    found = {p.parent for name in (DIAGNOSTICS_FILE, LOSSES_FILE) for p in root.rglob(name)}
    return natural_order(found, root)


def find_failed(root: str | Path) -> list[tuple[Path, str]]:
    """Run folders at or below `root` (with status.json, or Hydra jobs) that gave no result: failed, aborted,
    died or wrote nothing (gan.run.directory.FAILED_STATES), with why, in job order."""
    root = Path(root)
    folders = {p.parent for p in root.rglob(STATUS_FILE)} | {p.parent.parent for p in root.rglob(OVERRIDES_FILE)}
    states = {folder: job_state(folder) for folder in folders}
    return [(folder, states[folder][1]) for folder in natural_order(folders, root)
            if states[folder][0] in FAILED_STATES]


def load_runs(root: str | Path) -> tuple[list[Run], list[tuple[str, str]]]:
    """Every run at or below `root` (named relative to it), and the (name, why) of the jobs there without a
    result; FileNotFoundError, naming those jobs, when there is no run."""
    root = Path(root)
    run_dirs = find_runs(root)
    failed = [(relative_name(d, root), why) for d, why in find_failed(root)]
    if not run_dirs:
        stopped = "".join(f"; {name}: {why}" for name, why in failed)
        raise FileNotFoundError(f"no run found under {root}: a run directory holds {DIAGNOSTICS_FILE} or "
                                f"{LOSSES_FILE}{stopped}")
    return [load_run(d, relative_name(d, root)) for d in run_dirs], failed


# What a run ran before a compared setting existed, so its config lacks the key: without this, runs from before
# model.d_maxout existed would form a group of their own beside the same settings with model.d_maxout=0. A run
# without any config gets none of them: nothing says what it ran.
BEFORE_SETTING_EXISTED = {"model.d_maxout": 0, "model.d_norm": "batch", "diagnostics.recycle": False,
                          "train.loss": "bce", "act.d_kind": "leaky_relu", "act.g_kind": "leaky_relu"}


def setting_text(value) -> str:
    """A config value as the viewers show it: -0.0 as 0.0 (equal values, one spelling), lists item by item."""
    if isinstance(value, float):
        return str(value + 0.0)
    if isinstance(value, list):
        return "[" + ", ".join(map(setting_text, value)) + "]"
    return str(value)


def _config_settings(config: dict) -> dict[str, str]:
    """The run's hparams (gan.config.schema.HPARAM_KEYS) and seed from its flattened config, as strings; the act.*
    parameters of a kind only when a network uses that kind."""
    config = {**BEFORE_SETTING_EXISTED, **config} if config else config
    kinds = {config.get("act.d_kind"), config.get("act.g_kind")}
    unused = {f"act.{p}" for kind, row in ACTIVATION_KINDS.items() if kind not in kinds for p in row.keys}
    keys = [".".join(path) for path in HPARAM_KEYS.values()] + [SEED_KEY]
    return {k: setting_text(config[k]) for k in keys if k in config and k not in unused}


def _activations(config: dict) -> str:
    """Each network's activation kind and its parameters from the flattened config, e.g.
    "D prelu (prelu_init=0.25), G leaky_relu (slope=0.2)", "D maxout (pieces=5)" with model.d_maxout (which
    replaces act.d_kind); "" for configs from before act.*_kind existed."""
    parts = []
    for net, slopes in (("d", ("act.d_layers", "act.negative_slope")),
                        ("g", ("act.g_layers", "act.g_negative_slope", "act.negative_slope"))):
        kind = config.get(f"act.{net}_kind")
        if kind is None:
            continue
        if net == "d" and config.get("model.d_maxout"):
            parts.append(f"D maxout (pieces={config['model.d_maxout']})")
            continue
        row = ACTIVATION_KINDS.get(kind)
        values = [f"{p}={setting_text(config.get(f'act.{p}'))}" for p in (row.keys if row else ())]
        if row and row.layer_slopes:
            values = [f"slope={setting_text(next((config[k] for k in slopes if config.get(k) is not None), None))}"]
        parts.append(f"{net.upper()} {kind}" + (f" ({', '.join(values)})" if values else ""))
    return ", ".join(parts)


def _checked_events(run_dir: Path) -> list[dict]:
    """The run's events.jsonl records in file order (several may share a step), each with a string kind."""
    events = read_events(run_dir)
    for number, event in enumerate(events, 1):
        if not isinstance(event.get("kind"), str):
            raise ValueError(f"{run_dir / EVENTS_FILE}: event {number} needs a string 'kind' (e.g. one of "
                             f"{sorted(EVENT_KINDS)}), got {event!r:.120}")
    return events


def _is_number(value) -> bool:
    """A JSON number or null (what every value the charts and tables compute with must be)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _numbers(values: dict, where: str) -> dict:
    """`values` when each of them is a number or null; UntrustedFileError naming `where` and the key otherwise."""
    if not isinstance(values, dict):
        raise UntrustedFileError(f"{where}: expected a JSON object of numbers, got {type(values).__name__}")
    for key, value in values.items():
        if not (_is_number(value) or (isinstance(value, list) and all(map(_is_number, value)))):
            raise UntrustedFileError(f"{where}: {key!r} is {value!r:.60}, not a number")
    return values


def _numeric_records(records: list[dict], path: Path, part: str) -> list[dict]:
    """Records of a step log whose values the viewers compute with are numbers (`part`: which log)."""
    for record in records:
        where = f"{path} (step {record['step']})"
        if part == DIAGNOSTICS_FILE:
            layers = record.get("layers")
            if not isinstance(layers, dict) or not all(isinstance(v, dict) for v in layers.values()):
                raise UntrustedFileError(f"{where}: 'layers' must map layer names to objects, got {layers!r:.60}")
            for layer, values in layers.items():  # the histograms (objects) feed TensorBoard only
                if not isinstance(values.get("path", ""), str):
                    raise UntrustedFileError(f"{where} layer {layer!r}: 'path' must be text, got "
                                             f"{values['path']!r:.60}")
                _numbers({k: v for k, v in values.items() if not isinstance(v, dict) and k != "path"},
                         f"{where} layer {layer!r}")
            _numbers(record.get("slopes") or {}, f"{where} slopes")
            unprobed = record.get("unprobed", [])
            if not isinstance(unprobed, list) or not all(isinstance(u, str) for u in unprobed):
                raise UntrustedFileError(f"{where}: 'unprobed' must be a list of texts, got {unprobed!r:.60}")
        else:
            _numbers({k: v for k, v in record.items() if k != "step"}, where)
    return records


def read_metrics(run_dir: Path) -> dict:
    """The run's latest metrics (metrics.json): {name: number}; {} without the file; UntrustedFileError naming it
    when it is empty, cut short or holds other values than numbers."""
    path = Path(run_dir) / METRICS_FILE
    return _numbers(read_json(path), str(path)) if path.is_file() else {}


def _read_config(run_dir: Path) -> dict:
    """The run's config (CONFIG_FILES, bounded YAML) flattened to dotted keys; {} without one."""
    for name in CONFIG_FILES:
        if (run_dir / name).is_file():
            tree = read_yaml(run_dir / name) or {}
            if not isinstance(tree, dict):
                raise UntrustedFileError(f"{run_dir / name}: a YAML {type(tree).__name__}, not a mapping of settings")
            return flatten(tree)
    return {}


def load_run(run_dir: str | Path, name: str | None = None) -> Run:
    """The Run of one run folder, named `name` (default: the folder's name)."""
    run_dir = Path(run_dir)
    config = _read_config(run_dir)
    settings = read_overrides(run_dir) or _config_settings(config)
    samples = sorted((run_dir / "samples").glob("step_*.png"))

    def jsonl(file: str) -> list[dict]:
        path = run_dir / file
        return _numeric_records(read_jsonl(path), path, file) if path.is_file() else []

    return Run(dir=run_dir, name=run_dir.name if name is None else name, settings=settings,
               activations=_activations(config), seed=settings.get(SEED_KEY, str(config.get(SEED_KEY, "")) or None),
               diagnostics=jsonl(DIAGNOSTICS_FILE), losses=jsonl(LOSSES_FILE),
               metrics_history=jsonl(METRICS_HISTORY_FILE), metrics=read_metrics(run_dir),
               events=_checked_events(run_dir), sample=samples[-1] if samples else None)


def group_runs(runs: list[Run]) -> Grouping:
    """Groups by the settings that vary across runs (all but the seed), in the order of their first run."""
    keys = sorted({k for r in runs for k in r.settings})
    varied = [k for k in keys if k != SEED_KEY and len({r.settings.get(k) for r in runs}) > 1]
    common = {k: runs[0].settings[k] for k in keys if k not in varied and k != SEED_KEY}
    by_label: dict[str, list[Run]] = {}
    for run in runs:
        label = ", ".join(f"{k}={run.settings.get(k, '-')}" for k in varied) or \
            ("all runs" if len(runs) > 1 else run.name)
        by_label.setdefault(label, []).append(run)
    groups = [Group(index, label, tuple(members)) for index, (label, members) in enumerate(by_label.items())]
    return Grouping(groups, common, varied)
