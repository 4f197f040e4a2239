#!/usr/bin/env bash
# On the lent GPU machine, issue 14's runner-step gap: validate benchmarks/runner_programs/
# device_made.lg (the calibration's runner-step program, its input made on the device) and
# host_made.lg (the same steps, the first vector copied in from the host, as the suite's inputs
# are) at 64, 1 024 and 16 384 items, in alternating processes, under a profile calibrated in the
# same call. Read the results with
#   python benchmarks/runner_step_table.py --by-step RUN_DIR PROFILE.json
#   bash benchmarks/gpu_runner_programs.sh PROFILE.json [ROUNDS] [BUDGET_SECONDS]
# Results go to /tmp/runner (val_<program>_r<k>.json and their logs) and $OUT/runner.tar.
set -u
. benchmarks/gpu_setup.sh || exit 1
profile=$1
rounds=${2:-2}
budget=${3:-150}
R=/tmp/runner; rm -rf "$R"; mkdir -p "$R"
cp "$profile" "$R/nvidia.json"
save() { tar -C /tmp -cf "$OUT/runner.tar" runner; }
for k in $(seq 1 "$rounds"); do
  for name in device_made host_made; do
    left=$((budget - SECONDS - 5))
    if [ "$left" -lt 15 ]; then echo "$name round $k: out of time" >> "$R/failures.txt"; continue; fi
    timeout "$left" python3 -m cli validate --device nvidia --cpu-device pocl \
      --device-profile "$R/nvidia.json" --format json --quick --repeats "${REPEATS:-7}" \
      --parts programs --sizes 64,1024,16384 "benchmarks/runner_programs/$name.lg" \
      -o "$R/val_${name}_r$k.json" 2> "$R/val_${name}_r$k.log" \
      || echo "$name round $k: exit $?" >> "$R/failures.txt"
    save
  done
done
python3 benchmarks/runner_step_table.py --by-step --small 1 "$R" "$R/nvidia.json" \
  > "$R/by_step.txt" 2>&1
save
cat "$R/by_step.txt" "$R/failures.txt" 2>/dev/null
