"""gan.diagnostics.api.Diagnostics refuses networks it cannot probe before it creates or locks the run directory."""
import numpy as np
import pytest
from mindspore import Tensor, nn

from gan.diagnostics.api import Diagnostics
from scripts.examples.own_loop import build


def test_a_network_without_activation_layers_is_refused_before_the_run_directory_exists(tmp_path):
    g, _ = build(0)
    bare = nn.SequentialCell([nn.Conv2d(1, 1, 16, pad_mode="valid"), nn.Flatten()])
    x = Tensor(np.zeros((2, 1, 16, 16), np.float32))
    with pytest.raises(ValueError, match=r"D \(SequentialCell\) has no activation layer the probes can wrap"):
        Diagnostics(tmp_path / "run", g=g, d=bare, g_input=Tensor(np.zeros((2, 16, 1, 1), np.float32)), d_input=x)
    assert not (tmp_path / "run").exists()  # no run.lock left behind


def test_one_network_as_g_and_d_is_refused(tmp_path):
    g, _ = build(0)
    z = Tensor(np.zeros((2, 16, 1, 1), np.float32))
    with pytest.raises(ValueError, match="one network .DcganG. as both g and d"):
        Diagnostics(tmp_path / "run", g=g, d=g, g_input=z, d_input=z)
    assert not (tmp_path / "run").exists()
