"""Leaderboards rendered from result records.

The data path, module by module: ``collect`` (records -> one pandas row per run -> mean ± std per
configuration, median training time), ``reported`` (the curated numbers quoted from papers),
``tables`` (the table model and best-value marks), ``pages`` (what each page says, written once,
and the Markdown pages), ``render`` (Markdown tables, CSV), ``html`` (the static report),
``figures`` (PNG + SVG), ``build`` (all of it, in memory), ``manifest`` (which files the
leaderboard wrote), ``check`` (write, or ``--check``), and ``cli`` (the ``zslbench leaderboard``
command).
"""
