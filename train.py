"""Train a DCGAN: `python train.py [group=option ...] [key=value ...]` (see `python train.py --help`)."""
import os
import sys

os.environ.setdefault("GLOG_v", "3")  # before MindSpore is imported: silence its C++ logs

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

import gan.config.schema  # noqa: E402,F401  (registers the structured-config schema)
from gan.run.directory import ReportedError  # noqa: E402
from gan.training.runtime import job_threads, limit_threads_env, missing_sweep_plugin  # noqa: E402

INTERRUPTED_EXIT = 130  # what a shell reports for Ctrl-C: scripts and sweeps can tell a stopped run from a finished one


@hydra.main(config_path="configs", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float:
    """Run training in Hydra's run directory and return the objective for sweepers; exit 130 if interrupted
    (Ctrl-C or SIGTERM), after the checkpoint is saved, or aborted (a second Ctrl-C), without saving."""
    threads = job_threads(HydraConfig.get().launcher)  # parallel launchers (joblib): share the cores
    if threads is not None and cfg.runtime.threads is None:
        limit_threads_env(threads)
        cfg.runtime.threads = threads
    from gan.training.loop import (  # here: `--help` and config errors do not load MindSpore
        USER_ERRORS,
        TrainingAborted,
        run,
    )

    try:
        summary = run(cfg, HydraConfig.get().runtime.output_dir)
    except TrainingAborted as aborted:
        print(f"\n{aborted}", file=sys.stderr, flush=True)
        sys.exit(INTERRUPTED_EXIT)
    except USER_ERRORS as err:  # the message says what to change; a traceback would bury it
        raise ReportedError.of(err) from err
    if summary.interrupted:
        sys.exit(INTERRUPTED_EXIT)
    return summary.objective


if __name__ == "__main__":
    missing = missing_sweep_plugin(sys.argv[1:], gan.config.schema.CONFIG_DIR)  # Hydra's own error has no hint
    if missing:
        sys.exit(missing)
    main()
