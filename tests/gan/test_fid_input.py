"""gan.metrics.resize: StyleGAN's uint8 quantisation, the nv_bilinear resize (against torch's affine_grid + grid_sample
through the committed fixture tests/data/inception_reference.npz, which scripts/bench/check_inception.py writes with
torch), clean-fid's PIL resize, the input range."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gan.metrics.resize import (
    INPUT_RANGE,
    check_convention,
    inception_input,
    nv_bilinear_matrix,
    quantize,
    resize_clean,
    resize_nv_bilinear,
)

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "inception_reference.npz"


def test_quantize_is_stylegans_round_half_up_with_clipping():
    x = np.array([-1.5, -1.0, -0.99, 0.0, 1 / 255, 0.5, 1.0, 2.0, np.nan], np.float32).reshape(1, 1, 1, -1)
    expected = np.floor(np.clip(x.astype(np.float32) * np.float32(127.5) + np.float32(128), 0, 255))
    got = quantize(x)
    assert got.dtype == np.uint8 and got.shape == (1, 1, 9, 1)
    assert got.ravel().tolist() == [0, 0, 1, 128, 128, 191, 255, 255, 0]
    np.testing.assert_array_equal(got.ravel()[:-1], expected.ravel()[:-1])
    # a value exactly half-way, (x + 1) * 127.5 = k + 0.5, rounds up (torch's uint8 cast of x * 127.5 + 128)
    half = np.float32(2 * 10.5 / 255 - 1)
    assert quantize(np.full((1, 1, 1, 1), half))[0, 0, 0, 0] == int(np.floor(half * np.float32(127.5) + 128))
    with pytest.raises(ValueError, match="N, 1 or 3, H, W"):
        quantize(np.zeros((2, 4, 4), np.float32))


def test_nv_bilinear_samples_i_times_w_over_new_w_with_border():
    m = nv_bilinear_matrix(4, 10)
    assert m.shape == (10, 4)
    np.testing.assert_allclose(m.sum(axis=1), 1.0)
    x = np.arange(10) * 4 / 10  # the sample positions 0, 0.4, ..., 3.6
    np.testing.assert_allclose(m @ np.arange(4.0), np.minimum(x, 3))  # linear ramp: positions clamped at the border
    assert (m >= 0).all() and np.count_nonzero(m, axis=1).max() <= 2
    np.testing.assert_array_equal(nv_bilinear_matrix(7, 7), np.eye(7))  # same size: identity


def test_resize_of_a_constant_and_of_a_ramp():
    const = np.full((2, 5, 6, 3), 77, np.uint8)
    np.testing.assert_allclose(resize_nv_bilinear(const, 299), 77.0, atol=1e-4)
    ramp = np.tile(np.arange(32, dtype=np.uint8)[None, :, None], (32, 1, 1))[None]
    out = resize_nv_bilinear(ramp, 299)[0, 0, :, 0]
    np.testing.assert_allclose(out, np.minimum(np.arange(299) * 32 / 299, 31), atol=1e-4)


def test_resize_matches_torch_grid_sample_fixture():
    fixture = np.load(FIXTURE)
    stride = int(fixture["stride"])
    ours = resize_nv_bilinear(fixture["gray"])[:, ::stride, ::stride]
    torch_resized = fixture["resized_gray"]
    assert ours.shape == torch_resized.shape
    # torch computes the grid in float32: its sample positions are off by ~1e-6 pixel, i.e. < 1e-3 of 255
    np.testing.assert_allclose(ours, torch_resized, rtol=0, atol=2e-3)


def test_clean_resize_is_pil_bicubic_per_float_channel_clipped():
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (2, 20, 24, 3), dtype=np.uint8)
    out = resize_clean(images, 50)
    assert out.shape == (2, 50, 50, 3) and out.dtype == np.float32
    assert out.min() >= 0 and out.max() <= 255
    channel = Image.fromarray(images[1, :, :, 2].astype(np.float32), mode="F").resize((50, 50), Image.BICUBIC)
    np.testing.assert_array_equal(out[1, :, :, 2], np.clip(np.asarray(channel), 0, 255))


@pytest.mark.parametrize("convention", ["stylegan", "clean"])
def test_inception_input_range_gray_repeat_and_no_resize_at_299(convention):
    gray = np.random.default_rng(1).integers(0, 256, (3, 28, 28, 1), dtype=np.uint8)
    x = inception_input(gray, convention)
    assert x.shape == (3, 299, 299, 3) and x.dtype == np.float32 and x.flags.c_contiguous
    assert INPUT_RANGE[0] <= x.min() and x.max() <= INPUT_RANGE[1]
    np.testing.assert_array_equal(x[..., 0], x[..., 2])
    rgb = inception_input(np.repeat(gray, 3, axis=3), convention)
    np.testing.assert_array_equal(rgb, x)  # a gray image and its RGB copy are the same input
    full = np.random.default_rng(2).integers(0, 256, (1, 299, 299, 3), dtype=np.uint8)
    np.testing.assert_array_equal(inception_input(full, convention), full / np.float32(128) - np.float32(1))
    extremes = np.zeros((1, 299, 299, 1), np.uint8)
    extremes[0, 0, 0] = 255
    assert (inception_input(extremes, convention).min(), inception_input(extremes, convention).max()) == INPUT_RANGE


def test_bad_inputs_and_conventions_are_named():
    with pytest.raises(ValueError, match="'nvidia'.*stylegan"):
        check_convention("nvidia")
    with pytest.raises(ValueError, match="uint8"):
        inception_input(np.zeros((1, 8, 8, 3), np.float32))
    with pytest.raises(ValueError, match="N >= 1"):
        inception_input(np.zeros((0, 8, 8, 3), np.uint8))
    with pytest.raises(ValueError, match="1 or 3"):
        inception_input(np.zeros((1, 8, 8, 4), np.uint8))
