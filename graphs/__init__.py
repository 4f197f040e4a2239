"""Cost graphs, device boxes, schedules, time and space analysis, and renderers."""
