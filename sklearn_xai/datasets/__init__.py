"""Real tabular datasets: Adult and German credit bundled (gzipped, CC BY 4.0), plus a reader
for the project's shared benchmark files (COMPAS, Titanic, Australian, Taiwan credit)."""

from ._loaders import load_adult, load_german_credit, load_shared_dataset

__all__ = ["load_adult", "load_german_credit", "load_shared_dataset"]
