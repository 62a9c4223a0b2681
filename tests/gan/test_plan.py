"""gan.config.plan: what G and D build for a config on a machine with or without oneDNN's kernels, the combinations it
refuses (naming the keys), its one-line-per-network description, and that it imports without MindSpore."""
import subprocess
import sys

import pytest

from gan.config.loss_kinds import LOSS_KINDS
from gan.config.plan import MAXOUT, resolve_plan
from gan.config.schema import ConfigError
from gan.models.build import build_plan
from tests.helpers import REPO, script_env

WGAN_GP = ["train.loss=wgan_gp", "model.d_norm=none"]
GPU = ["runtime.device_target=GPU"]


# overrides, oneDNN's kernels found, (G conv impl, G fusion), (D conv impl, D fusion), D differentiated twice, jit level
PLANS = [
    ([], True, ("onednn", "conv_act"), ("onednn", "conv_act"), False, "O0"),  # the default run on CPU
    ([], False, ("gemm", "bn_act"), ("gemm", "bn_act"), False, "O0"),  # conv_act needs oneDNN's kernels
    (["model.conv_impl=native"], True, ("native", "bn_act"), ("native", "bn_act"), False, "O0"),
    (["model.conv_impl=onednn"], True, ("onednn", "conv_act"), ("onednn", "conv_act"), False, "O0"),
    # penalties differentiate D twice: D runs gemm (auto) unfused, G keeps its kernels
    (WGAN_GP, True, ("onednn", "conv_act"), ("gemm", "none"), True, "O0"),
    (WGAN_GP, False, ("gemm", "bn_act"), ("gemm", "none"), True, "O0"),
    (WGAN_GP + ["model.conv_impl=native"], True, ("native", "bn_act"), ("native", "none"), True, "O0"),
    (["experiment=wgan_gp_mnist", "fusion=bn_act"], True, ("onednn", "bn_act"), ("gemm", "none"), True, "O0"),
    (["train.r1_gamma=1"], True, ("onednn", "none"), ("gemm", "none"), True, "O0"),  # R1 on a BatchNorm D
    (["train.r1_gamma=1", "model.d_norm=spectral"], True, ("onednn", "conv_act"), ("gemm", "none"), True, "O0"),
    (["train.r1_gamma=1", "fusion=none"], False, ("gemm", "none"), ("gemm", "none"), True, "O0"),
    # explicit fusion kinds are kept
    (["fusion=bn_act"], True, ("onednn", "bn_act"), ("onednn", "bn_act"), False, "O0"),
    (["fusion=none"], True, ("onednn", "none"), ("onednn", "none"), False, "O0"),
    (["fusion=conv_act", "model.conv_impl=onednn"], True, ("onednn", "conv_act"), ("onednn", "conv_act"), False,
     "O0"),
    # activation kinds: auto fuses only when both networks' kinds have a fused BatchNorm kernel
    (["act.d_kind=prelu", "act.g_kind=relu"], True, ("onednn", "conv_act"), ("onednn", "conv_act"), False, "O0"),
    (["act.d_kind=elu"], True, ("onednn", "none"), ("onednn", "none"), False, "O0"),
    (["act.g_kind=rrelu"], False, ("gemm", "none"), ("gemm", "none"), False, "O0"),
    (["act.d_kind=adaptive", "act.g_kind=adaptive"], True, ("onednn", "none"), ("onednn", "none"), False, "O0"),
    (["act.d_kind=relu", "train.r1_gamma=1", "model.d_norm=none"], True, ("onednn", "conv_act"), ("gemm", "none"),
     True, "O0"),
    # spectral norm: D's convs have a bias, fused with the activation
    (["experiment=sngan_mnist"], True, ("onednn", "conv_act"), ("onednn", "conv_act"), False, "O0"),
    (["experiment=sngan_mnist"], False, ("gemm", "bn_act"), ("gemm", "bn_act"), False, "O0"),
    # the 2D recipe, and maxout units in D (which nothing fuses)
    (["experiment=ring8"], True, ("onednn", "none"), ("onednn", "none"), False, "O0"),
    (["experiment=ring8", "fusion=auto"], True, ("onednn", "conv_act"), ("onednn", "conv_act"), False, "O0"),
    (["experiment=ring8", "model.d_maxout=5", "fusion=auto"], True, ("onednn", "none"), ("onednn", "none"), False,
     "O0"),
    # device targets: the fused and oneDNN kernels are CPU kernels; graph_kernel fuses on GPU and Ascend
    (GPU, True, ("native", "none"), ("native", "none"), False, "O0"),
    (["runtime.device_target=Ascend"], False, ("native", "none"), ("native", "none"), False, "O0"),
    (GPU + ["model.conv_impl=gemm"], True, ("gemm", "none"), ("gemm", "none"), False, "O0"),
    (GPU + ["fusion=graph_kernel"], True, ("native", "graph_kernel"), ("native", "graph_kernel"), False, "O1"),
    (["runtime.device_target=Ascend", "fusion=graph_kernel"] + WGAN_GP, True, ("native", "graph_kernel"),
     ("native", "graph_kernel"), True, "O1"),  # graph_kernel builds D's layers as none does
    (GPU + WGAN_GP, True, ("native", "none"), ("native", "none"), True, "O0"),
]


