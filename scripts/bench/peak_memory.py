"""Peak memory of one graph execution on CPU, read from the kernel's resident-set high-water mark.

MindSpore 2.10 keeps no allocator statistics on CPU (`ms.runtime.max_memory_allocated()` returns 0) and
its memory pool keeps what it once allocated, so each measurement belongs in a fresh interpreter
(`in_child`). There the cell is compiled first (`Cell.compile` executes nothing), the high-water mark is
reset (`/proc/self/clear_refs`, Linux >= 4.0), and the cell runs once: VmHWM minus the VmRSS before the
run is the memory the execution added at its peak (activations kept for the backward, gradients,
workspace), without the interpreter, the libraries or the compiled graph.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mindspore as ms
from mindspore import nn

SCRIPTS = Path(__file__).resolve().parent


def _status_mib(field: str) -> float:
    """A memory field of /proc/self/status (VmRSS, VmHWM) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field} field: peak memory needs Linux")


def _wait(outputs: object) -> None:
    """Block until every tensor in outputs (nested tuples/lists) is computed."""
    if isinstance(outputs, ms.Tensor):
        outputs.asnumpy()
    elif isinstance(outputs, (tuple, list)):
        for item in outputs:
            _wait(item)


def execution_peak_mib(cell: nn.Cell, *inputs: ms.Tensor) -> float:
    """MiB that one run of the compiled cell adds to the resident set at its peak (graph mode)."""
    cell.compile(*inputs)
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current VmRSS
    before = _status_mib("VmRSS")
    _wait(cell(*inputs))
    return _status_mib("VmHWM") - before


def in_child(module: str, function: str, *args: object) -> float:
    """`module.function(*args)` (a module in scripts/) run in a fresh interpreter; its float result."""
    code = (f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); import {module} as m; "
            f"print(m.{function}(*{args!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{module}.{function}{args!r} failed in a child process:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])
