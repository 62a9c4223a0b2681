"""The Custom-op plumbing of every CPU kernel, once: library entry points as cached primitives, their
shape/dtype functions, bprop wiring by input signature, thread count and device selection.

Scalars travel as a tensor input (ops.params), not as primitive attributes: MindSpore keeps the attribute
value of the first registration of a Custom op name, so two layers with different slopes would share one.
One primitive per kernel entry therefore serves every configuration and dtype (KERNEL_DTYPES).
"""
from __future__ import annotations

import functools
import os

import mindspore as ms
from mindspore import ops as msops
from mindspore.ops import constexpr

from . import build

FLOAT_DTYPES = (ms.float32, ms.float16)  # every CPU kernel (im2col, global_norm: these only)
# The activation family, the fused BatchNorm/bias + activation and the oneDNN convolutions: also bfloat16
# (float32 math, one rounding; ops/csrc/cpu/bfloat16.h).
KERNEL_DTYPES = FLOAT_DTYPES + (ms.bfloat16,)


def same(x, *_):
    """Custom out_shape/out_dtype: the output is shaped and typed like the first input."""
    return x


def x_and_second(x, _dy, w, *_):
    """Outputs of a backward with a learnable tensor (PreluBackward): dx like x, dw like the tensor."""
    return x, w


def device_target() -> str:
    """The device MindSpore runs on: "CPU", "GPU" or "Ascend"."""
    return ms.get_context("device_target")


def num_threads() -> int:
    """Kernel worker threads: $LRELU_NUM_THREADS, else MindSpore's runtime_num_threads, else all CPUs."""
    env = os.environ.get("LRELU_NUM_THREADS")
    if env is not None:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"LRELU_NUM_THREADS={env!r} is not allowed: it must be a positive integer")
        return int(env)
    return int(ms.get_context("runtime_num_threads") or os.cpu_count() or 1)


def aot(entry: str, out_shape=same, out_dtype=same, bprop=None) -> msops.Custom:
    """A Custom primitive of one entry point of the compiled CPU kernel library."""
    return msops.Custom(f"{build.library_path()}:{entry}", out_shape=out_shape, out_dtype=out_dtype,
                        func_type="aot", bprop=bprop)


def _probe() -> None:
    """The function in_graph hands to a constexpr."""


@constexpr(check=False)
def _is_none(value) -> bool:
    return value is None


def in_graph() -> bool:
    """True where MindSpore compiles the calling code into a graph (ms.jit, GRAPH_MODE), False where PyNative runs
    it eagerly: inside a graph a Python function passed to a constexpr arrives as None (the test MindSpore itself
    uses, mindspore.graph.api._run_in_jit). A constant in a graph, so only the branch it selects is compiled."""
    return _is_none(_probe)


def _bprop_x(grad: msops.Custom):
    """forward(x, params): gradient for x only."""
    def bprop(x, params, out, dout):
        return grad(x, dout, params), msops.zeros_like(params)
    return bprop


def _bprop_x_key(grad: msops.Custom):
    """forward(x, key, params): gradient for x; the key (random stream) and params get none."""
    def bprop(x, key, params, out, dout):
        return grad(x, dout, key, params), msops.zeros_like(key), msops.zeros_like(params)
    return bprop


def _bprop_x_weight(grad: msops.Custom):
    """forward(x, weight, params): gradients for x and the learnable weight from one backward kernel."""
    def bprop(x, weight, params, out, dout):
        dx, dweight = grad(x, dout, weight, params)
        return dx, dweight, msops.zeros_like(params)
    return bprop


# Input signature of a forward kernel -> (bprop maker, backward kernel's out_shape/out_dtype).
SIGNATURES = {"x": (_bprop_x, same), "x,key": (_bprop_x_key, same), "x,weight": (_bprop_x_weight, x_and_second)}


@functools.lru_cache(maxsize=None)
def primitive(forward: str, backward: str, signature: str) -> msops.Custom:
    """The forward primitive of `forward` with its bprop through `backward`, cached per entry pair."""
    make_bprop, grad_out = SIGNATURES[signature]
    grad = aot(backward, out_shape=grad_out, out_dtype=grad_out)
    return aot(forward, bprop=make_bprop(grad))


@constexpr
def check_dtype(op: str, dtype: ms.Type) -> None:
    """TypeError naming the op and dtype unless the device's kernel supports it (compile time under ms.jit).

    float32, float16 and bfloat16 (KERNEL_DTYPES) on CPU and, for LeakyReLU's Ascend C op, on Ascend.
    """
    if dtype not in KERNEL_DTYPES:
        raise TypeError(f"{op} supports float32 and float16 tensors, and bfloat16, on {device_target()}, got dtype "
                        f"{dtype}")


@constexpr
def check_cpu(op: str) -> None:
    """RuntimeError naming the op unless MindSpore runs on CPU: its kernel exists for the CPU only."""
    if device_target() != "CPU":
        raise RuntimeError(f"{op} has a CPU kernel only (ops/csrc/cpu), device_target={device_target()!r}; "
                           f"on Ascend only leaky_relu has a kernel (ops/csrc/ascendc)")
