"""Machine models and cost providers (layer 2 of 5): the numbers on the cost graph's edges.

PRAM (§5), the paper's GPU rules (Fig. 9), Nakano's DMM/UMM, the primitive cost providers for
allocation and transfer (§6.6) and the device profiles they read. Imports only `profiler`.

The subpackage `models.opencl` is a layer of its own above `graphs` (layer 4): the real-device side
(OpenCL C generation, running, calibration, validation). Nothing here imports it.
"""
