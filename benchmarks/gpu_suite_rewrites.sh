#!/usr/bin/env bash
# On the lent GPU machine (PoCL as the CPU world): `validate-rewrites` on suite programs (issue 14:
# "rewrite validation on the suite and the examples"), one program and size per step, each under a
# time-out, while the budget lasts; everything in $OUT/results.tar after each step, and the merged
# report in results/rewrites.json and results/rewrites.md.
#   bash benchmarks/gpu_suite_rewrites.sh PROFILE.json BUDGET_SECONDS PROGRAM=N[,N...] ...
set -u
. benchmarks/gpu_setup.sh || exit 1
profile=$1; budget=$2; shift 2
R=/tmp/results; rm -rf "$R"; mkdir -p "$R"
save() { tar -C /tmp -cf "$OUT/results.tar" results; }
merge() {
  python3 benchmarks/merge_rewrite_validation.py "$R/rewrites.json" "$R/rewrites.md" \
    "$R"/rw_*.json > "$R/summary.txt" 2>&1
}
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } \
  > "$R/card.txt" 2>&1
cp "$profile" "$R/profile.json"
for case in "$@"; do
  name=${case%%=*}; sizes=${case#*=}
  for n in ${sizes//,/ }; do
    left=$((budget - SECONDS - 20))
    if [ "$left" -lt 15 ]; then echo "$name n=$n: out of time" >> "$R/failures.txt"; continue; fi
    limit=$(( left < 90 ? left : 90 ))
    timeout "$limit" python3 -m cli validate-rewrites --device nvidia --cpu-device pocl \
      --device-profile "$profile" --format json --sizes "$n" -o "$R/rw_${name}_$n.json" \
      "benchmarks/suite/$name.lg" 2> "$R/rw_${name}_$n.log" \
      || echo "$name n=$n: exit $?" >> "$R/failures.txt"
    merge; save
  done
done
merge; save
cat "$R/card.txt" "$R/summary.txt" "$R/failures.txt" 2>/dev/null
