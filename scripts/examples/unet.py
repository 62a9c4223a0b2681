"""Small model-zoo style networks of real GAN families, in plain MindSpore (nn.LeakyReLU, nn.ReLU, ops.Tanh): a
pix2pix-shaped U-Net generator, a two-input PatchGAN discriminator and a class-conditional DCGAN generator.

They are what a user porting an image-to-image or conditional GAN brings: activations in nested blocks
(`model` SequentialCells inside `model` SequentialCells, as pix2pix names them), skip connections, one ReLU cell
called at several places, an activation primitive (`ops.Tanh()`) no probe can see. Sized for tests (16x16 images,
a few channels); `ops.swap_activations` turns their LeakyReLU/ReLU cells into the project's, which diagnostics
probe; `train_pix2pix` trains the pair with dead-channel diagnostics (a run directory the dashboard reads).
"""
from __future__ import annotations

from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

SIZE = 16  # image side
IN_CH, OUT_CH = 3, 3  # the U-Net maps a 3-channel condition to a 3-channel image


def _down(cin: int, cout: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 4, stride=2, pad_mode="pad", padding=1, has_bias=False)


def _up(cin: int, cout: int) -> nn.Conv2dTranspose:
    return nn.Conv2dTranspose(cin, cout, 4, stride=2, pad_mode="pad", padding=1, has_bias=False)


def _refine(ch: int) -> nn.Conv2d:
    return nn.Conv2d(ch, ch, 3, pad_mode="same", has_bias=False)


class Bottleneck(nn.Cell):
    """Two residual 3x3 convs at the innermost resolution sharing one ReLU cell (called twice per pass), then a
    LeakyReLU registered before the ReLU but called after it (registration order is not forward order)."""

    def __init__(self, ch: int) -> None:
        super().__init__()
        self.out_act = nn.LeakyReLU(0.2)
        self.conv1, self.conv2 = _refine(ch), _refine(ch)
        self.relu = nn.ReLU()

    def construct(self, x: Tensor) -> Tensor:
        return self.out_act(x + self.relu(self.conv2(self.relu(self.conv1(x)))))


class UnetBlock(nn.Cell):
    """One U-Net level as pix2pix writes it: `model` = down path, the inner level, up path; the output is the input
    concatenated with the model's output (the skip connection), except at the outermost level."""

    def __init__(self, outer: int, inner: int, sub: nn.Cell | None, outermost: bool = False) -> None:
        super().__init__()
        self.outermost = outermost
        down = ([_down(IN_CH, inner)] if outermost else
                [nn.LeakyReLU(0.2), _down(outer, inner), nn.BatchNorm2d(inner), nn.LeakyReLU(0.2), _refine(inner)])
        middle = [sub] if sub is not None else [Bottleneck(inner)]
        up_in = inner * 2 if sub is not None else inner
        if outermost:
            up = [nn.ReLU(), _up(up_in, outer), nn.ReLU(), nn.Conv2d(outer, OUT_CH, 3, pad_mode="same")]
        else:
            up = [nn.ReLU(), _up(up_in, outer), nn.BatchNorm2d(outer), nn.ReLU(), _refine(outer), nn.Dropout(p=0.5)]
        self.model = nn.SequentialCell(down + middle + up)

    def construct(self, x: Tensor) -> Tensor:
        if self.outermost:
            return self.model(x)
        return ops.concat((x, self.model(x)), 1)


class UnetGenerator(nn.Cell):
    """pix2pix-shaped U-Net, 16x16 -> 1x1 -> 16x16 in 4 levels: 16 activation cells (the bottleneck's ReLU called
    twice) and an ops.Tanh() primitive at the output."""

    def __init__(self, ngf: int = 4) -> None:
        super().__init__()
        block = UnetBlock(ngf * 4, ngf * 4, None)
        block = UnetBlock(ngf * 2, ngf * 4, block)
        block = UnetBlock(ngf, ngf * 2, block)
        self.model = UnetBlock(ngf, ngf, block, outermost=True)
        self.tanh = ops.Tanh()

    def construct(self, x: Tensor) -> Tensor:
        return self.tanh(self.model(x))


class PatchDiscriminator(nn.Cell):
    """PatchGAN D of two inputs, (condition, image) concatenated on channels: 16x16 -> 2x2 patch logits."""

    def __init__(self, ndf: int = 4) -> None:
        super().__init__()
        self.model = nn.SequentialCell([
            _down(IN_CH + OUT_CH, ndf), nn.LeakyReLU(0.2),
            _down(ndf, ndf * 2), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2),
            _down(ndf * 2, ndf * 4), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2),
            nn.Conv2d(ndf * 4, 1, 3, pad_mode="same")])

    def construct(self, condition: Tensor, image: Tensor) -> Tensor:
        return self.model(ops.concat((condition, image), 1))


