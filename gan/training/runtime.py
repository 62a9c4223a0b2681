"""Process runtime setup, before a run builds its networks: device, CPU kernel threads, host-blocking kernel
launch, the precision check, and the per-job thread share of parallel sweep launchers.

MindSpore is imported inside the functions: train.py calls `job_threads` / `limit_threads_env` before
MindSpore starts its thread pools.
"""
from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from gan.config.schema import Config, ConfigError, RuntimeConfig

# MindSpore: launch kernels on the calling thread (runtime.host_blocking)
HOST_BLOCKING_ENV = "MS_DEV_HOST_BLOCKING_RUN"
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask: a container or `taskset` may allow fewer than the
    machine has, and os.cpu_count() counts the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity interface on this platform
        return os.cpu_count() or 1


def job_threads(launcher: dict, cpu_count: int | None = None) -> int | None:
    """CPU threads one job may use when the launcher runs `n_jobs` jobs at once (joblib); None for serial launchers.

    n_jobs = -1 (joblib's "all cores") means one job per core.
    """
    n_jobs = launcher.get("n_jobs")
    if n_jobs is None:
        return None
    cpus = cpu_count or available_cpus()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"hydra.launcher.n_jobs={n_jobs!r} is not allowed: use a positive integer or -1 (all cores)")
    parallel = cpus if n_jobs == -1 else n_jobs
    return max(1, cpus // parallel)


# The Hydra plugins of the project's `sweep` extra, by the config choice that needs each.
SWEEP_PLUGINS = {("hydra/sweeper", "optuna"): "hydra_plugins.hydra_optuna_sweeper",
                 ("hydra/launcher", "joblib"): "hydra_plugins.hydra_joblib_launcher",
                 ("hydra/launcher", "submitit_local"): "hydra_plugins.hydra_submitit_launcher",
                 ("hydra/launcher", "submitit_slurm"): "hydra_plugins.hydra_submitit_launcher",
                 ("hydra/launcher", "slurm"): "hydra_plugins.hydra_submitit_launcher"}
_DEFAULTS_OVERRIDE = re.compile(r"override\s+/(hydra/\w+)\s*:\s*(\w+)")  # a defaults-list line choosing a plugin


def missing_sweep_plugin(overrides: list[str], config_dir: Path) -> str | None:
    """The install hint when a command-line override, or the hparams_search config it selects, needs a Hydra plugin
    of the `sweep` extra that is not installed (Hydra itself only says it cannot find the config); else None."""
    chosen = []
    for item in overrides:
        key, _, value = item.lstrip("+~").partition("=")
        path = config_dir / "hparams_search" / f"{value}.yaml"
        if key == "hparams_search" and path.is_file():
            chosen += _DEFAULTS_OVERRIDE.findall(path.read_text(encoding="utf-8"))
        elif key.startswith("hydra/"):
            chosen.append((key, value))
    for group, option in chosen:
        module = SWEEP_PLUGINS.get((group, option))
        if module is not None and importlib.util.find_spec(module) is None:
            return (f"error: {group}={option} needs the Hydra plugin {module.split('.')[1].replace('_', '-')}, which "
                    f"is not installed: pip install -e '.[sweep]' (the project's sweep extra, pinned in "
                    f"pyproject.toml)")
    return None


def limit_threads_env(threads: int) -> None:
    """Cap OpenMP/BLAS pools of this process (effective before MindSpore/numpy start their pools)."""
    for name in THREAD_ENV:
        os.environ[name] = str(threads)


def check_device_available(target: str) -> None:
    """ConfigError unless this MindSpore build can run on `target` (its plugin for that device loaded and found
    one): asked before MindSpore selects the device, whose own failure is a C++ error without the reason."""
    import mindspore as ms

    if not getattr(ms.device_context, target.lower()).is_available():
        raise ConfigError(f"runtime.device_target={target}: this MindSpore build ({ms.__version__}) cannot run on "
                          f"{target} (no {target} support in it, or no {target} device found); use "
                          f"runtime.device_target=CPU, or install MindSpore's {target} build")


def setup_runtime(runtime: RuntimeConfig) -> None:
    """Select device, CPU threads and kernel launch mode; graph mode comes from ms.jit on the two steps, not the
    context.

    MindSpore fixes the device once a kernel has run; a process in that state (a test session, a notebook,
    a second run()) may go on only if it already runs on the requested device. runtime.host_blocking sets
    MS_DEV_HOST_BLOCKING_RUN, which MindSpore reads once, at the process's first graph: call this before that.
    """
    import mindspore as ms

    check_device_available(runtime.device_target)
    if runtime.host_blocking:
        os.environ[HOST_BLOCKING_ENV] = "1"
    else:
        os.environ.pop(HOST_BLOCKING_ENV, None)
    try:
        ms.set_device(runtime.device_target, runtime.device_id)
    except RuntimeError as err:
        if "has been initialized" not in str(err):
            raise
        if ms.get_context("device_target") != runtime.device_target:
            raise ConfigError(f"runtime.device_target={runtime.device_target!r}: this process already runs on "
                              f"{ms.get_context('device_target')} (MindSpore fixes the device once a kernel has "
                              f"run); start a new process to change device") from err
    if runtime.threads is not None:
        set_kernel_threads(runtime.threads)


_kernel_threads: list[int] = []  # the CPU kernel thread count this process gave MindSpore (it takes one, once)


def set_kernel_threads(threads: int) -> None:
    """Give MindSpore's CPU kernels `threads` threads; a later run in the same process may only ask for the same
    number."""
    import mindspore as ms

    if _kernel_threads == [threads]:
        return
    if _kernel_threads:
        raise ConfigError(f"runtime.threads={threads}: this process already runs MindSpore's CPU kernels with "
                          f"{_kernel_threads[0]} threads (MindSpore sets them once per process); use "
                          f"runtime.threads={_kernel_threads[0]} or start a new process")
    try:
        ms.device_context.cpu.op_tuning.threads_num(threads)
    except RuntimeError as err:
        raise ConfigError(f"runtime.threads={threads}: MindSpore's CPU kernel threads were already set in this "
                          f"process by other code; leave runtime.threads=null or start a new process") from err
    _kernel_threads.append(threads)


def prepare_run(conf: Config):
    """Everything a run sets up in the process before building networks: device, threads and launch mode, the
    ranks of data parallelism, the precision check, MindSpore's seed. Returns the gan.training.distributed.World."""
    import mindspore as ms

    from gan.training.distributed import setup_distributed

    setup_runtime(conf.runtime)
    world = setup_distributed(conf.distributed, conf.runtime.device_target, conf.runtime.collective_timeout_s)
    from gan.training.precision import check_precision_supported  # MindSpore-heavy: imported when a run starts

    check_precision_supported(conf)
    ms.set_seed(conf.seed)
    return world
