#!/usr/bin/env bash
# Trains the embedded default with the two committed configs and copies what the runs wrote,
# verbatim, into the resources EmbeddedWan.ensure() reads. Run from anywhere; the runs go to runs/ at
# the repository root. ./stepweave train refuses a non-empty output folder, so remove runs/embedded-*
# first to train again.
#   1. embedded-vae-stills.yaml (the CPU is enough): the per-frame VAE on stills, from fresh weights;
#      its VAE is copied into the resources and the project rebuilt, because
#   2. embedded-dit-gpu-big6.yaml (a GPU: --backend cuda, BF16) names no base: it starts from the
#      embedded checkpoint, taking that VAE, the text encoder and the scheduler, and trains a fresh
#      DiT on the VAE's latents of 9-frame clips.
#   training/configs/ship-embedded-default.sh              # train both, copying after each
#   training/configs/ship-embedded-default.sh --copy-only  # copy the runs runs/ holds
# STEPWEAVE=path/to/launcher overrides ./stepweave; on a machine without Java,
# scripts/device/train-embedded.sh trains the same stages from a package built here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
sw=(${STEPWEAVE:-./stepweave})
vae_run=runs/embedded-vae-stills
dit_run=runs/embedded-dit-gpu-big6
out=models/src/main/resources/dev/stepweave/models/wan/embedded/trained
copy() { # copy COMPONENT RUN CARD: a run that is not here leaves the shipped component as it is
  [[ -d "$2/model" ]] || { echo "kept the shipped $1 ($2/model not found)"; return 0; }
  mkdir -p "$out/$1"
  for f in config.json diffusion_pytorch_model.safetensors; do
    cp "$2/model/$1/$f" "$out/$1/$f"
  done
  cp "$2/model/card.json" "$out/$3"
}
if [[ "${1:-}" != "--copy-only" ]]; then
  "${sw[@]}" train --config training/configs/embedded-vae-stills.yaml
  copy vae "$vae_run" vae-card.json
  ./stepweave build
  "${sw[@]}" train --config training/configs/embedded-dit-gpu-big6.yaml --backend cuda
fi
copy vae "$vae_run" vae-card.json
copy transformer "$dit_run" transformer-card.json
echo "shipped into $out"
