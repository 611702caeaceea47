"""Data in: the dataset type and its declarations, the dataset checks (structure, Split V2.0
policy, fingerprints), backbones and the synthetic generator. File formats such as xlsa17 are
plugins (``zslbench_plugins.xlsa17``)."""
