"""Built-in zslbench plugins, installed as the package ``zslbench_plugins``."""
