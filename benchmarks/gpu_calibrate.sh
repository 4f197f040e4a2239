#!/usr/bin/env bash
# On the lent GPU machine: list devices, calibrate the NVIDIA GPU (PoCL as the CPU world) and
# write the profiles and the log under $OUT. Usage: bash benchmarks/gpu_calibrate.sh
set -u
. benchmarks/gpu_setup.sh || exit 1
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } \
  > "$OUT/card.txt" 2>&1
python3 -m cli devices > "$OUT/devices.txt" 2>&1
python3 -m cli calibrate --device nvidia --cpu-device pocl -o "$OUT/nvidia.json" \
  > "$OUT/calibrate.txt" 2>&1
echo "calibrate exit $?" >> "$OUT/calibrate.txt"
cat "$OUT/card.txt" "$OUT/devices.txt" "$OUT/calibrate.txt"
