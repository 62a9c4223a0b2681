"""gan.core.streams: each stream draws from the key runs already started used, (seed, step, purpose number, ...)."""
import numpy as np

from gan.core.streams import Purpose, fixed_latent_batches, fixed_latents, latents, mixing_weights, stream


def test_streams_draw_from_their_integer_keys():
    np.testing.assert_array_equal(latents(3, 7, Purpose.Z, 2, 4),
                                  np.random.default_rng([3, 7, 1]).standard_normal((2, 4, 1, 1), dtype=np.float32))
    np.testing.assert_array_equal(latents(3, 7, Purpose.Z, 2, 4, d_step=1),
                                  np.random.default_rng([3, 7, 1, 1]).standard_normal((2, 4, 1, 1), dtype=np.float32))
    np.testing.assert_array_equal(mixing_weights(3, 7, 5),
                                  np.random.default_rng([3, 7, 6, 0]).random((5, 1, 1, 1), dtype=np.float32))
    np.testing.assert_array_equal(stream(3, 0, Purpose.POINTS, 9).random(3),
                                  np.random.default_rng([3, 0, 0x2D0, 9]).random(3))


def test_fixed_latents_in_batches_are_the_same_values():
    whole = fixed_latents(5, 10, 3)
    np.testing.assert_array_equal(whole, latents(5, 0, Purpose.FIXED_Z, 10, 3))
    np.testing.assert_array_equal(np.concatenate(list(fixed_latent_batches(5, 10, 3, 4))), whole)
