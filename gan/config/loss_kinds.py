"""The losses of `train.loss`: one row each, importable without MindSpore.

A row says what the build needs to know of a loss before MindSpore is imported (the config's choices, the
build plan's rules). Its functions are the row of gan.training.losses.LOSSES of the same name; tests/gan/test_plan.py
keeps the two tables' names equal.
"""
from __future__ import annotations

from typing import NamedTuple


class LossKind(NamedTuple):
    """What the build needs to know of a `train.loss`."""

    gradient_penalty: bool = False  # WGAN-GP's penalty on every D step: D is differentiated twice, no BatchNorm


LOSS_KINDS = {"bce": LossKind(), "hinge": LossKind(), "lsgan": LossKind(), "wgan_gp": LossKind(gradient_penalty=True)}
