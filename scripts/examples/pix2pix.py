"""An image-to-image pair written the way pix2pix ports write it: a U-Net generator of nested skip blocks (encoder
nn.LeakyReLU(0.2), decoder nn.ReLU, BatchNorm, Dropout in the inner decoder levels, a final Tanh) and a PatchGAN
discriminator that takes (condition, image) and scores overlapping patches. The models import only MindSpore;
`inspect_factory` is the factory `scripts/inspect_model.py` takes (docs/your_model.md, "Conditional and
image-to-image GANs"):

    PYTHONPATH=. python scripts/inspect_model.py scripts.examples.pix2pix:inspect_factory --data images/ --out out/
"""
from __future__ import annotations

import mindspore as ms
import numpy as np
from mindspore import nn, ops


class UnetBlock(nn.Cell):
    """One U-Net level: down (LeakyReLU(0.2), conv 4/2, BatchNorm), the inner level, up (ReLU, transposed conv 4/2,
    BatchNorm, optional Dropout), its output concatenated with its input (the skip); the outermost level has no
    down activation, a Tanh instead of the up BatchNorm and no skip."""

    def __init__(self, outer: int, inner: int, *, in_channels: int | None = None, sub: nn.Cell | None = None,
                 outermost: bool = False, dropout: bool = False) -> None:
        super().__init__()
        in_channels = outer if in_channels is None else in_channels
        down_conv = nn.Conv2d(in_channels, inner, 4, 2, "pad", 1, has_bias=False)
        up_in = inner if sub is None else inner * 2  # the inner level returns its input and its output
        if outermost:
            layers = [down_conv, sub, nn.ReLU(), nn.Conv2dTranspose(up_in, outer, 4, 2, "pad", 1, has_bias=True),
                      nn.Tanh()]
        else:
            down = [nn.LeakyReLU(0.2), down_conv] + ([] if sub is None else [nn.BatchNorm2d(inner), sub])
            up = [nn.ReLU(), nn.Conv2dTranspose(up_in, outer, 4, 2, "pad", 1, has_bias=False), nn.BatchNorm2d(outer)]
            layers = down + up + ([nn.Dropout(p=0.5)] if dropout else [])
        self.model = nn.SequentialCell(layers)
        self.outermost = outermost

    def construct(self, x):
        y = self.model(x)
        return y if self.outermost else ops.cat((x, y), 1)


class UnetG(nn.Cell):
    """U-Net from (N, in_channels, S, S) to (N, out_channels, S, S), S divisible by 2**depth; the `dropout` levels
    next to the innermost one use Dropout(0.5), as pix2pix does."""

    def __init__(self, in_channels: int, out_channels: int, ngf: int = 8, depth: int = 4, dropout: int = 1) -> None:
        super().__init__()
        if depth < 2:
            raise ValueError(f"depth={depth!r} is not allowed: a U-Net needs at least 2 levels")
        widths = [ngf * min(2 ** i, 8) for i in range(depth)]  # ngf, 2 ngf, 4 ngf, 8 ngf, 8 ngf, ...
        block = UnetBlock(widths[-1], widths[-1])
        for i in range(depth - 2, 0, -1):
            block = UnetBlock(widths[i], widths[i + 1], sub=block, dropout=depth - 2 - i < dropout)
        self.model = UnetBlock(out_channels, widths[1], in_channels=in_channels, sub=block, outermost=True)

    def construct(self, condition):
        return self.model(condition)


class PatchD(nn.Cell):
    """PatchGAN discriminator of (condition, image): both concatenated on channels, conv 4/2 + LeakyReLU(0.2), then
    `layers` - 1 conv 4/2 + BatchNorm + LeakyReLU(0.2) levels, a conv 4/1 level, and a conv 4/1 to one logit per
    patch, (N, 1, P, P)."""

    def __init__(self, condition_channels: int, image_channels: int, ndf: int = 8, layers: int = 2) -> None:
        super().__init__()
        cells = [nn.Conv2d(condition_channels + image_channels, ndf, 4, 2, "pad", 1, has_bias=True),
                 nn.LeakyReLU(0.2)]
        channels = ndf
        for i in range(1, layers + 1):
            stride, out = (2 if i < layers else 1), ndf * min(2 ** i, 8)
            cells += [nn.Conv2d(channels, out, 4, stride, "pad", 1, has_bias=False), nn.BatchNorm2d(out),
                      nn.LeakyReLU(0.2)]
            channels = out
        cells.append(nn.Conv2d(channels, 1, 4, 1, "pad", 1, has_bias=True))
        self.features = nn.SequentialCell(cells)

    def construct(self, condition, image):
        return self.features(ops.cat((condition, image), 1))


def grey(images):
    """The condition of this example: each image's grey level, (N, 1, H, W) (a colourisation task)."""
    return images.mean(axis=1, keep_dims=True)


def inspect_factory(size: int = 16, seed: int = 0):
    """(G, D, Feed) for scripts/inspect_model.py: G colours the grey level of each data image, D scores (grey,
    image) pairs; the folder is read as `size` x `size` RGB."""
    from scripts.inspect_model import Fed, Feed  # the inspection's contract; the models above need only MindSpore

    ms.set_seed(seed)
    g, d = UnetG(1, 3, ngf=8, depth=max(2, int(np.log2(size)))), PatchD(1, 3, ndf=8)
    g.update_parameters_name("G."), d.update_parameters_name("D.")  # one graph needs unique parameter names

    def batch(images, rng):
        condition = grey(images)
        return Fed(g=(condition,), real=images, d=lambda image: (condition, image))

    return g, d, Feed(image_size=size, channels=3, batch=batch)
