#!/usr/bin/env bash
# On the lent GPU machine (PoCL as the CPU world): calibrate the NVIDIA GPU, validate transfers
# and bank conflicts, then every example one at a time (so a time-out keeps what was measured).
# Everything goes to $OUT/results.tar (updated after each step; the device tool brings back only a
# few files). Merge the reports with benchmarks/merge_validation.py.
#   bash benchmarks/gpu_validate.sh [PROFILE.json]   (with a profile: skip calibration)
set -u
. benchmarks/gpu_setup.sh || exit 1
R=/tmp/results; rm -rf "$R"; mkdir -p "$R"
save() { tar -C /tmp -cf "$OUT/results.tar" results; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } \
  > "$R/card.txt" 2>&1
python3 -m cli devices > "$R/devices.txt" 2>&1
if [ $# -ge 1 ]; then
  cp "$1" "$R/nvidia.json"
  for m in paper dmm; do cp "${1%.json}.$m.json" "$R/nvidia.$m.json"; done
else
  python3 -m cli calibrate --device nvidia --cpu-device pocl -o "$R/nvidia.json" \
    > "$R/calibrate.txt" 2>&1 || { cat "$R/calibrate.txt"; save; exit 1; }
fi
save
profile="$R/nvidia.json"
other=paper; grep -q '"mode": "paper"' "$profile" && other=dmm
common=(--device nvidia --cpu-device pocl --device-profile "$profile" --format json
        --compare-profile "$R/nvidia.$other.json")
timeout 120 python3 -m cli validate "${common[@]}" --parts transfers,conflicts \
  -o "$R/val_parts.json" 2> "$R/val_parts.log" || echo "parts: exit $?" >> "$R/failures.txt"
save
for program in examples/*.lg; do
  name=$(basename "$program" .lg)
  timeout 100 python3 -m cli validate "${common[@]}" --parts programs "$program" \
    -o "$R/val_$name.json" 2> "$R/val_$name.log" || echo "$name: exit $?" >> "$R/failures.txt"
  save
done
cat "$R/card.txt" "$R/calibrate.txt" "$R/failures.txt" 2>/dev/null; ls "$R"