class ConditionalGenerator(nn.Cell):
    """Class-conditional DCGAN G: G(z, label), the label embedded and concatenated with z; 1x1 -> 16x16."""

    def __init__(self, nz: int = 8, classes: int = 10, ngf: int = 4, channels: int = 1) -> None:
        super().__init__()
        self.embed = nn.Embedding(classes, nz)
        self.main = nn.SequentialCell([
            _up_first(nz * 2, ngf * 4), nn.BatchNorm2d(ngf * 4), nn.ReLU(),
            _up(ngf * 4, ngf * 2), nn.BatchNorm2d(ngf * 2), nn.ReLU(),
            _up(ngf * 2, ngf), nn.BatchNorm2d(ngf), nn.ReLU(),
            _up(ngf, channels), nn.Tanh()])

    def construct(self, z: Tensor, label: Tensor) -> Tensor:
        e = self.embed(label).reshape(label.shape[0], -1, 1, 1)
        return self.main(ops.concat((z, e), 1))


def _up_first(cin: int, cout: int) -> nn.Conv2dTranspose:
    """1x1 -> 2x2."""
    return nn.Conv2dTranspose(cin, cout, 2, stride=2, pad_mode="valid", has_bias=False)


def build_image_to_image(ngf: int = 4, seed: int = 0) -> tuple[nn.Cell, nn.Cell]:
    """(U-Net G, two-input PatchGAN D), MindSpore's activations as a model zoo builds them."""
    ms.set_seed(seed)
    return UnetGenerator(ngf), PatchDiscriminator(ngf)


def paired_batch(rng: np.random.Generator, n: int = 4) -> tuple[Tensor, Tensor]:
    """(condition, target) pairs without a download: noisy squares and the same squares filled, in [-1, 1]."""
    yy, xx = np.mgrid[:SIZE, :SIZE]
    corner = rng.integers(1, SIZE // 2, (2, n, 1, 1, 1))
    inside = (yy >= corner[0]) & (yy < corner[0] + SIZE // 3) & (xx >= corner[1]) & (xx < corner[1] + SIZE // 3)
    target = np.repeat(np.where(inside, 1.0, -1.0), IN_CH, axis=1)
    edge = inside ^ np.roll(inside, 1, axis=-1)
    condition = np.repeat(np.where(edge, 1.0, -1.0), IN_CH, axis=1) + rng.normal(0, 0.1, (n, IN_CH, SIZE, SIZE))
    return Tensor(condition.astype(np.float32)), Tensor(target.astype(np.float32))


def train_pix2pix(run_dir: str | Path, steps: int = 6, every: int = 2, seed: int = 0,
                  silence: int = 0) -> tuple[nn.Cell, nn.Cell]:
    """Train the U-Net + PatchGAN pair (pix2pix losses: BCE + 100 L1) for `steps` steps in PyNative with
    dead-channel diagnostics every `every` steps, writing a run directory the dashboard reads. `silence` > 0 sets
    the BatchNorm shift of that many channels of the second level to -20, so the activation after it has that many
    dead channels from the start (what a bad port or a bad init leaves). Returns the probed (G, D)."""
    from gan.diagnostics.api import Diagnostics
    from ops import swap_activations

    rng = np.random.default_rng(seed)
    g, d = build_image_to_image(seed=seed)
    swap_activations(g), swap_activations(d)
    if silence:
        norm = g.model.model[1].model[2]  # level 2's down-path BatchNorm, before its second LeakyReLU
        beta = norm.beta.asnumpy()
        beta[:silence] = -20.0
        norm.beta.set_data(Tensor(beta))
    g.set_train(), d.set_train()
    bce, l1 = nn.BCEWithLogitsLoss(), nn.L1Loss()
    opt_d = nn.Adam(d.trainable_params(), 2e-4, beta1=0.5)
    opt_g = nn.Adam(g.trainable_params(), 2e-4, beta1=0.5)

    def d_loss(condition, target):
        real, fake = d(condition, target), d(condition, ops.stop_gradient(g(condition)))
        return bce(real, ops.ones_like(real)) + bce(fake, ops.zeros_like(fake))

    def g_loss(condition, target):
        fake = g(condition)
        logit = d(condition, fake)
        return bce(logit, ops.ones_like(logit)) + 100 * l1(fake, target)

    d_grad = ms.value_and_grad(d_loss, None, opt_d.parameters)
    g_grad = ms.value_and_grad(g_loss, None, opt_g.parameters)

    def step(condition, target):
        loss_d, grads = d_grad(condition, target)
        opt_d(grads)
        loss_g, grads = g_grad(condition, target)
        opt_g(grads)
        return loss_d, loss_g

    condition, target = paired_batch(rng)
    with Diagnostics(run_dir, g=g, d=d, g_input=condition, d_input=(condition, target), every=every) as diag:
        twin = diag.step(step, jit=False)
        for i in range(1, steps + 1):
            condition, target = paired_batch(rng)
            loss_d, loss_g = twin(condition, target, check=diag.is_check_step(i))
            diag.record(i, loss_d=float(loss_d.asnumpy()), loss_g=float(loss_g.asnumpy()),
                        samples=g(condition).asnumpy() if i == steps else None)
    return g, d
