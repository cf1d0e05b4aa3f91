#!/usr/bin/env bash
# Trains the embedded default with the committed configs, in order, on a machine with no Java and
# no network, such as the 16-core device machine (the training runs on the CPU backend; no GPU is
# used):
#   training/configs/embedded-vae-stills.yaml -> runs/embedded-vae-stills
#   training/configs/embedded-vae.yaml        -> runs/embedded-vae
#   training/configs/embedded-dit.yaml        -> runs/embedded-dit
#
#   here:   scripts/device/train-embedded.sh package   # builds .device-train/ (git-ignored): a
#                                                      # jlink'd Java 25 runtime and a slim jar
#   there:  bash scripts/device/train-embedded.sh      # from the repository root; carry
#                                                      # [".device-train", "runs"]; results in $OUT
#
# Resumable across calls: each call trains for at most TIME_LIMIT seconds (default 540, under the
# device's 10-minute limit), skipping finished runs and resuming a started one from its last
# checkpoint (`stepweave train --resume`, bit for bit the uninterrupted run). It then writes the
# state to carry into the next call to $OUT/runs/ (finished runs: model/, loss.jsonl, loss.png,
# run.json; the started one: also base/ and its checkpoints). Copy $OUT/runs/ over ./runs/ here
# and call again, until $OUT/DONE exists; then $OUT/trained/ holds what
# training/configs/ship-embedded-default.sh --copy-only ships.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
pack=$repo/.device-train
stages=(embedded-vae-stills embedded-vae embedded-dit)

if [[ "${1:-}" == package ]]; then
  export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
  mkdir -p "$pack"
  exclude=$(git -C "$repo" rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.device-train/' "$exclude" 2>/dev/null || echo '/.device-train/' >> "$exclude"
  (cd "$repo" && ./stepweave build)
  # The runnable jar without other platforms' natives (the tokenizer's and SQLite's): the carry
  # is limited to 64 MiB.
  cp "$repo/cli/target/stepweave.jar" "$pack/stepweave.jar"
  zip -q -d "$pack/stepweave.jar" 'native/lib/linux-aarch64/*' 'native/lib/osx-*' 'native/lib/win-*' \
    'org/sqlite/native/Mac/*' 'org/sqlite/native/Windows/*' 'org/sqlite/native/FreeBSD/*' \
    'org/sqlite/native/Linux-Musl/*' 'org/sqlite/native/Linux-Android/*' \
    'org/sqlite/native/Linux/aarch64/*' 'org/sqlite/native/Linux/arm*' \
    'org/sqlite/native/Linux/ppc64/*' 'org/sqlite/native/Linux/x86/*' \
    'org/sqlite/native/Linux/riscv64/*' 'org/sqlite/native/Linux/s390x/*' >/dev/null 2>&1 || true
  [[ -f "$pack/jre.tar.xz" ]] || bash "$repo/../shared/device/make-jre.sh" "$pack" ||
    bash /work/shared/device/make-jre.sh "$pack"
  du -sh "$pack"/* "$repo/runs" 2>/dev/null || true
  exit 0
fi

out=${OUT:-$repo/device-out}
limit=${TIME_LIMIT:-540}
start=$(date +%s)
mkdir -p "$out/runs" /tmp/j
tar -xJf "$pack/jre.tar.xz" -C /tmp/j
sw=(/tmp/j/jre/bin/java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED
    -XX:+UseParallelGC -Xmx16g -jar "$pack/stepweave.jar")
export STEPWEAVE_HOME=/tmp/stepweave-home
cd "$repo"
log=$out/train.log
echo "== $(date -u +%FT%TZ) $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee -a "$log"
done_all=1
for s in "${stages[@]}"; do
  [[ -d runs/$s/model ]] && { echo "$s: finished earlier" | tee -a "$log"; continue; }
  left=$(( limit - ($(date +%s) - start) ))
  (( left > 30 )) || { done_all=0; break; }
  resume=()
  if [[ -f runs/$s/run.json ]]; then resume=(--resume); fi
  echo "== $s ${resume[*]} (up to ${left} s)" | tee -a "$log"
  set +e
  timeout --signal=INT --kill-after=20 "$left" "${sw[@]}" train --config "training/configs/$s.yaml" \
    "${resume[@]}" 2>&1 | grep --line-buffered -v '^step [0-9]*/[0-9]* ' | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  echo "$s: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$log"
  [[ -d runs/$s/model ]] || { done_all=0; break; }
done
# What the next call needs (and what to read): each run without superseded files.
for s in "${stages[@]}"; do
  [[ -d runs/$s ]] || continue
  mkdir -p "$out/runs/$s"
  for f in run.json loss.jsonl loss.png; do
    if [[ -f runs/$s/$f ]]; then cp "runs/$s/$f" "$out/runs/$s/"; fi
  done
  if [[ -d runs/$s/model ]]; then
    cp -r "runs/$s/model" "$out/runs/$s/"
  else
    for d in base checkpoints; do
      if [[ -d runs/$s/$d ]]; then cp -r "runs/$s/$d" "$out/runs/$s/"; fi
    done
  fi
done
if (( done_all )); then
  bash training/configs/ship-embedded-default.sh --copy-only | tee -a "$log"
  mkdir -p "$out/trained"
  cp -r models/src/main/resources/dev/stepweave/models/wan/embedded/trained/. "$out/trained/"
  touch "$out/DONE"
fi
du -sh "$out/runs" | tee -a "$log"
