#!/usr/bin/env bash
# Runs run.sh once per step on one GPU machine, each step with its own package, so two commits
# (main and a branch, say) meet the same GPU in one device call. From the repository root:
#   bash scripts/device/packages.sh "DIR [VAR=VALUE ...]" ...
# DIR holds a package's lib.tar.xz (package.sh DIR; DEVICE_CLI=0 keeps it small); every other
# file (jre.tar.xz, run.sh, the Python scripts, diffusers.tar.xz) is taken from .device where DIR
# has none, so the extra packages carry only their jars. VAR=VALUE pairs are the step's run.sh
# settings (TESTS, GPU_ONLY, BENCH, MAINS, ...; a value cannot hold a space, so one MAINS entry a
# step); FRESH_KERNELS=1 first empties the compiled-kernel and timed-choice cache (STEPWEAVE_CUDA_CACHE),
# so the step times every choice again as a fresh machine would. Each step logs under
# $OUT/step-N-NAME (N counted from 1, NAME the package folder's name).
set -uo pipefail
out=${OUT:-$PWD/device-out}
n=0
for step in "$@"; do
  n=$((n + 1))
  read -r -a words <<< "$step"
  dir=${words[0]}
  stage=/tmp/stepweave-step
  rm -rf "$stage" /tmp/stepweave-lib
  mkdir -p "$stage"
  # Every file of .device (the runtime, run.sh, the Python scripts, diffusers.tar.xz), each
  # replaced by DIR's own where it has one.
  for file in .device/*; do ln -s "$PWD/$file" "$stage/$(basename "$file")"; done
  for file in "$dir"/*; do ln -sfn "$(cd "$dir" && pwd)/$(basename "$file")" "$stage/$(basename "$file")"; done
  settings=("${words[@]:1}")
  for setting in "${settings[@]}"; do
    [ "$setting" = FRESH_KERNELS=1 ] && rm -rf /tmp/stepweave-kernels
  done
  log="$out/step-$n-$(basename "$dir")"
  mkdir -p "$log"
  echo "== step $n: $dir ${settings[*]}"
  env "${settings[@]}" OUT="$log" bash "$stage/run.sh"
done
