"""Data parallelism: World helpers on one rank, clear errors, and 2 msrun workers (mccl on CPU) end to end."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from gan.config.schema import ConfigError, compose_config, to_config
from gan.core.streams import Purpose, latents
from gan.training.distributed import DistributedError, World, setup_distributed, state_checksum
from gan.training.loop import GANTrainer
from gan.training.runtime import setup_runtime
from gan.training.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]
# 2 ranks x 4 samples with synchronised BatchNorm vs 1 process x 8, over 3 steps: the same arithmetic up to the
# order of float32 sums (AllReduce of per-rank sums, gradients averaged after the per-rank backward).
# Measured: 7.1e-8 (fusion=none), 7.5e-8 (fusion=bn_act).
SYNC_BN_RTOL = 1e-5
# On top of conftest's TINY (the tiny_overrides fixture): 4 samples per rank, the default learning rate (the
# tolerance above was measured with it), checks every 2 steps, rank checksums.
DISTRIBUTED_RUN = ["train.batch_size=4", "train.num_samples=4", "train.lr=0.0002", "train.ckpt_every=1",
                   "eval.enabled=false", "diagnostics.interval=2", "runtime.rank_checksums=true"]


def test_world_local_slices_the_global_batch():
    batch = np.arange(8)
    assert [World(r, 2).local(batch).tolist() for r in (0, 1)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    np.testing.assert_array_equal(World().local(batch), batch)
    with pytest.raises(ValueError, match="cannot be split evenly over 3 ranks"):
        World(0, 3).local(batch)
    with pytest.raises(ValueError, match="rank=2 is not allowed with size=2"):
        World(2, 2)


@dataclass
class _Stats:
    loss: float
    per_channel: np.ndarray


def test_one_rank_reductions_are_the_identity():
    world = World()
    stats = {"D/act0": _Stats(1.5, np.array([0.25, 0.5]))}
    assert world.mean_array_fields(stats) is stats
    assert world.mean_fields(stats["D/act0"], ("loss",)) is stats["D/act0"]
    assert world.any(True) and not world.any(False)
    np.testing.assert_array_equal(world.allreduce_mean(np.array([1.0, 2.0])), [1.0, 2.0])


def test_checksum_sees_every_bit():
    a = {"w": np.array([1.0, 2.0], np.float32)}
    b = {"w": np.array([1.0, np.nextafter(np.float32(2.0), np.float32(3.0))], np.float32)}
    assert state_checksum(a) == state_checksum({"w": a["w"].copy()}) != state_checksum(b)


@pytest.mark.slow
def test_distributed_without_msrun_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("MS_ROLE", raising=False)
    with pytest.raises(DistributedError, match="needs MindSpore's launcher.*msrun"):
        setup_distributed(True, "CPU", 60)
    assert setup_distributed(False, "CPU", 60) == World()


def test_config_rejects_distributed_2d_data_and_a_bad_timeout():
    with pytest.raises(ConfigError, match="distributed=true trains image data only"):
        to_config(compose_config(["experiment=ring8", "distributed=true"]))
    with pytest.raises(ConfigError, match="runtime.collective_timeout_s=0"):
        to_config(compose_config(["runtime.collective_timeout_s=0"]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _msrun(out: Path, tiny: list[str], *overrides: str) -> None:
    """2 workers of train.py on this machine (`tiny`: the tiny_overrides fixture), each rank in its own run dir
    out/rank_R (to see who writes what)."""
    cmd = [shutil.which("msrun") or "msrun", "--worker_num=2", "--local_worker_num=2",
           f"--master_port={_free_port()}", "--join=True", "--cluster_time_out=120", f"--log_dir={out / 'logs'}",
           str(ROOT / "train.py"), "distributed=true", *tiny, *DISTRIBUTED_RUN, *overrides,
           f"hydra.run.dir={out}/rank_${{oc.env:RANK_ID}}"]
    result = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "GLOG_v": "3"}, capture_output=True, text=True,
                            timeout=600)
    logs = "\n".join(p.read_text()[-3000:] for p in sorted((out / "logs").glob("worker_*.log")))
    assert result.returncode == 0, f"msrun failed ({result.returncode}):\n{result.stderr[-3000:]}\n{logs}"


def _checksums(run_dir: Path, rank: int) -> dict[int, dict]:
    lines = (run_dir / "distributed" / f"rank_{rank}.jsonl").read_text().splitlines()
    return {r["step"]: r for r in map(json.loads, lines)}


def _files(run_dir: Path) -> set[str]:
    """Files the product wrote (Hydra's own .hydra/ and train.log, and the debug checksums, left out)."""
    skip = (".hydra", "distributed", "train.log")
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
            if p.is_file() and p.parts[len(run_dir.parts)] not in skip}


