"""A DCGAN written the way MindSpore model-zoo code writes it (the WGAN DcganD/DcganG layout): nn.SequentialCell of
nn.Conv2d(..., 'pad', 1, has_bias=False) / nn.BatchNorm2d / nn.LeakyReLU(0.2) in D, nn.Conv2dTranspose /
nn.BatchNorm2d / nn.ReLU in G, a final nn.Tanh. Only MindSpore imports: this is the user's network that
`ops.swap_activations` is pointed at (tests/ops/test_swap.py; the user-loop example builds on it).
"""
from __future__ import annotations

from mindspore import nn


class DcganD(nn.Cell):
    """Discriminator for isize x isize images with nc channels: conv 4/2 + LeakyReLU(0.2), then conv 4/2 + BN +
    LeakyReLU(0.2) pyramid levels until 4x4, a final 4x4 valid conv to one logit per image."""

    def __init__(self, isize: int, nc: int, ndf: int, n_extra_layers: int = 0) -> None:
        super().__init__()
        if isize < 8 or isize & (isize - 1):
            raise ValueError(f"isize={isize!r} is not allowed: it must be a power of two >= 8")
        main = nn.SequentialCell()
        main.append(nn.Conv2d(nc, ndf, 4, 2, "pad", 1, has_bias=False))
        main.append(nn.LeakyReLU(0.2))
        size, channels = isize // 2, ndf
        for _ in range(n_extra_layers):
            main.append(nn.Conv2d(channels, channels, 3, 1, "pad", 1, has_bias=False))
            main.append(nn.BatchNorm2d(channels))
            main.append(nn.LeakyReLU(0.2))
        while size > 4:
            main.append(nn.Conv2d(channels, channels * 2, 4, 2, "pad", 1, has_bias=False))
            main.append(nn.BatchNorm2d(channels * 2))
            main.append(nn.LeakyReLU(0.2))
            size, channels = size // 2, channels * 2
        main.append(nn.Conv2d(channels, 1, 4, 1, "valid", has_bias=False))
        self.main = main

    def construct(self, x):
        return self.main(x).reshape(-1)


class DcganG(nn.Cell):
    """Generator from (N, nz, 1, 1) latents: transposed conv to 4x4 + BN + ReLU, then 4/2 transposed conv + BN + ReLU
    levels up to isize, a final 4/2 transposed conv to nc channels and Tanh."""

    def __init__(self, isize: int, nz: int, nc: int, ngf: int, n_extra_layers: int = 0) -> None:
        super().__init__()
        if isize < 8 or isize & (isize - 1):
            raise ValueError(f"isize={isize!r} is not allowed: it must be a power of two >= 8")
        channels, size = ngf // 2, 4
        while size != isize:
            channels, size = channels * 2, size * 2
        main = nn.SequentialCell()
        main.append(nn.Conv2dTranspose(nz, channels, 4, 1, "valid", has_bias=False))
        main.append(nn.BatchNorm2d(channels))
        main.append(nn.ReLU())
        size = 4
        while size < isize // 2:
            main.append(nn.Conv2dTranspose(channels, channels // 2, 4, 2, "pad", 1, has_bias=False))
            main.append(nn.BatchNorm2d(channels // 2))
            main.append(nn.ReLU())
            channels, size = channels // 2, size * 2
        for _ in range(n_extra_layers):
            main.append(nn.Conv2d(channels, channels, 3, 1, "pad", 1, has_bias=False))
            main.append(nn.BatchNorm2d(channels))
            main.append(nn.ReLU())
        main.append(nn.Conv2dTranspose(channels, nc, 4, 2, "pad", 1, has_bias=False))
        main.append(nn.Tanh())
        self.main = main

    def construct(self, z):
        return self.main(z)
