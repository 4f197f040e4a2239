#!/usr/bin/env bash
# On the lent GPU machine (PoCL as the CPU world), writing under $OUT:
#   bash benchmarks/gpu_validate.sh calibrate
#       calibrate the NVIDIA GPU (nvidia.json, nvidia.paper.json, nvidia.dmm.json, fits), then
#       validate transfers and bank conflicts (val_parts.json)
#   bash benchmarks/gpu_validate.sh programs PROFILE.json [PROGRAM.lg ...]
#       validate programs one at a time (val_NAME.json), so a time-out keeps what was measured
# Merge the reports with: python benchmarks/merge_validation.py OUT/val_*.json
set -u
. benchmarks/gpu_setup.sh || exit 1
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } \
  > "$OUT/card.txt" 2>&1
what=${1:-calibrate}
if [ "$what" = calibrate ]; then
  python3 -m cli devices > "$OUT/devices.txt" 2>&1
  python3 -m cli calibrate --device nvidia --cpu-device pocl -o "$OUT/nvidia.json" \
    > "$OUT/calibrate.txt" 2>&1 || { cat "$OUT/calibrate.txt"; exit 1; }
  profile="$OUT/nvidia.json"
  other=paper; grep -q '"mode": "paper"' "$profile" && other=dmm
  python3 -m cli validate --device nvidia --cpu-device pocl --device-profile "$profile" \
    --format json --parts transfers,conflicts --compare-profile "$OUT/nvidia.$other.json" \
    -o "$OUT/val_parts.json" 2> "$OUT/val_parts.log"
  cat "$OUT/card.txt" "$OUT/devices.txt" "$OUT/calibrate.txt"
  exit 0
fi
profile=$2; shift 2
stem=${profile%.json}
other=paper; grep -q '"mode": "paper"' "$profile" && other=dmm
for program in "$@"; do
  name=$(basename "$program" .lg)
  timeout 200 python3 -m cli validate --device nvidia --cpu-device pocl --device-profile "$profile" \
    --format json --parts programs --compare-profile "$stem.$other.json" "$program" \
    -o "$OUT/val_$name.json" 2> "$OUT/val_$name.log" \
    || echo "$name: exit $?" >> "$OUT/validate_failures.txt"
done
ls -la "$OUT"; cat "$OUT/validate_failures.txt" 2>/dev/null
