"""lrelu-gan application: DCGAN models, data, training loop, diagnostics."""