def _one_process_losses(tiny: list[str], overrides: list[str], steps: int) -> list[tuple[float, float]]:
    """(loss_d, loss_g) per step of one process trained on the combined batch of 2 ranks: every step it sees
    rank 0's and rank 1's batches concatenated (their shards, their order) and the global batch's latents."""
    per_rank = to_config(compose_config([*tiny, *DISTRIBUTED_RUN, *overrides]))
    n = 2 * per_rank.train.batch_size
    conf = to_config(compose_config([*tiny, *DISTRIBUTED_RUN, *overrides, f"train.batch_size={n}"]))
    setup_runtime(conf.runtime)
    shards = [build_task(per_rank, rank, 2).data for rank in (0, 1)]
    trainer = GANTrainer(conf, shards[0].channels)
    streams = [shard.batches(0) for shard in shards]
    losses = []
    for step in range(steps):
        real = np.concatenate([next(stream) for stream in streams])
        z = latents(conf.seed, step, Purpose.Z, n, conf.model.nz)
        probe = bool(trainer.probes) and (step + 1) % conf.diagnostics.interval == 0  # as the run's check steps
        stats = trainer.train_step(real, z, probe=probe)
        losses.append((stats.loss_d, stats.loss_g))
    return losses


def _loss_gap(ranks: dict[int, dict], one_process: list[tuple[float, float]]) -> float:
    """Largest relative difference between the 2-rank losses (means over the ranks) and one process's."""
    return max(abs(ranks[step + 1][key] - want) / abs(want)
               for step, pair in enumerate(one_process) for key, want in zip(("loss_d", "loss_g"), pair))


@pytest.mark.slow
def test_two_ranks_stay_identical_only_rank0_writes_and_resume_continues(tmp_path, tiny_overrides):
    first = tmp_path / "first"
    _msrun(first, tiny_overrides, "train.steps=3")
    rank0, rank1 = _checksums(first / "rank_0", 0), _checksums(first / "rank_1", 1)
    assert sorted(rank0) == sorted(rank1) == [1, 2, 3]
    for step in (1, 2, 3):  # gradients of D and G averaged: both ranks hold the same state after every step
        assert rank0[step]["checksum"] == rank1[step]["checksum"], f"ranks differ after step {step}"
        assert rank0[step]["loss_d"] == rank1[step]["loss_d"]  # the logged loss is the mean over the ranks
    assert len({r["checksum"] for r in rank0.values()}) == 3  # the state moves, so equality is a real check
    written = _files(first / "rank_0")
    assert {"checkpoints/step_00000003.ckpt", "samples/real.png", "samples/step_000003.png"} <= written
    assert any(f.startswith("tensorboard/events.out.tfevents") for f in written)
    assert _files(first / "rank_1") == set()  # rank 1 only trained
    # Per-rank BatchNorm (the default) normalises each rank's 4 samples alone, so the losses are not those of
    # one process normalising the combined 8 (measured gap 2.6e-2; train.sync_bn=true closes it, next test).
    gap = _loss_gap(rank0, _one_process_losses(tiny_overrides, [], 3))
    print(f"per-rank BatchNorm: largest relative loss gap to one process with the combined batch {gap:.2e}")
    assert gap > 100 * SYNC_BN_RTOL

    resumed = tmp_path / "resumed"
    _msrun(resumed, tiny_overrides, "train.steps=3", f"train.resume={first / 'rank_0/checkpoints/step_00000002.ckpt'}")
    for rank in (0, 1):  # every rank loads rank 0's checkpoint and lands on the uninterrupted state
        again = _checksums(resumed / f"rank_{rank}", rank)
        assert sorted(again) == [3]
        assert again[3]["checksum"] == rank0[3]["checksum"], f"rank {rank}: resumed state differs"


@pytest.mark.slow
def test_synchronised_batchnorm_losses_equal_one_process_with_the_combined_batch(tmp_path, tiny_overrides):
    """fusion=bn_act: the fused kernel fed the synchronised statistics. fusion=none (SyncBatchNorm2d) shares the
    cross-rank part (ops.batch_moments) and is checked against BatchNorm on one rank in tests/ops/test_fused.py;
    this test with fusion=none measured a gap of 7.1e-8. One msrun case keeps the distributed tests short."""
    fusion = "bn_act"
    # diagnostics off: with fusion=bn_act, diagnostics.attach fails on the renamed networks (IndexError in
    # SequentialCell.__setitem__; the same on main), independent of the BatchNorm mode.
    overrides = [f"fusion={fusion}", "train.sync_bn=true", "diagnostics.enabled=false"]
    _msrun(tmp_path, tiny_overrides, *overrides, "train.steps=3")
    rank0, rank1 = _checksums(tmp_path / "rank_0", 0), _checksums(tmp_path / "rank_1", 1)
    for step in (1, 2, 3):  # with synced statistics the BatchNorm moving statistics are replicated too
        assert rank0[step]["checksum"] == rank1[step]["checksum"], f"ranks differ after step {step}"
    gap = _loss_gap(rank0, _one_process_losses(tiny_overrides, overrides, 3))
    print(f"sync BatchNorm ({fusion}): largest relative loss gap to one process with the combined batch {gap:.2e}")
    assert gap <= SYNC_BN_RTOL


