"""Dead-channel diagnostics: probed activations, the training writer, recycling, and the API for your own loop."""
