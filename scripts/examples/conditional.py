"""A class-conditional DCGAN written the way conditional ports write it: G(z, y) takes the latents with the one-hot
label appended, D(x, y) the image with one constant plane per class appended (the model-zoo DcganG / DcganD inside).
The models import only MindSpore; `inspect_factory` is the factory `scripts/inspect_model.py` takes
(docs/your_model.md, "Conditional and image-to-image GANs"):

    PYTHONPATH=. python scripts/inspect_model.py scripts.examples.conditional:inspect_factory --data images/ --out out/
"""
from __future__ import annotations

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

from scripts.examples.model_zoo import DcganD, DcganG


class ConditionalG(nn.Cell):
    """G(z, y): z (N, nz, 1, 1) and labels y (N,) int32 in [0, classes) -> (N, nc, isize, isize)."""

    def __init__(self, isize: int, nz: int, nc: int, ngf: int, classes: int) -> None:
        super().__init__()
        self.classes = classes
        self.net = DcganG(isize, nz + classes, nc, ngf)

    def construct(self, z, y):
        onehot = ops.one_hot(y, self.classes).astype(z.dtype).reshape(z.shape[0], self.classes, 1, 1)
        return self.net(ops.cat((z, onehot), 1))


class ConditionalD(nn.Cell):
    """D(x, y): images x (N, nc, isize, isize) and labels y (N,) -> one logit per image."""

    def __init__(self, isize: int, nc: int, ndf: int, classes: int) -> None:
        super().__init__()
        self.classes = classes
        self.net = DcganD(isize, nc + classes, ndf)

    def construct(self, x, y):
        n, _, h, w = x.shape
        planes = ops.one_hot(y, self.classes).astype(x.dtype).reshape(n, self.classes, 1, 1)
        return self.net(ops.cat((x, ops.broadcast_to(planes, (n, self.classes, h, w))), 1))


def inspect_factory(size: int = 16, nz: int = 16, classes: int = 4, seed: int = 0):
    """(G, D, Feed) for scripts/inspect_model.py: each batch draws z ~ N(0, 1) and labels uniformly (a folder of
    images holds no labels), G gets (z, y), D gets (image, y) for the real images and G's."""
    from scripts.inspect_model import Fed, Feed  # the inspection's contract; the models above need only MindSpore

    ms.set_seed(seed)
    g, d = ConditionalG(size, nz, 1, 8, classes), ConditionalD(size, 1, 8, classes)
    g.update_parameters_name("G."), d.update_parameters_name("D.")  # one graph needs unique parameter names

    def batch(images, rng):
        n = images.shape[0]
        z = Tensor(rng.standard_normal((n, nz, 1, 1)).astype(np.float32))
        y = Tensor(rng.integers(0, classes, n).astype(np.int32))
        return Fed(g=(z, y), real=images, d=lambda image: (image, y))

    return g, d, Feed(image_size=size, channels=1, batch=batch)
