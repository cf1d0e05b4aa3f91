#!/usr/bin/env bash
# Trains the embedded default with the committed configs, in order, on a machine with no Java and
# no network, such as the device machine (with BACKEND=cuda: the DiTs' configs ask for BF16):
#   training/configs/embedded-vae-stills.yaml   -> runs/embedded-vae-stills
#   training/configs/embedded-dit-gpu-big6.yaml -> runs/embedded-dit-gpu-big6
#   training/configs/embedded-dit-gpu-hi8.yaml  -> runs/embedded-dit-gpu-hi8
# The DiTs' configs name no base: they train on the VAE of the embedded checkpoint this checkout
# ships, not on the first stage's output (training/configs/ship-embedded-default.sh copies and
# rebuilds between the two, where Java is at hand).
# STAGES="config …" (names under training/configs/, without .yaml) trains others instead;
# BACKEND=cuda trains on the GPU (`stepweave train --backend cuda`), else on the CPU backend;
# TRAIN_OPTIONS: further options of `stepweave train` (e.g. --debug); PARALLEL=1 trains every
# stage at once (independent runs only: each log line names its stage).
#
#   here:   scripts/device/train-embedded.sh package   # builds .device-train/ (git-ignored): a
#                                                      # jlink'd Java 25 runtime and the runnable
#                                                      # jar's classes, each as a .tar.xz
#   there:  bash scripts/device/train-embedded.sh      # from the repository root; carry
#                                                      # [".device-train", "runs"]; results in $OUT
# or, without a package of its own, from scripts/device/package.sh's .device (its runtime and the
# CLI's jars, which leave the embedded default's trained weights behind: the classpath takes them
# from this checkout's models/src/main/resources); carry [".device", "runs"].
#   here:   scripts/device/train-embedded.sh unpack DIR  # DIR: where $OUT's files came back
#
# Resumable across calls and machines: each call trains for at most TIME_LIMIT seconds (default
# 530, under the device's 10-minute limit), skipping finished runs and resuming a started one from
# its last checkpoint (`stepweave train --resume`, bit for bit the uninterrupted run); the absolute
# paths a run recorded (its output, the DiT's base) are first moved to this checkout's runs/. It
# then packs the state to carry into the next call (finished runs: model/, loss.jsonl, loss.png,
# run.json; the started one: also base/ and its latest checkpoint) as $OUT/runs.tar.NN, 15 MB
# parts (what comes back from the device is at most 8 files of 16 MiB, two folders deep). `unpack`
# puts them over ./runs/ here; call again until the log says "all stages trained", then
# training/configs/ship-embedded-default.sh --copy-only ships them.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
pack=$repo/.device-train
read -r -a stages <<< "${STAGES:-embedded-vae-stills embedded-dit-gpu-big6 embedded-dit-gpu-hi8}"

