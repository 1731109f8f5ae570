"""xdsl-ane: an xDSL compiler from ML graphs to Apple's Neural Engine."""

__version__ = "0.1.0"
