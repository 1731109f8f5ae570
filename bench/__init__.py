"""`make bench`: what xdsl-ane produces and how fast, beside coremltools.

Run as modules from the repository root (`python -m bench.run`, `python -m
bench.kmeans`, ...). `common` holds what the measurements share, `report`
turns bench/results.json into the docs' figures, each other module measures
one section (in child processes), and `run` runs them all.
"""