if [[ "${1:-}" == package ]]; then
  export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
  mkdir -p "$pack"
  exclude=$(git -C "$repo" rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.device-train/' "$exclude" 2>/dev/null || echo '/.device-train/' >> "$exclude"
  (cd "$repo" && ./stepweave build)
  # The runnable jar's classes without other platforms' natives (the tokenizer's and SQLite's),
  # recompressed: the working tree and the carry together are limited to 64 MiB.
  jar=$(mktemp -d)/stepweave.jar
  cp "$repo/cli/target/stepweave.jar" "$jar"
  zip -q -d "$jar" 'native/lib/linux-aarch64/*' 'native/lib/osx-*' 'native/lib/win-*' \
    'org/sqlite/native/Mac/*' 'org/sqlite/native/Windows/*' 'org/sqlite/native/FreeBSD/*' \
    'org/sqlite/native/Linux-Musl/*' 'org/sqlite/native/Linux-Android/*' \
    'org/sqlite/native/Linux/aarch64/*' 'org/sqlite/native/Linux/arm*' \
    'org/sqlite/native/Linux/ppc64/*' 'org/sqlite/native/Linux/x86/*' \
    'org/sqlite/native/Linux/riscv64/*' 'org/sqlite/native/Linux/s390x/*' >/dev/null 2>&1 || true
  classes=$(dirname "$jar")/classes
  mkdir -p "$classes" && (cd "$classes" && unzip -q "$jar")
  tar -C "$classes" -cf - . | xz -T2 -6 > "$pack/classes.tar.xz"
  rm -rf "$(dirname "$jar")"
  [[ -f "$pack/jre.tar.xz" ]] || bash "$repo/../shared/device/make-jre.sh" "$pack" ||
    bash /work/shared/device/make-jre.sh "$pack"
  du -sh "$pack"/* "$repo/runs" 2>/dev/null || true
  exit 0
fi
if [[ "${1:-}" == unpack ]]; then
  mkdir -p "$repo/runs"
  cat "${2:?unpack DIR}"/runs.tar.* | tar -C "$repo/runs" -xf -
  exit 0
fi

out=${OUT:-$repo/device-out}
limit=${TIME_LIMIT:-530}
start=$(date +%s)
mkdir -p "$out" /tmp/j /tmp/j/classes
if [[ -f $pack/classes.tar.xz ]]; then
  tar -xJf "$pack/jre.tar.xz" -C /tmp/j
  tar -xJf "$pack/classes.tar.xz" -C /tmp/j/classes
  classpath=/tmp/j/classes
else
  tar -xJf "$repo/.device/jre.tar.xz" -C /tmp/j
  tar -xJf "$repo/.device/lib.tar.xz" -C /tmp/j/classes
  classpath="$repo/models/src/main/resources:/tmp/j/classes/*"
fi
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export STEPWEAVE_CUDA_CACHE=/tmp/stepweave-kernels
backend=()
[[ -z "${BACKEND:-}" ]] || backend=(--backend "$BACKEND")
if [[ -n "${TRAIN_OPTIONS:-}" ]]; then
  read -r -a options <<< "$TRAIN_OPTIONS"
  backend+=("${options[@]}")
fi
sw=(/tmp/j/jre/bin/java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED
    -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy -Xmx16g -cp "$classpath"
    dev.stepweave.cli.StepweaveCli)
export STEPWEAVE_HOME=/tmp/stepweave-home
cd "$repo"
log=$out/train.log
echo "== $(date -u +%FT%TZ) $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee -a "$log"
# One stage: skipped when finished, resumed when started; returns non-zero when it did not finish.
train_stage() {
  local s=$1 left rc resume=()
  [[ -d runs/$s/model ]] && { echo "$s: finished earlier" | tee -a "$log"; return 0; }
  left=$(( limit - ($(date +%s) - start) ))
  (( left > 30 )) || return 1
  if [[ -f runs/$s/run.json ]]; then
    resume=(--resume)
    # A run trained in another checkout recorded that checkout's absolute paths.
    find "runs/$s" -maxdepth 3 -name '*.json' ! -path '*/model/*' ! -path '*/base/*' \
      -exec sed -i "s#\"[^\"]*/runs/#\"$repo/runs/#g" {} +
  fi
  echo "== $s ${resume[*]} (up to ${left} s)" | tee -a "$log"
  set +e
  timeout --signal=INT --kill-after=20 "$left" "${sw[@]}" train --config "training/configs/$s.yaml" \
    "${backend[@]}" "${resume[@]}" 2>&1 | grep --line-buffered -v '^step [0-9]*/[0-9]* ' |
    sed -u "s/^/[$s] /" | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  echo "$s: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$log"
  [[ -d runs/$s/model ]]
}
done_all=1
if [[ "${PARALLEL:-0}" == 1 ]]; then
  # Every stage at once on the one GPU (small models leave most of it idle); for independent runs
  # only — a stage whose base is another stage's output would start before that output exists.
  pids=()
  for s in "${stages[@]}"; do train_stage "$s" & pids+=($!); done
  for pid in "${pids[@]}"; do wait "$pid" || done_all=0; done
else
  for s in "${stages[@]}"; do train_stage "$s" || { done_all=0; break; }; done
fi
# What the next call needs (and what to read): each run without superseded files.
keep=$(mktemp -d)
for s in "${stages[@]}"; do
  [[ -d runs/$s ]] || continue
  mkdir -p "$keep/$s"
  for f in run.json loss.jsonl loss.png; do
    if [[ -f runs/$s/$f ]]; then cp "runs/$s/$f" "$keep/$s/"; fi
  done
  if [[ -d runs/$s/model ]]; then
    cp -r "runs/$s/model" "$keep/$s/"
  else
    if [[ -d runs/$s/base ]]; then cp -r "runs/$s/base" "$keep/$s/"; fi
    last=$(ls -d runs/$s/checkpoints/step-* 2>/dev/null | tail -n1)
    if [[ -n "$last" ]]; then mkdir -p "$keep/$s/checkpoints" && cp -r "$last" "$keep/$s/checkpoints/"; fi
  fi
done
tar -C "$keep" -cf - . | split -b 15M -d - "$out/runs.tar."
(( done_all )) && echo "all stages trained" | tee -a "$log"
du -sh "$keep" | tee -a "$log"
