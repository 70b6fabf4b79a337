"""Tests of the sources layer: every stream stored on disk."""
