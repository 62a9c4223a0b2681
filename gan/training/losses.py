"""GAN losses as a table (one short d/g pair per `train.loss`) and the gradient regularisers (WGAN-GP, R1).

Every loss takes D's logits, shape (N,), and returns a scalar mean over the batch, computed in float32.
Add a loss: one row in LOSSES, its name in gan.config.loss_kinds.LOSS_KINDS (which says, without MindSpore, whether it
needs the gradient penalty) and its closed-form test (tests/gan/test_losses.py); docs/extending.md.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import mindspore as ms
from mindspore import Tensor, nn, ops


def _f32(x: Tensor) -> Tensor:
    return x.astype(ms.float32)


def bce_d(real: Tensor, fake: Tensor) -> Tensor:
    """-log D(x) - log(1 - D(G(z))) with D = sigmoid(logits), via softplus (stable for large logits)."""
    return ops.softplus(-_f32(real)).mean() + ops.softplus(_f32(fake)).mean()


def bce_g(fake: Tensor) -> Tensor:
    """Non-saturating generator loss -log D(G(z)) (Goodfellow et al. 2014, sec. 3)."""
    return ops.softplus(-_f32(fake)).mean()


def hinge_d(real: Tensor, fake: Tensor) -> Tensor:
    """max(0, 1 - D(x)) + max(0, 1 + D(G(z))) (SNGAN, Miyato et al. 2018)."""
    return ops.relu(1.0 - _f32(real)).mean() + ops.relu(1.0 + _f32(fake)).mean()


def wasserstein_g(fake: Tensor) -> Tensor:
    """-D(G(z)): the generator loss of hinge and WGAN."""
    return -_f32(fake).mean()


def lsgan_d(real: Tensor, fake: Tensor) -> Tensor:
    """Least squares with targets real 1, fake 0: (D(x) - 1)^2 / 2 + D(G(z))^2 / 2 (Mao et al. 2017)."""
    return 0.5 * ops.square(_f32(real) - 1.0).mean() + 0.5 * ops.square(_f32(fake)).mean()


def lsgan_g(fake: Tensor) -> Tensor:
    """(D(G(z)) - 1)^2 / 2."""
    return 0.5 * ops.square(_f32(fake) - 1.0).mean()


def wasserstein_d(real: Tensor, fake: Tensor) -> Tensor:
    """D(G(z)) - D(x): the critic's estimate of the Wasserstein-1 distance, negated (Arjovsky et al. 2017)."""
    return _f32(fake).mean() - _f32(real).mean()


class Loss(NamedTuple):
    """One row of the table: D loss (logits_real, logits_fake) and G loss (logits_fake). Whether the loss needs
    the gradient penalty (`train.gp_weight`) and a D without BatchNorm is its gan.config.loss_kinds.LOSS_KINDS row."""

    d: Callable[[Tensor, Tensor], Tensor]
    g: Callable[[Tensor], Tensor]


LOSSES: dict[str, Loss] = {
    "bce": Loss(bce_d, bce_g),
    "hinge": Loss(hinge_d, wasserstein_g),
    "lsgan": Loss(lsgan_d, lsgan_g),
    "wgan_gp": Loss(wasserstein_d, wasserstein_g),
}


def input_gradient(net: nn.Cell) -> Callable[[Tensor], Tensor]:
    """x -> d sum(net(x)) / dx, differentiable again (the penalties below train D through it)."""
    return ms.grad(net, grad_position=0)


def _sample_norms_sq(grad: Tensor) -> Tensor:
    """Squared L2 norm of each sample's gradient, in float32: shape (N,)."""
    g = _f32(grad).reshape(grad.shape[0], -1)
    return (g * g).sum(axis=1)


def gradient_penalty(grad_fn: Callable[[Tensor], Tensor], real: Tensor, fake: Tensor, eps: Tensor) -> Tensor:
    """WGAN-GP (Gulrajani et al. 2017): mean over samples of (||grad D(x_hat)||_2 - 1)^2 at
    x_hat = eps * real + (1 - eps) * fake; eps (N, 1, ...) ~ U(0, 1) comes from the caller (seeded per step)."""
    x_hat = eps.astype(real.dtype) * real + (1.0 - eps.astype(real.dtype)) * fake
    norms = ops.sqrt(_sample_norms_sq(grad_fn(x_hat)) + 1e-12)  # +1e-12: a finite gradient at a zero norm
    return ops.square(norms - 1.0).mean()


def r1_penalty(grad_fn: Callable[[Tensor], Tensor], real: Tensor) -> Tensor:
    """R1 (Mescheder et al. 2018): mean over real samples of ||grad D(x)||_2^2 (the caller weights it gamma / 2)."""
    return _sample_norms_sq(grad_fn(real)).mean()


def r1_due(step: int, gamma: float, every: int) -> bool:
    """Lazy R1 (StyleGAN2): applied on global steps 0, every, 2*every, ... (0-based, so resume keeps the schedule)."""
    return gamma > 0 and step % every == 0
