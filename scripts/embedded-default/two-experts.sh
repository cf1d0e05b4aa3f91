#!/usr/bin/env bash
# A two-expert (Wan2.2-style) model folder from two trained runs, to judge before anything ships:
# HIGH's DiT as `transformer` (the steps at t >= BOUNDARY * 1000) and LOW's as `transformer_2`,
# everything else LOW's; the card is left out, so the loader imports one from model_index.json.
#   scripts/embedded-default/two-experts.sh runs/embedded-dit-gpu-hi6/model \
#       runs/embedded-dit-gpu-big6/model /tmp/moe-hi6 [0.875]
set -euo pipefail
high=$1 low=$2 out=$3 boundary=${4:-0.875}
rm -rf "$out"
cp -r "$low" "$out"
rm -f "$out/card.json"
mv "$out/transformer" "$out/transformer_2"
cp -r "$high/transformer" "$out/transformer"
python3 - "$out/model_index.json" "$boundary" <<'PY'
import json, sys
path, boundary = sys.argv[1], float(sys.argv[2])
index = json.load(open(path))
index["boundary_ratio"] = boundary
index["transformer_2"] = ["diffusers", "WanTransformer3DModel"]
json.dump(index, open(path, "w"), indent=2)
PY
echo "two experts in $out (switch at t >= $boundary * 1000)"
