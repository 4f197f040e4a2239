#!/usr/bin/env bash
# On the lent GPU machine (PoCL as the CPU world): predicted against measured speedups of rewrites
# (tracker issues 6 and 14), one program and one size per step, each under a time-out, while the
# budget lasts. Without cases: the examples, all of 2^10 first, then 2^12, then 2^14 (the
# explicit interpreter evaluates every program). With cases PROGRAM=N[,N...]: those programs (of
# benchmarks/suite or examples) at those sizes, in that order. Everything goes to
# $OUT/results.tar (updated after each step; the device tool brings back only a few files);
# results/rewrites.json and results/rewrites.md are the merged report.
#   bash benchmarks/gpu_validate_rewrites.sh [PROFILE.json] [BUDGET_SECONDS] [PROGRAM=N[,N...] ...]
set -u
. benchmarks/gpu_setup.sh || exit 1
profile=${1:-profiles/nvidia-h200.json}
budget=${2:-470}
shift $(( $# < 2 ? $# : 2 ))
R=/tmp/results; rm -rf "$R"; mkdir -p "$R"
merge() {
  python3 benchmarks/merge_rewrite_validation.py "$R/rewrites.json" "$R/rewrites.md" \
    "$R"/rw_*.json > "$R/summary.txt" 2>&1
}
save() { tar -C /tmp -cf "$OUT/results.tar" results; }
step() {  # program name, size, the longest the step may take
  local name=$1 n=$2 left=$((budget - SECONDS - 20)) path=examples/$1.lg
  [ -f "benchmarks/suite/$name.lg" ] && path=benchmarks/suite/$name.lg
  if [ "$left" -lt 15 ]; then echo "$name n=$n: out of time" >> "$R/failures.txt"; return; fi
  timeout $(( left < $3 ? left : $3 )) python3 -m cli validate-rewrites --device nvidia \
    --cpu-device pocl --device-profile "$profile" --format json --sizes "$n" \
    -o "$R/rw_${name}_$n.json" "$path" 2> "$R/rw_${name}_$n.log" \
    || echo "$name n=$n: exit $?" >> "$R/failures.txt"
  merge; save
}
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } \
  > "$R/card.txt" 2>&1
python3 -m cli devices > "$R/devices.txt" 2>&1
cp "$profile" "$R/profile.json"
save
if [ $# -ge 1 ]; then
  for case in "$@"; do
    sizes=${case#*=}
    for n in ${sizes//,/ }; do step "${case%%=*}" "$n" 90; done
  done
else
  # cheapest programs first within each size, so that the last size covers as many as time allows
  for n in 1024 4096 16384; do
    for name in map_map zipmul_cpu zipmul strided nbody matvec normalize_inc dot; do
      step "$name" "$n" 200
    done
  done
fi
merge; save
cat "$R/card.txt" "$R/summary.txt" "$R/failures.txt" 2>/dev/null; ls "$R"
