"""``python -m zslbench ...``: the same command line as the ``zslbench`` script."""

from zslbench.cli import main

if __name__ == "__main__":
    main()
