"""A class-conditional DCGAN pair as conditional ports write it: G(z, y) is scripts/examples/unet.py's
ConditionalGenerator (the label embedded and concatenated with z), D(x, y) takes the image with one constant plane
per class appended (the model-zoo DcganD inside). `inspect_factory` is the factory `scripts/inspect_model.py` takes
(docs/your_model.md, "Conditional and image-to-image GANs"):

    PYTHONPATH=. python scripts/inspect_model.py scripts.examples.conditional:inspect_factory --data images/ --out out/
"""
from __future__ import annotations

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

from scripts.examples.model_zoo import DcganD
from scripts.examples.unet import SIZE, ConditionalGenerator
from scripts.inspect_model import Fed, Feed


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


def inspect_factory(nz: int = 8, classes: int = 10, seed: int = 0):
    """(G, D, Feed): each batch draws z ~ N(0, 1) and labels uniformly (a folder of images holds no labels), G gets
    (z, y), D gets (image, y) for the real images and G's; the folder is read as SIZE x SIZE grey images."""
    ms.set_seed(seed)
    g, d = ConditionalGenerator(nz, classes, ngf=4, channels=1), ConditionalD(SIZE, 1, 8, classes)
    g.update_parameters_name("G."), d.update_parameters_name("D.")  # one graph needs unique parameter names

    def batch(images, rng):
        n = images.shape[0]
        z = Tensor(rng.standard_normal((n, nz, 1, 1)).astype(np.float32))
        y = Tensor(rng.integers(0, classes, n).astype(np.int32))
        return Fed(g=(z, y), real=images, d=lambda image: (image, y))

    return g, d, Feed(image_size=SIZE, channels=1, batch=batch)
