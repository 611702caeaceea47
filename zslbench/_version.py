"""The installed distribution's version, in a module of its own: a record names the version that
made it, and importing it here does not import the package's lazy API (``zslbench.__getattr__``)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("zslbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
