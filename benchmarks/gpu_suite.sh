#!/usr/bin/env bash
# On the lent GPU machine (PoCL as the CPU world), issue 13: calibrate the NVIDIA GPU (unless a
# profile is given), validate every program of benchmarks/suite one at a time, then the rewrites of
# a few of them; every step under `timeout` within a budget, so that the whole run fits one device
# call (at most 10 minutes) and a time-out keeps what was measured. After each step everything is
# saved to $OUT/results.tar and the suite report is redrawn (results/report/suite-<card>-<date>.*,
# benchmarks/suite_report.py); copy that to docs/validation/.
#   bash benchmarks/gpu_suite.sh [PROFILE.json|-] [BUDGET_SECONDS] [PROGRAM ...]
# PROFILE.json: skip calibration (its PROFILE.paper.json / .dmm.json / .cache.json, if there, are
# the other modes' fits). PROGRAM: suite program names (default: all), or an example's
# (examples/NAME.lg, validated at validate's own sizes in one process, as `gpu_validate.sh` does,
# so that the examples are measured with this script's repeats, draw and report). Two calls split the suite:
# the first calibrates and validates some programs, the second takes results/nvidia.json and the
# rest. REWRITES (environment): the programs whose rewrites are validated (default: those of
# jacobi1d, gesummv and atax that are among PROGRAM). TOGETHER (environment): programs whose sizes run in one process (default: the cheap
# CPU-winning ones). REWRITE_PROFILE (environment): the profile the rewrites are predicted with (default:
# PROFILE). PROBE (environment, any value): right after the calibration, run
# benchmarks/gpu_alloc_program_probe.py under the profile (results/alloc_probe.*).
# REPEATS (environment): runs of each measured part, whose median is kept (default:
# --quick's 3). Sizes: benchmarks/suite/sizes.json ({"program": [n, ...]}) if it exists, else validate's.
set -u
. benchmarks/gpu_setup.sh || exit 1
profile_arg=${1:--}
budget=${2:-540}
shift $(( $# < 2 ? $# : 2 ))
R=/tmp/results; rm -rf "$R"; mkdir -p "$R/report"
repeats=(${REPEATS:+--repeats "$REPEATS"})
save() { tar -C /tmp -cf "$OUT/results.tar" results; }
report() {
  timeout 60 python3 benchmarks/suite_report.py --driver "$driver" --out-dir "$R/report" \
    "$R"/val_*.json --rewrites "$R"/rw_*.json > "$R/report.txt" 2>&1
  save
}
# a step's time limit: what is left of the budget less a reserve for the report, at most $1
limit() {
  local left=$((budget - SECONDS - 40))
  echo $(( left < $1 ? left : $1 ))
}
sizes_of() {  # the comma-separated sizes for program $1 from sizes.json, or nothing
  python3 - "$1" <<'EOF'
import json, sys
from pathlib import Path
path = Path("benchmarks/suite/sizes.json")
sizes = json.loads(path.read_text()).get(sys.argv[1], []) if path.exists() else []
print(",".join(str(n) for n in sizes))
EOF
}
path_of() {  # a suite program's file, else an example's
  if [ -f "benchmarks/suite/$1.lg" ]; then echo "benchmarks/suite/$1.lg"; else echo "examples/$1.lg"; fi
}
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } \
  > "$R/card.txt" 2>&1
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
python3 -m cli devices > "$R/devices.txt" 2>&1
if [ "$profile_arg" != "-" ]; then
  cp "$profile_arg" "$R/nvidia.json"
  for m in paper dmm cache; do
    [ -f "${profile_arg%.json}.$m.json" ] && cp "${profile_arg%.json}.$m.json" "$R/nvidia.$m.json"
  done
else
  timeout "$(limit 300)" python3 -m cli calibrate --device nvidia --cpu-device pocl \
    -o "$R/nvidia.json" > "$R/calibrate.txt" 2>&1 \
    || { echo "calibrate: exit $?" >> "$R/failures.txt"; cat "$R/calibrate.txt"; save; exit 1; }
fi
save
profile="$R/nvidia.json"
if [ -n "${PROBE-}" ]; then  # one process's allocations beside the profile's (about 10 s)
  timeout "$(limit 60)" python3 benchmarks/gpu_alloc_program_probe.py --profile "$profile" \
    --out "$R/alloc_probe.json" > "$R/alloc_probe.txt" 2>&1 \
    || echo "alloc probe: exit $?" >> "$R/failures.txt"
  save
fi
common=(--device nvidia --cpu-device pocl --device-profile "$profile" --format json)
for m in paper dmm cache; do  # every other mode's own calibration, predicted beside
  grep -q "\"mode\": \"$m\"" "$profile" && continue
  [ -f "$R/nvidia.$m.json" ] && common+=(--compare-profile "$R/nvidia.$m.json")
done
if [ $# -ge 1 ]; then programs=("$@"); else
  programs=(); for p in benchmarks/suite/*.lg; do programs+=("$(basename "$p" .lg)"); done
fi
# programs whose sizes are cheap run them all in one process (saves the imports and pricing set-up
# per size); the others one call per size, so that a time-out loses that size only
TOGETHER=" ${TOGETHER-sample lookup trace vecsum serial_loop recurrence} "
for name in "${programs[@]}"; do
  sizes=$(sizes_of "$name") path=$(path_of "$name")
  if [ ! -f "benchmarks/suite/$name.lg" ] && [ -z "$sizes" ]; then  # an example, its own sizes
    t=$(limit 100)
    if [ "$t" -lt 10 ]; then echo "$name: out of time" >> "$R/failures.txt"; continue; fi
    timeout "$t" python3 -m cli validate "${common[@]}" --quick "${repeats[@]}" --parts programs \
      "$path" -o "$R/val_${name}_all.json" 2> "$R/val_${name}_all.log" \
      || echo "$name (all sizes): exit $?" >> "$R/failures.txt"
    save; report; continue
  fi
  if [ -n "$sizes" ] && [[ "$TOGETHER" == *" $name "* ]]; then
    t=$(limit 240)
    if [ "$t" -lt 10 ]; then echo "$name: out of time" >> "$R/failures.txt"; continue; fi
    timeout "$t" python3 -m cli validate "${common[@]}" --quick "${repeats[@]}" --parts programs --sizes "$sizes" \
      "$path" -o "$R/val_${name}_all.json" 2> "$R/val_${name}_all.log" \
      || echo "$name (all sizes): exit $?" >> "$R/failures.txt"
    save; report; continue
  fi
  for n in ${sizes//,/ }; do
    t=$(limit 75)
    if [ "$t" -lt 10 ]; then echo "$name n=$n: out of time" >> "$R/failures.txt"; continue; fi
    timeout "$t" python3 -m cli validate "${common[@]}" --quick "${repeats[@]}" --parts programs --sizes "$n" \
      "$path" -o "$R/val_${name}_$n.json" 2> "$R/val_${name}_$n.log" \
      || echo "$name n=$n: exit $?" >> "$R/failures.txt"
    save
  done
  report
done
# the rewrite validation of a few suite programs, at their first size
for name in ${REWRITES-jacobi1d gesummv atax}; do
  [ -n "${REWRITES+set}" ] || case " ${programs[*]} " in *" $name "*) ;; *) continue ;; esac
  t=$(limit 120)
  if [ "$t" -lt 20 ]; then echo "rewrites $name: out of time" >> "$R/failures.txt"; continue; fi
  size=$(sizes_of "$name"); size=${size%%,*}
  timeout "$t" python3 -m cli validate-rewrites --device nvidia --cpu-device pocl "${repeats[@]}" \
    --device-profile "${REWRITE_PROFILE:-$profile}" --format json ${size:+--sizes "$size"} \
    -o "$R/rw_$name.json" "$(path_of "$name")" 2> "$R/rw_$name.log" \
    || echo "rewrites $name: exit $?" >> "$R/failures.txt"
  report
done
report
cat "$R/card.txt" "$R/report.txt" "$R/failures.txt" 2>/dev/null; ls "$R" "$R/report"
