"""Shared helpers: grids (``grid``), task draws (``draws``), BM25 (``bm25``)."""
