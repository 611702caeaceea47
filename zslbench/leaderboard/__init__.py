"""Leaderboards rendered from result records.

The data path, module by module: :mod:`zslbench.records.results` (records -> one row per run, checked),
``collect`` (-> one row per configuration and dataset: mean, std, 95% interval, values by seed,
times per device model, data versions), ``reported`` (the curated numbers quoted from papers),
``tables`` (the table model and its statistical marks, :mod:`zslbench.stats`), ``ranks``
(average ranks, Friedman, Nemenyi), ``figures`` (figure specs and drawing), ``model`` (the page
model: everything a board shows, as data), ``render`` (the page model through jinja2 templates in
``templates/``), ``csvs`` (CSV files), ``markup`` (names as safe text, links, slugs and shell
words), ``build`` (all files, in memory), ``manifest`` (which files the leaderboard wrote),
``check`` (write safely, or ``--check``) and ``cli`` (``zslbench leaderboard`` and ``zslbench
leaderboard prune``; ``zslbench compare`` is :mod:`zslbench.compare`).
"""
