"""Cost graphs and what is done with them (layer 3 of 5): the cost semantics that builds them
(`graphs.semantics`: the explicit and the symbolic evaluator), device boxes, schedules, time and
space analysis, symbolic profiles, placement, rewrite scoring and the renderers.

Imports `profiler` and `models` (not `models.opencl`)."""
