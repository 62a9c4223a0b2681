"""The diagnostics API for your own network and loop, under its earlier name; it lives in gan.diagnostics.api."""
from gan.diagnostics.api import Diagnostics, TwinStep, dcgan_init, network_params

__all__ = ["Diagnostics", "TwinStep", "dcgan_init", "network_params"]
