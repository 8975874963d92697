"""Caching: the data-only format every cache writes, and whole scans answered from it."""
