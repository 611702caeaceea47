"""Data in: dataset records, the xlsa17 loader and its cache, Split V2.0 checks."""
