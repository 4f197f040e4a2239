"""The λG language (layer 1 of 5): syntax, parser, the type, region and world checker, the region
memory model, the printer, transforms and the syntax side of rewrites.

Layers, in the order data flows, each importing only those before it (pyproject.toml's
import-linter contracts enforce it): `profiler` ← `models` ← `graphs` ← `models.opencl` ← `cli`.
"""
