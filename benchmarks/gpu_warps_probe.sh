#!/usr/bin/env bash
# On the lent GPU machine (issue 14): does a lock-step step cost more as more warps share a
# compute unit? Validates benchmarks/warps/*.lg (every lane the same loop of allocating steps;
# read_loop's also reads a matrix column, the PolyBench matrix-vector loop)
# at one work group of 1 ... 8 warps and at groups of 8 warps on several units, in PROCESSES
# processes one after another (each draws its own allocation-pointer place), under PROFILE.
# Nothing is fitted; the reports go to $OUT/warps/warps_K.json.
#   bash benchmarks/gpu_warps_probe.sh PROFILE.json [PROCESSES] [SECONDS_EACH] [SIZES]
set -u
. benchmarks/gpu_setup.sh || exit 1
profile=$1; processes=${2:-2}; each=${3:-120}; sizes=${4:-32,64,96,128,192,256,1024}
W="$OUT/warps"; mkdir -p "$W"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$W/card.txt" 2>&1
for k in $(seq 1 "$processes"); do
  timeout "$each" python3 -m cli validate --device nvidia --cpu-device pocl --device-profile "$profile" \
    --parts programs --sizes "$sizes" --repeats 15 --format json -o "$W/warps_$k.json" \
    benchmarks/warps/*.lg 2> "$W/warps_$k.log" || echo "process $k: exit $?" >> "$W/failures.txt"
done
cat "$W/card.txt" "$W/failures.txt" 2>/dev/null
