"""Leaderboards rendered from result records.

The data path, module by module: ``collect`` (records -> one pandas row per run -> mean ± std per
configuration), ``reported`` (the curated numbers quoted from papers), ``tables`` (the table model
and best-value marks), ``render`` / ``pages`` (Markdown, CSV), ``html`` (the static report),
``figures`` (PNG + SVG), ``build`` (all of it, in memory), ``check`` (write, or ``--check``), and
``cli`` (the ``zslbench leaderboard`` command).
"""
