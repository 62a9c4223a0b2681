"""gan.diagnostics.api.TwinStep: its two ms.jit twins of one function compile without MindSpore's "has been compiled
again" warning (they are two on purpose), and other MindSpore warnings still show."""
import logging

import numpy as np
import pytest
from mindspore import log as ms_log

from gan.diagnostics.api import Diagnostics
from scripts.examples.own_loop import build, discs, latents, make_steps


@pytest.fixture
def mindspore_warnings():
    """The messages MindSpore's logger emits at WARNING and above during the test (the suite runs it at GLOG_v=3)."""
    logger, messages = ms_log._get_logger(), []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())
    level = logger.level
    logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    yield messages
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_the_twins_compile_without_the_recompile_warning(tmp_path, mindspore_warnings):
    rng = np.random.default_rng(0)
    g, d = build(0)
    real, z = discs(rng, 4), latents(rng, 4)
    with Diagnostics(tmp_path / "run", g=g, d=d, g_input=z, d_input=real, every=1) as diag:
        d_step = diag.step(make_steps(g, d)[0])
        for check in (False, True):  # the plain twin compiles, then the probed one: "compiled again"
            d_step(real, z, check=check)
        diag.record(1)
        ms_log.warning("a warning of MindSpore's own")
    assert not [m for m in mindspore_warnings if "has been compiled again" in m], mindspore_warnings
    assert "a warning of MindSpore's own" in mindspore_warnings
