#!/usr/bin/env bash
# Prepare the lent GPU machine (see ../shared/gpu/README.md): PyOpenCL and lark from the carried
# wheels in .whl/, and the NVIDIA OpenCL vendor file. Source it: `. benchmarks/gpu_setup.sh`.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /etc/OpenCL/vendors
echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
