#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (see package.sh): unpacks the carried Java
# runtime, then, each step optional:
#   TESTS=1 (default)   the "gpu" test group (GpuSuite: CudaBackend vs CpuBackend op by op, kernel
#                       compilation, the VMM pool, the golden parity suite in F32, BF16 bounds;
#                       GPU_EXCLUDE: class-name patterns of its tests to leave out; GPU_ONLY:
#                       "NameA|NameB", only the test classes whose names contain one of those)
#   BENCH=all|quick|attention|dit|vae|cfg|none (default all)   dev.stepweave.bench.gpu.Bench (ours)
#   MAINS="GraphBench CacheBench:17,20 …"         further dev.stepweave.bench.gpu mains, in order
#                                                 (after a colon: arguments, comma-separated)
#   REFERENCE=all|quick|lora|variants [ti2v|i2v]|vae22 [N]|none (default none)  scripts/device/reference.py: the PyTorch side,
#                                                 measured in the same run on the same GPU (lora:
#                                                 the 1.3B forward plain and with PEFT's unmerged
#                                                 rank-32 LoRA, beside MAINS="LoraBench"; vae22:
#                                                 diffusers' AutoencoderKLWan decode at 720p×121,
#                                                 needs .device/diffusers.tar.xz)
#   TRAIN_REFERENCE="F,H,W[,ckpt] …"              scripts/device/train_reference.py step: PyTorch's
#                                                 1.3B training step (diffusers' DiT, bf16 autocast,
#                                                 fp32 masters, fused AdamW; `ckpt`: its gradient
#                                                 checkpointing), one model for the shapes in order,
#                                                 beside MAINS="TrainStepBench:…" (e.g. "9,32,32
#                                                 21,60,104,ckpt"; needs .device/diffusers.tar.xz;
#                                                 TRAIN_REFERENCE_TIMEOUT, 300 s)
#   PIPELINE="WxH:FRAMES:STEPS …"                  whole generations on a random-weight 1.3B-config
#                                                 checkpoint (wan_pipeline.py make): diffusers'
#                                                 WanPipeline (needs .device/diffusers.tar.xz), then
#                                                 `stepweave generate --backend cuda` twice, each in
#                                                 a fresh process, then `bench generate --repeat 3`
#                                                 (PIPELINE_PROCESSES, PIPELINE_RUNS: how many; diffusers
#                                                 runs one warm-up and PIPELINE_RUNS-1 timed runs;
#                                                 PIPELINE_REFERENCE=0 leaves diffusers out)
#   ROLLOUT="K:WxH:FRAMES:STEPS:REPEATS"           RL rollout throughput on the same random-weight
#                                                 checkpoint: a K-wide group through the engine vs
#                                                 the K samples one at a time (RolloutBench)
#   SERVE="WORKLOAD:RATES[:REQUESTS] …"            `bench serve --backend cuda` on the same checkpoint,
#                                                 one process per entry: REQUESTS (default 24) of the
#                                                 workload (images-480p, images-1024, video-256x33,
#                                                 video-480p, mixed) arriving as a Poisson process at
#                                                 each of the RATES (requests/s, comma-separated),
#                                                 served one at a time, with request-level and with
#                                                 step-level batching (SERVE_OPTIONS: further options,
#                                                 default "--rounds 1 --warmup 4"; SERVE_TIMEOUT, 400 s)
# The Python scripts run from this folder (package.sh copies them here), so a package built in one
# checkout runs its own scripts wherever it is carried. Logs go to $OUT (or ./device-out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/device-out}
mkdir -p "$out" /tmp/j
tar -xJf "$here/jre.tar.xz" -C /tmp/j
java=/tmp/j/jre/bin/java
# The JDK's own class-data archive, which a full JDK ships and the jlink'd runtime leaves out to keep
# the carry small: the CLI's archive (below) extends it.
[ -f /tmp/j/jre/lib/server/classes.jsa ] || "$java" -Xshare:dump >/dev/null 2>&1 || true
cuda_lib=/usr/local/cuda/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$cuda_lib:${LD_LIBRARY_PATH:-}
export STEPWEAVE_CUDA_CACHE=/tmp/stepweave-kernels
mkdir -p /tmp/stepweave-lib && tar -xJf "$here/lib.tar.xz" -C /tmp/stepweave-lib
cp="/tmp/stepweave-lib/*"
flags=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xss4m -Xmx48g
       -Dstepweave.golden="$PWD/testdata/golden")
# The CLI's processes get the launcher's flags (./stepweave): its collector and its class-data archive.
mkdir -p /tmp/stepweave-cds
cli_flags=("${flags[@]}" -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy -XX:+AutoCreateSharedArchive
           -XX:SharedArchiveFile=/tmp/stepweave-cds/stepweave.jsa -Xlog:cds=off -Xlog:cds+dynamic=off)
header="== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"

if [ "${TESTS:-1}" = 1 ]; then
  {
    echo "$header"
    echo "== gpu test group"
    if [ -n "${GPU_ONLY:-}" ]; then
      "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.GpuSuite "^(?!.*($GPU_ONLY)).*\$"
    else
      # Unquoted: GPU_EXCLUDE is a list of patterns.
      # shellcheck disable=SC2086
      "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.GpuSuite ${GPU_EXCLUDE:-}
    fi
    echo "gpu suite exit: $?"
  } 2>&1 | tee "$out/gpu-tests.log"
fi

if [ "${BENCH:-all}" != none ]; then
  {
    echo "$header"
    timeout "${BENCH_TIMEOUT:-420}" "$java" "${flags[@]}" -cp "$cp" dev.stepweave.bench.gpu.Bench "${BENCH:-all}"
    echo "bench exit: $?"
  } 2>&1 | tee "$out/bench.log"
