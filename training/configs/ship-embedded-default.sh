#!/usr/bin/env bash
# Trains the embedded default with the three committed configs and copies what the runs wrote,
# verbatim, into the resources EmbeddedWan.ensure() reads. Run from anywhere; the runs go to runs/ at
# the repository root. ./stepweave train refuses a non-empty output folder, so remove runs/embedded-*
# first to train again.
#   1. embedded-vae-stills.yaml (the CPU is enough): the per-frame VAE on stills, from fresh weights;
#      its VAE is copied into the resources and the project rebuilt, because
#   2. embedded-dit-gpu-big6.yaml (a GPU: --backend cuda, BF16) names no base: it starts from the
#      embedded checkpoint, taking that VAE, the text encoder and the scheduler, and trains a fresh
#      DiT on the VAE's latents of 9-frame clips: the low-noise expert, `transformer_2`;
#   3. embedded-dit-gpu-hi8.yaml (a GPU) likewise, a fresh 8-block DiT at sigma 0.85-1 only: the
#      high-noise expert, `transformer`. Neither DiT reads the other's weights.
#   training/configs/ship-embedded-default.sh              # train all three, copying after each
#   training/configs/ship-embedded-default.sh --copy-only  # copy the runs runs/ holds
# STEPWEAVE=path/to/launcher overrides ./stepweave; on a machine without Java,
# scripts/device/train-embedded.sh trains the same stages from a package built here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
sw=(${STEPWEAVE:-./stepweave})
vae_run=runs/embedded-vae-stills
low_run=runs/embedded-dit-gpu-big6
high_run=runs/embedded-dit-gpu-hi8
out=models/src/main/resources/dev/stepweave/models/wan/embedded/trained
copy() { # copy COMPONENT RUN [SHIPPED_AS]: the run's COMPONENT and card, shipped as SHIPPED_AS
  # (default COMPONENT) and SHIPPED_AS-card.json; a run that is not here leaves the shipped one
  local as=${3:-$1}
  [[ -d "$2/model" ]] || { echo "kept the shipped $as ($2/model not found)"; return 0; }
  mkdir -p "$out/$as"
  for f in config.json diffusion_pytorch_model.safetensors; do
    cp "$2/model/$1/$f" "$out/$as/$f"
  done
  cp "$2/model/card.json" "$out/$as-card.json"
}
if [[ "${1:-}" != "--copy-only" ]]; then
  "${sw[@]}" train --config training/configs/embedded-vae-stills.yaml
  copy vae "$vae_run"
  ./stepweave build
  "${sw[@]}" train --config training/configs/embedded-dit-gpu-big6.yaml --backend cuda
  "${sw[@]}" train --config training/configs/embedded-dit-gpu-hi8.yaml --backend cuda
fi
copy vae "$vae_run"
copy transformer "$low_run" transformer_2
copy transformer "$high_run"
echo "shipped into $out"
