"""Diagnostics: memory accounting and estimation, and other measurements of a training run."""
