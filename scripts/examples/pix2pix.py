"""The factory `scripts/inspect_model.py` takes for an image-to-image pair: the pix2pix-shaped U-Net generator and
the two-input PatchGAN discriminator of scripts/examples/unet.py (nested skip blocks, encoder nn.LeakyReLU(0.2),
decoder nn.ReLU, BatchNorm, Dropout; D scores (condition, image) patches), fed from a folder of images
(docs/your_model.md, "Conditional and image-to-image GANs"):

    PYTHONPATH=. python scripts/inspect_model.py scripts.examples.pix2pix:inspect_factory --data images/ --out out/
"""
from __future__ import annotations

from mindspore import ops

from scripts.examples.unet import IN_CH, SIZE, build_image_to_image
from scripts.inspect_model import Fed, Feed


def grey(images):
    """The condition of this example: each image's grey level on the U-Net's IN_CH channels (colourisation)."""
    return ops.tile(images.mean(axis=1, keep_dims=True), (1, IN_CH, 1, 1))


def inspect_factory():
    """(G, D, Feed): G colours the grey level of each data image, D scores (grey, image) pairs; the folder is read
    as SIZE x SIZE RGB."""
    g, d = build_image_to_image(ngf=4, seed=0)  # G(condition), D(condition, image)
    g.update_parameters_name("G."), d.update_parameters_name("D.")  # one graph needs unique parameter names

    def batch(images, rng):
        condition = grey(images)
        return Fed(g=(condition,), real=images, d=lambda image: (condition, image))

    return g, d, Feed(image_size=SIZE, channels=3, batch=batch)
