"""Small infrastructure the stages share: files written whole, workers, lazy imports, progress."""
