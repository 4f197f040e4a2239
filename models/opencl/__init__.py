"""The real-device side (layer 4 of 5), as loopy keeps its targets apart from the kernel IR:
`codegen` writes OpenCL C (pure), `runner` runs it through PyOpenCL (the only module that imports
pyopencl), `calibrate` fits a device profile from microbenchmarks, `validate` and
`validate_rewrites` compare predictions with measurements. Imported only by `cli`."""