fi

for entry in ${MAINS:-}; do
  main=${entry%%:*}
  args=()
  [ "$entry" != "$main" ] && IFS=, read -r -a args <<< "${entry#*:}"
  {
    echo "$header"
    timeout "${MAIN_TIMEOUT:-300}" "$java" "${flags[@]}" -cp "$cp" "dev.stepweave.bench.gpu.$main" "${args[@]}"
    echo "$main exit: $?"
  } 2>&1 | tee -a "$out/$main.log"
done

# diffusers' source, when carried (package.sh DEST DIFFUSERS_SRC), on PYTHONPATH.
unpack_diffusers() {
  if [ -f "$here/diffusers.tar.xz" ] && [ ! -d /tmp/pylib/diffusers ]; then
    mkdir -p /tmp/pylib && tar -xJf "$here/diffusers.tar.xz" -C /tmp/pylib
  fi
  export PYTHONPATH=/tmp/pylib:${PYTHONPATH:-}
}

if [ "${REFERENCE:-none}" != none ]; then
  {
    echo "$header"
    unpack_diffusers
    # Unquoted: REFERENCE may carry the mode's arguments ("variants i2v").
    # shellcheck disable=SC2086
    timeout "${REFERENCE_TIMEOUT:-300}" /opt/torch/.venv/bin/python "$here/reference.py" $REFERENCE
    echo "reference exit: $?"
  } 2>&1 | tee "$out/reference.log"
fi

if [ -n "${TRAIN_REFERENCE:-}" ]; then
  {
    echo "$header"
    unpack_diffusers
    [ -f "$here/diffusers.tar.xz" ] || echo "no diffusers.tar.xz beside run.sh (package.sh DEST DIFFUSERS_SRC)"
    # Unquoted: TRAIN_REFERENCE is a list of shapes, each one argument.
    # shellcheck disable=SC2086
    timeout "${TRAIN_REFERENCE_TIMEOUT:-300}" /opt/torch/.venv/bin/python "$here/train_reference.py" step $TRAIN_REFERENCE
    echo "train reference exit: $?"
  } 2>&1 | tee "$out/train-reference.log"
fi

# The random-weight 1.3B-config checkpoint PIPELINE, ROLLOUT and SERVE run on, made once (needs diffusers).
ckpt=/tmp/wan13-random
make_checkpoint() {
  py=/opt/torch/.venv/bin/python
  unpack_diffusers
  [ -f "$ckpt/model_index.json" ] || "$py" "$here/wan_pipeline.py" make "$ckpt" || echo "make failed"
}

if [ -n "${PIPELINE:-}" ]; then
  {
    echo "$header"
    make_checkpoint
    for spec in $PIPELINE; do
      IFS=: read -r size frames steps <<< "$spec"
      if [ "${PIPELINE_REFERENCE:-1}" = 1 ]; then
        timeout "${PIPELINE_TIMEOUT:-400}" "$py" "$here/wan_pipeline.py" time "$ckpt" \
          --size "$size" --frames "$frames" --steps "$steps" --guidance 5 \
          --repeat "$(( ${PIPELINE_RUNS:-3} - 1 ))" \
          || echo "diffusers $spec failed"
      fi
      for run in $(seq 1 "${PIPELINE_PROCESSES:-2}"); do
        start=$(date +%s.%N)
        timeout "${PIPELINE_TIMEOUT:-400}" "$java" "${cli_flags[@]}" -cp "$cp" dev.stepweave.cli.StepweaveCli generate \
          "a red ball bouncing" --model "$ckpt" --backend cuda --size "$size" --frames "$frames" \
          --steps "$steps" --guidance 5 --seed 42 --force -o "/tmp/out-$frames.mp4"
        echo "OURS generate $spec process $run exit $? wall $(awk "BEGIN{print $(date +%s.%N) - $start}") s"
      done
      timeout "${PIPELINE_TIMEOUT:-400}" "$java" "${cli_flags[@]}" -cp "$cp" dev.stepweave.cli.StepweaveCli \
        bench generate "a red ball bouncing" --model "$ckpt" --backend cuda --size "$size" \
        --frames "$frames" --steps "$steps" --guidance 5 --seed 42 --repeat "${PIPELINE_RUNS:-3}" \
        --force -o "/tmp/bench-$frames.mp4"
      echo "OURS bench generate $spec exit $?"
    done
  } 2>&1 | tee "$out/pipeline.log"
fi

if [ -n "${ROLLOUT:-}" ]; then
  {
    echo "$header"
    make_checkpoint
    IFS=: read -r k size frames steps repeats <<< "$ROLLOUT"
    timeout "${ROLLOUT_TIMEOUT:-400}" "$java" "${flags[@]}" -cp "$cp" dev.stepweave.bench.gpu.RolloutBench \
      "$ckpt" "$k" "$size" "$frames" "$steps" "$repeats"
    echo "RolloutBench exit: $?"
  } 2>&1 | tee "$out/rollout.log"
fi

if [ -n "${SERVE:-}" ]; then
  {
    echo "$header"
    make_checkpoint
    for spec in $SERVE; do
      IFS=: read -r workload rates requests <<< "$spec"
      # Unquoted: SERVE_OPTIONS holds several options.
      # shellcheck disable=SC2086
      timeout "${SERVE_TIMEOUT:-400}" "$java" "${cli_flags[@]}" -cp "$cp" dev.stepweave.cli.StepweaveCli \
        bench serve --model "$ckpt" --backend cuda --workload "$workload" --rates "$rates" \
        --requests "${requests:-24}" ${SERVE_OPTIONS:---rounds 1 --warmup 4}
      echo "OURS bench serve $spec exit $?"
    done
  } 2>&1 | tee "$out/serve.log"
fi