@pytest.mark.parametrize("overrides, onednn, g, d, twice, jit_level", PLANS)
def test_the_plan_of_each_network(config, overrides, onednn, g, d, twice, jit_level):
    conf = config(*overrides)
    plan = resolve_plan(conf, onednn)
    assert ((plan.g.conv_impl, plan.g.fusion), (plan.d.conv_impl, plan.d.fusion)) == (g, d)
    assert (plan.differentiated_twice, plan.jit_level) == (twice, jit_level)
    assert (plan.g.act, plan.d.act) == (conf.act.g_kind, MAXOUT if conf.model.d_maxout else conf.act.d_kind)
    assert (plan.g.norm, plan.d.norm) == (conf.model.g_norm, conf.model.d_norm)
    assert plan.d.probed == (not conf.model.d_maxout)


@pytest.mark.parametrize("overrides, message", [
    (["fusion=graph_kernel"], r"fusion=graph_kernel is not supported on device_target='CPU': MindSpore's "
                              r"graph-kernel fusion \(jit_level O1\) fuses BatchNorm only on GPU and Ascend"),
    (["fusion=conv_act", "model.conv_impl=gemm"], "fusion=conv_act fuses convolutions through oneDNN and needs "
                                                  r"model.conv_impl=onednn \(auto on CPU\), not 'gemm'"),
    (["fusion=conv_act"] + GPU, "fusion=conv_act fuses convolutions through oneDNN .* not 'native'"),
    (["model.conv_impl=onednn"] + GPU, "model.conv_impl=onednn runs on CPU only, not on runtime.device_target='GPU'"),
    (["model.conv_impl=onednn", "train.r1_gamma=1"], "model.conv_impl=onednn with a gradient penalty"),
    (["fusion=bn_act", "act.d_kind=elu"], r"fusion=bn_act fuses BatchNorm with \['leaky_relu', 'relu', 'prelu'\]"),
])
def test_what_cannot_be_built_fails_while_the_config_is_read(config, overrides, message):
    with pytest.raises(ConfigError, match=message):
        config(*overrides)


def test_conv_act_without_onednn_kernels_fails_where_the_networks_are_built(config):
    conf = config("fusion=conv_act")  # model.conv_impl=auto: onednn on a machine that has its kernels
    assert resolve_plan(conf, onednn=True).g.fusion == "conv_act"
    with pytest.raises(ConfigError, match="fusion=conv_act .* not 'gemm'"):
        resolve_plan(conf, onednn=False)


def test_build_plan_asks_the_machine(config):
    from ops import onednn

    assert build_plan(config()).g.conv_impl == ("onednn" if onednn.available() else "gemm")
    assert build_plan(config(*GPU)).g.conv_impl == "native"  # oneDNN is not asked off CPU


