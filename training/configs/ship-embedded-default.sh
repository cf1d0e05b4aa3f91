#!/usr/bin/env bash
# Trains the embedded default with the two committed configs (the per-frame VAE on stills, the DiT on
# that VAE's latents of 9-frame clips) and copies what the runs wrote, verbatim, into the resources
# EmbeddedWan.ensure() reads. Run from anywhere; the runs go to runs/ at the repository root.
# ./stepweave train refuses a non-empty output folder, so remove runs/embedded-* first to train again.
#   training/configs/ship-embedded-default.sh              # train both, then copy
#   training/configs/ship-embedded-default.sh --copy-only  # copy what runs/ holds
# STEPWEAVE=path/to/launcher overrides ./stepweave (scripts/device/train-embedded.sh uses a jar).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
sw=(${STEPWEAVE:-./stepweave})
[[ "${1:-}" == "--copy-only" ]] || {
  "${sw[@]}" train --config training/configs/embedded-vae-stills.yaml
  "${sw[@]}" train --config training/configs/embedded-dit.yaml
}
out=models/src/main/resources/dev/stepweave/models/wan/embedded/trained
mkdir -p "$out/transformer" "$out/vae"
for f in config.json diffusion_pytorch_model.safetensors; do
  cp runs/embedded-dit/model/transformer/$f "$out/transformer/$f"
  cp runs/embedded-vae-stills/model/vae/$f "$out/vae/$f"
done
cp runs/embedded-vae-stills/model/card.json "$out/vae-card.json"
cp runs/embedded-dit/model/card.json "$out/transformer-card.json"
echo "shipped into $out"
