"""Investigation tool (docs/validation/cachegap.md): a generated OpenCL file as CUDA, to read the
PTX nvcc makes of it for sm_90 (nvcc -arch=sm_90 -O3 -ptx out.cu). An approximation of NVIDIA's
OpenCL compiler (same NVVM back end), not the driver's own output."""
import re
import sys

if len(sys.argv) != 3:
    raise SystemExit(__doc__)
src = open(sys.argv[1]).read()
src = re.sub(r"#pragma OPENCL.*\n", "", src)
pre = r'''
#define __kernel extern "C" __global__
#define __global
#define __local __shared__
#define restrict __restrict__
#define get_global_id(d) ((long)(blockIdx.x*blockDim.x+threadIdx.x))
#define get_local_id(d) ((long)threadIdx.x)
#define get_local_size(d) ((long)blockDim.x)
#define as_long(x) __double_as_longlong(x)
#define as_double(x) __longlong_as_double(x)
#define atomic_add(p, v) atomicAdd((p), (v))
#define atomic_or(p, v) atomicOr((p), (v))
#define inline __device__ inline
#define barrier(x) __syncthreads()
'''
open(sys.argv[2], "w").write(pre + src.replace("inline long hp_alloc", "__device__ inline long hp_alloc").replace("#define inline __device__ inline\n",""))
