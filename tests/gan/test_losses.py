"""The loss table against closed forms, the gradient penalties against finite differences (graph mode: the
custom LeakyReLU is differentiated twice), and the config checks of loss x normaliser combinations."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

from gan.config.schema import ConfigError, compose_config, to_config
from gan.training.losses import LOSSES, gradient_penalty, input_gradient, r1_due, r1_penalty
from ops import LeakyReLU

REAL = np.array([-3.0, -0.5, 0.0, 0.7, 2.5, 9.0], np.float32)
FAKE = np.array([4.0, 0.3, -1.2, 0.0, -7.5, 1.1], np.float32)


def softplus(x):
    return np.logaddexp(0.0, x)


# Closed forms in float64, written from the papers' definitions (not from gan/training/losses.py).
CLOSED_FORMS = {
    "bce": (lambda r, f: np.mean(-np.log(1 / (1 + np.exp(-r)))) + np.mean(-np.log(1 - 1 / (1 + np.exp(-f)))),
            lambda f: np.mean(-np.log(1 / (1 + np.exp(-f))))),
    "hinge": (lambda r, f: np.mean(np.maximum(0, 1 - r)) + np.mean(np.maximum(0, 1 + f)), lambda f: -np.mean(f)),
    "lsgan": (lambda r, f: 0.5 * np.mean((r - 1) ** 2) + 0.5 * np.mean(f ** 2), lambda f: 0.5 * np.mean((f - 1) ** 2)),
    "wgan_gp": (lambda r, f: np.mean(f) - np.mean(r), lambda f: -np.mean(f)),
}


def test_the_table_has_a_closed_form_test_for_every_loss():
    assert set(LOSSES) == set(CLOSED_FORMS)


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_each_loss_matches_its_closed_form(name):
    want_d, want_g = CLOSED_FORMS[name]
    r, f = REAL.astype(np.float64), FAKE.astype(np.float64)
    assert float(LOSSES[name].d(Tensor(REAL), Tensor(FAKE)).asnumpy()) == pytest.approx(want_d(r, f), rel=1e-6)
    assert float(LOSSES[name].g(Tensor(FAKE)).asnumpy()) == pytest.approx(want_g(f), rel=1e-6)


def test_losses_of_float16_logits_are_float32():
    for loss in LOSSES.values():
        assert loss.d(Tensor(REAL).astype(ms.float16), Tensor(FAKE).astype(ms.float16)).dtype == ms.float32
        assert loss.g(Tensor(FAKE).astype(ms.float16)).dtype == ms.float32


def test_bce_stays_finite_for_large_logits():
    big = Tensor(np.array([-200.0, 200.0], np.float32))
    assert np.isfinite(LOSSES["bce"].d(big, big).asnumpy()) and np.isfinite(LOSSES["bce"].g(big).asnumpy())


class TinyD(nn.Cell):
    """x (N, 3) -> (N,): dense, the project's LeakyReLU, dense."""

    def __init__(self, rng):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Dense(3, 5), LeakyReLU(0.2), nn.Dense(5, 1)
        for p in (self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias):
            p.set_data(Tensor(rng.standard_normal(p.shape).astype(np.float32)))

    def construct(self, x):
        return self.fc2(self.act(self.fc1(x))).reshape(-1)


def numpy_d(params, x):
    w1, b1, w2, b2 = params
    h = x @ w1.T + b1
    return (np.where(h > 0, h, 0.2 * h) @ w2.T + b2).reshape(-1)


def numeric_input_grad(params, x, h=1e-6):
    """d sum(D(x)) / dx by central differences, float64."""
    grad = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        grad[idx] = (numpy_d(params, up).sum() - numpy_d(params, down).sum()) / (2 * h)
    return grad


def numeric_gp(params, real, fake, eps):
    x_hat = eps * real + (1 - eps) * fake
    norms = np.sqrt((numeric_input_grad(params, x_hat) ** 2).sum(axis=1))
    return np.mean((norms - 1) ** 2)