def test_describe_gives_one_line_per_network_with_the_reasons(config):
    assert resolve_plan(config(), True).describe() == (
        "G: model.conv_impl=auto -> onednn, fusion=auto -> conv_act, act leaky_relu, norm batch, layout NHWC\n"
        "D: model.conv_impl=auto -> onednn, fusion=auto -> conv_act, act leaky_relu, norm batch, layout NHWC")
    g, d = resolve_plan(config(*WGAN_GP), True).describe().split("\n")
    assert g == "G: model.conv_impl=auto -> onednn, fusion=auto -> conv_act, act leaky_relu, norm batch, layout NHWC"
    assert d == ("D: model.conv_impl=auto -> gemm, fusion=auto -> none, act leaky_relu, norm none, layout NCHW "
                 "(train.loss=wgan_gp differentiates D twice, and oneDNN's convolutions and the fused kernels have "
                 "first derivatives only)")
    g, d = resolve_plan(config("act.d_kind=elu"), False).describe().split("\n")
    assert g.endswith("fusion=auto -> none, act leaky_relu, norm batch, layout NCHW (fusion none: no fused "
                      "BatchNorm kernel for act.d_kind=elu)")
    assert d.startswith("D: model.conv_impl=auto -> gemm, fusion=auto -> none, act elu, norm batch")


BF16 = ["precision=bf16"]


# overrides, (G layout, D layout)
LAYOUTS = [
    ([], ("NHWC", "NHWC")),  # oneDNN's fastest kernels compute in nhwc, AMX or not
    (BF16, ("NHWC", "NHWC")),
    (["precision=fp16"], ("NCHW", "NCHW")),  # not measured in NHWC
    (BF16 + ["model.layout=nchw"], ("NCHW", "NCHW")),
    (["model.layout=nhwc", "precision=fp16"], ("NHWC", "NHWC")),  # asked for: any precision
    (BF16 + ["fusion=bn_act"], ("NHWC", "NHWC")),
    (BF16 + ["fusion=none"], ("NCHW", "NCHW")),  # MindSpore's BatchNorm2d is NCHW only
    (BF16 + ["act.d_kind=prelu"], ("NHWC", "NCHW")),  # each network on its own
    (["train.r1_gamma=1", "model.d_norm=spectral"], ("NHWC", "NCHW")),  # D runs gemm
    (["runtime.device_target=GPU"], ("NCHW", "NCHW")),
]


@pytest.mark.parametrize("overrides, layouts", LAYOUTS)
def test_the_activation_layout_of_each_network(config, overrides, layouts):
    plan = resolve_plan(config(*overrides), onednn=True)
    assert (plan.g.layout, plan.d.layout) == layouts


def test_without_onednn_the_networks_stay_nchw(config):
    plan = resolve_plan(config(), onednn=False)  # conv_impl auto -> gemm
    assert (plan.g.conv_impl, plan.g.layout, plan.d.layout) == ("gemm", "NCHW", "NCHW")


@pytest.mark.parametrize("overrides, message", [
    (["model.layout=nhwc", "fusion=none"], r"model.layout=nhwc cannot be built here: fusion none \(NHWC needs bn_act "
                                           r"or conv_act\)"),
    (["model.layout=nhwc", "model.conv_impl=gemm"], r"conv_impl gemm \(NHWC needs onednn\)"),
    (["model.layout=nhwc", "act.g_kind=elu"], r"act elu \(NHWC is built for leaky_relu\)"),
    (["model.layout=nhwc", "experiment=ring8"], r"model.name=mlp \(NHWC is built for the DCGANs\)"),
    (["model.layout=NHWC"], r"model.layout='NHWC' is not allowed"),
])
def test_an_nhwc_that_cannot_be_built_fails_while_the_config_is_read(config, overrides, message):
    with pytest.raises(ConfigError, match=message):
        config(*overrides)


def test_the_loss_rows_name_the_losses_of_the_loss_table():
    from gan.training.losses import LOSSES

    assert list(LOSS_KINDS) == list(LOSSES)
    assert [name for name, kind in LOSS_KINDS.items() if kind.gradient_penalty] == ["wgan_gp"]


def test_config_and_plan_import_without_mindspore():
    code = ("import sys, gan.config.schema, gan.config.plan, gan.config.activation_kinds; gan.config.schema.to_config("
            "gan.config.schema.compose_config(['train.loss=wgan_gp', 'model.d_norm=none'])); "
            "assert 'mindspore' not in sys.modules, 'mindspore was imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=script_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
