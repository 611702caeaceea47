"""zslbench: a harness for benchmarking Generalized Zero-Shot Learning.

The data path, folder by folder: ``zslbench.data`` (files in, Split V2.0 enforced) ->
``zslbench.protocol`` (leak-free validation, fit, calibrate, refit) -> components from plugins
(preprocessor -> model -> calibrator) -> ``zslbench.metrics`` -> ``zslbench.records`` ->
``zslbench.leaderboard``.
"""

from zslbench._version import __version__
from zslbench.hookspecs import hookimpl  # (the marker plugins import)

__all__ = ["__version__", "hookimpl", "load_results", "run"]


def __getattr__(name: str):
    """The Python API, imported on first use (``import zslbench`` stays light for plugins)."""
    if name == "load_results":
        from zslbench.records.results import load_results

        return load_results
    if name == "run":
        from zslbench.api import run

        return run
    raise AttributeError(f"module 'zslbench' has no attribute {name!r}")
