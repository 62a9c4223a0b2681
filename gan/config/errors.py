"""The error every config check raises; its own module so the schema and the plan rules share it one way."""


class ConfigError(ValueError):
    """A config value is outside what the product supports; the message names the key."""