def numeric_r1(params, real):
    return np.mean((numeric_input_grad(params, real) ** 2).sum(axis=1))


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(3)
    net = TinyD(rng)
    real, fake = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    eps = rng.random((4, 1)).astype(np.float32)
    params = [p.asnumpy().astype(np.float64) for p in net.trainable_params()]
    return net, params, real, fake, eps


@pytest.mark.parametrize("name", ["gp", "r1"])
def test_penalties_and_their_parameter_gradients_match_finite_differences(case, name):
    """The value and, in graph mode, the gradient w.r.t. D's parameters (a second derivative through the op)."""
    net, params, real, fake, eps = case
    grad_x = input_gradient(net)
    if name == "gp":
        def penalty(x_real, x_fake, weights):
            return gradient_penalty(grad_x, x_real, x_fake, weights)
        def numeric(ps):
            return numeric_gp(ps, real.astype(np.float64), fake.astype(np.float64), eps.astype(np.float64))
    else:
        def penalty(x_real, x_fake, weights):
            return r1_penalty(grad_x, x_real)
        def numeric(ps):
            return numeric_r1(ps, real.astype(np.float64))
    step = ms.jit(ms.value_and_grad(penalty, None, net.trainable_params()))
    value, grads = step(Tensor(real), Tensor(fake), Tensor(eps))
    assert float(value.asnumpy()) == pytest.approx(numeric(params), rel=1e-4)
    h = 1e-4
    for k, grad in enumerate(grads):
        want = np.zeros_like(params[k])
        for idx in np.ndindex(*params[k].shape):
            up = [p.copy() for p in params]
            down = [p.copy() for p in params]
            up[k][idx] += h
            down[k][idx] -= h
            want[idx] = (numeric(up) - numeric(down)) / (2 * h)
        np.testing.assert_allclose(grad.asnumpy(), want, rtol=2e-3, atol=2e-4)
    assert any(np.abs(g.asnumpy()).max() > 1e-3 for g in grads)  # the check compares real gradients


def test_lazy_r1_schedule():
    assert [s for s in range(40) if r1_due(s, 1.0, 16)] == [0, 16, 32]
    assert not any(r1_due(s, 0.0, 16) for s in range(40))


@pytest.mark.parametrize("overrides, message", [
    (["train.loss=wgan_gp"], "train.loss=wgan_gp with model.d_norm=batch"),
    (["train.loss=wgan_gp", "model.d_norm=batch", "fusion=bn_act"], "use model.d_norm=none or model.d_norm=spectral"),
    (["train.r1_gamma=1", "fusion=bn_act"], "fusion=bn_act and model.d_norm=batch"),
    (["train.r1_gamma=1", "fusion=conv_act"], "fusion=conv_act and model.d_norm=batch"),
    (["train.loss=wgan_gp", "model.d_norm=none", "model.conv_impl=onednn"], "model.conv_impl=onednn with a gradient"),
    (["train.r1_gamma=1", "model.conv_impl=onednn"], "oneDNN convolution kernels have first derivatives only"),
    *[(["train.loss=wgan_gp", "model.d_norm=none", f"act.d_kind={kind}"],
       f"act.d_kind='{kind}' with a gradient penalty .* only the kinds ['leaky_relu', 'relu'] have a second "
       "derivative")
      for kind in ("prelu", "rrelu", "elu", "adaptive")],
    (["train.r1_gamma=1", "act.d_kind=elu"], "act.d_kind='elu' with a gradient penalty"),
    (["train.loss=softmax"], "train.loss='softmax' is not allowed"),
    (["train.gp_weight=0"], "train.gp_weight=0"),
    (["train.r1_gamma=-1"], "train.r1_gamma=-1"),
    (["train.r1_every=0"], "train.r1_every=0"),
    (["train.d_steps=0"], "train.d_steps=0"),
    (["train.accumulate=3"], "train.accumulate=3 must divide train.batch_size=64"),
    (["train.clip_grad_norm=0"], "train.clip_grad_norm=0"),
    (["model.d_norm=layer"], "model.d_norm='layer' is not allowed"),
    (["model.g_norm=spectral"], "model.g_norm='spectral' is not allowed"),
])
def test_disallowed_combinations_fail_at_start_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        to_config(compose_config(overrides))
