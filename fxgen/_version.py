"""The one version number of fxgen (the package metadata reads it from here)."""

__version__ = "0.3.0"