def _workers(run_dir: Path) -> dict[int, int]:
    """{rank: pid} of the msrun worker processes running train.py into run_dir (read from /proc)."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            environ = dict(item.split(b"=", 1) for item in (proc / "environ").read_bytes().split(b"\0") if b"=" in item)
        except (OSError, ValueError):  # not a process, gone meanwhile, or not ours
            continue
        if (environ.get(b"MS_ROLE") == b"MS_WORKER" and str(ROOT / "train.py").encode() in cmdline
                and any(str(run_dir).encode() in arg for arg in cmdline)):
            found[int(environ[b"RANK_ID"])] = int(proc.name)
    return found


@pytest.mark.slow
def test_a_killed_rank_stops_the_job_with_a_clear_error(tmp_path, tiny_overrides):
    """Two launchers (hosts) on this machine, one worker each; SIGKILL rank 1 after its second step. Rank 0's next
    collective must fail after runtime.collective_timeout_s with DistributedError, and both launchers must end
    non-zero. (With one launcher for both ranks msrun itself kills the survivor as soon as a worker dies.)"""
    timeout_s, port = 10, _free_port()
    args = ["distributed=true", *tiny_overrides, *DISTRIBUTED_RUN, "diagnostics.enabled=false", "train.steps=1000",
            "train.ckpt_every=1000", f"runtime.collective_timeout_s={timeout_s}",
            f"hydra.run.dir={tmp_path}/rank_${{oc.env:RANK_ID}}"]
    launchers = [subprocess.Popen(
        [shutil.which("msrun") or "msrun", "--worker_num=2", "--local_worker_num=1", f"--node_rank={node}",
         f"--master_port={port}", "--join=True", "--cluster_time_out=120", f"--log_dir={tmp_path / f'logs_{node}'}",
         str(ROOT / "train.py"), *args], cwd=ROOT, env={**os.environ, "GLOG_v": "3"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for node in (0, 1)]
    survivor_log = tmp_path / "logs_0" / "worker_0.log"
    try:
        record = tmp_path / "rank_1" / "distributed" / "rank_1.jsonl"
        deadline = time.monotonic() + 300
        while not (record.exists() and len(record.read_text().splitlines()) >= 2):
            assert time.monotonic() < deadline and all(p.poll() is None for p in launchers), "the job did not train"
            time.sleep(0.5)
        os.kill(_workers(tmp_path)[1], signal.SIGKILL)
        killed = time.monotonic()
        failed_after = None
        while launchers[0].poll() is None and time.monotonic() - killed < 180:
            if failed_after is None and "DistributedError" in survivor_log.read_text(errors="replace"):
                failed_after = time.monotonic() - killed
            time.sleep(0.5)
        ended_after = time.monotonic() - killed
        failed_after = failed_after or ended_after
    finally:
        for pid in _workers(tmp_path).values():  # only if the test failed: no worker outlives its job
            os.kill(pid, signal.SIGKILL)
        for launcher in launchers:
            if launcher.poll() is None:
                launcher.kill()
            launcher.wait()
    log = survivor_log.read_text(errors="replace")
    print(f"killed rank 1: rank 0 failed after {failed_after:.0f} s, its launcher ended after {ended_after:.0f} s")
    assert launchers[0].returncode != 0 and launchers[1].returncode != 0
    # the first collective after the kill may be the training step or the averaging of the logged values
    assert "DistributedError: rank 0 of 2: " in log and "another rank died" in log, log[-3000:]
    assert "runtime.collective_timeout_s" in log  # the message names the setting
    assert "DistributedError: msrun's scheduler stopped the job" in (tmp_path / "logs_0" / "scheduler.log").read_text()
    assert failed_after < timeout_s + 60  # the collective timeout, plus the slack of a loaded 2-core machine


FAKE_MSRUN = """#!/bin/sh
printf '%s\\n' "$@" > "$MSRUN_ARGS"
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["runs,with comma", "it's [a=b]"])
def test_train_distributed_passes_any_run_dir_to_hydra_intact(tmp_path, name):
    """scripts/train_distributed.sh quotes RUN_DIR for Hydra: a ',' made it a sweep list ("Ambiguous value"),
    reported only in worker_0.log. The fake msrun records the command line; Hydra's parser must read it back."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "msrun").write_text(FAKE_MSRUN)
    (bin_dir / "msrun").chmod(0o755)
    run_dir, recorded = tmp_path / name, tmp_path / "args.txt"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "MSRUN_ARGS": str(recorded)}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "train_distributed.sh"), "--workers", "1", str(run_dir),
                           "train.dry_run=true"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    override = next(a for a in recorded.read_text().splitlines() if a.startswith("hydra.run.dir="))
    assert OverridesParser.create().parse_override(override).value() == str(run_dir)
    bad = subprocess.run(["bash", str(ROOT / "scripts" / "train_distributed.sh"), str(tmp_path / "back\\slash")],
                         env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "holds a backslash" in bad.stderr
