"""Bring your own network: a model-zoo DCGAN, its own training loop (value_and_grad + ms.jit), the project's
activations swapped in, dead-channel diagnostics attached; the run directory reads like a train.py run
(docs/your_model.md).

    PYTHONPATH=. python scripts/examples/own_loop.py --steps 200 --every 20 --run-dir runs/own
    python scripts/dashboard.py runs/own          # or: tensorboard --logdir runs/own/tensorboard
"""
from __future__ import annotations

import argparse
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

from gan.diagnostics.api import Diagnostics
from ops import swap_activations
from scripts.examples.model_zoo import DcganD, DcganG

SIZE, NZ, BATCH = 16, 16, 16  # 16x16 grey images, 16 latents: seconds per 100 steps on 2 CPU cores


def discs(rng: np.random.Generator, n: int = BATCH) -> Tensor:
    """(n, 1, SIZE, SIZE) white discs on black in [-1, 1]: training data without a download."""
    yy, xx = np.mgrid[:SIZE, :SIZE]
    centre = rng.uniform(0.3 * SIZE, 0.7 * SIZE, (2, n, 1, 1, 1))
    radius = rng.uniform(0.15 * SIZE, 0.3 * SIZE, (n, 1, 1, 1))
    return Tensor(np.where((yy - centre[0]) ** 2 + (xx - centre[1]) ** 2 < radius ** 2, 1.0, -1.0).astype(np.float32))


def latents(rng: np.random.Generator, n: int = BATCH) -> Tensor:
    return Tensor(rng.standard_normal((n, NZ, 1, 1)).astype(np.float32))


def build(seed: int = 0) -> tuple[nn.Cell, nn.Cell]:
    """The model-zoo G and D with the project's activations swapped in (nn.ReLU, nn.LeakyReLU -> ops.LeakyReLU);
    their parameter names get the prefixes G. and D. (both nets hold a main.0.weight; a graph needs unique names)."""
    ms.set_seed(seed)
    G, D = DcganG(SIZE, NZ, 1, 8), DcganD(SIZE, 1, 8)
    G.update_parameters_name("G."), D.update_parameters_name("D.")
    swap_activations(G), swap_activations(D)
    G.set_train(), D.set_train()
    return G, D


def make_steps(G: nn.Cell, D: nn.Cell):
    """(D update, G update) with BCE as plain functions for ms.jit: one graph per optimiser (two Adams in one
    graph would need unique names for their global_step, beta1_power, ...)."""
    bce = nn.BCEWithLogitsLoss()
    opt_d = nn.Adam(D.trainable_params(), 2e-4, beta1=0.5)
    opt_g = nn.Adam(G.trainable_params(), 2e-4, beta1=0.5)

    def d_loss(real, z):
        real_logit, fake_logit = D(real), D(ops.stop_gradient(G(z)))
        loss = bce(real_logit, ops.ones_like(real_logit)) + bce(fake_logit, ops.zeros_like(fake_logit))
        return loss, ops.sigmoid(real_logit).mean(), ops.sigmoid(fake_logit).mean()

    def g_loss(z):
        logit = D(G(z))
        return bce(logit, ops.ones_like(logit))

    d_grad = ms.value_and_grad(d_loss, None, opt_d.parameters, has_aux=True)
    g_grad = ms.value_and_grad(g_loss, None, opt_g.parameters)

    def d_step(real, z):
        (loss_d, d_x, d_g_z), grads = d_grad(real, z)
        opt_d(grads)
        return loss_d, d_x, d_g_z

    def g_step(z):
        loss_g, grads = g_grad(z)
        opt_g(grads)
        return loss_g

    return d_step, g_step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    parser.add_argument("--every", type=int, default=20, help="a dead-channel check every N steps (default 20)")
    parser.add_argument("--run-dir", type=Path, default=Path("runs/own_loop"), help="a new run directory")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.every < 1:
        parser.error(f"--steps={args.steps} and --every={args.every} must both be at least 1")
    rng = np.random.default_rng(args.seed)
    G, D = build(args.seed)
    z_fixed = latents(rng)
    with Diagnostics(args.run_dir, g=G, d=D, g_input=z_fixed, d_input=discs(rng), every=args.every,
                     hparams={"model": "model_zoo_dcgan", "seed": args.seed}) as diag:
        d_step, g_step = (diag.step(fn) for fn in make_steps(G, D))   # ms.jit twins: probes compiled out / in
        for i in range(1, args.steps + 1):
            check, z = diag.is_check_step(i), latents(rng)
            loss_d, d_x, d_g_z = (float(v.asnumpy()) for v in d_step(discs(rng), z, check=check))
            loss_g = float(g_step(z, check=check).asnumpy())
            sample = i % args.every == 0 or i == args.steps
            diag.record(i, loss_d=loss_d, loss_g=loss_g, d_x=d_x, d_g_z=d_g_z,
                        samples=G(z_fixed).asnumpy() if sample else None)
    print(diag.table())
    print(f"dashboard: {args.run_dir / 'report.html'} (rebuild: python scripts/dashboard.py {args.run_dir})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
