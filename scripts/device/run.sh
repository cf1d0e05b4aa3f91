#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (see package.sh): unpacks the carried Java
# runtime, runs the "gpu" test group (op-by-op CudaBackend vs CpuBackend, kernel compilation, the
# VMM pool, the golden parity suite), then times DiT forwards (TIMINGS=small: only the small
# shape). Logs go to $OUT (or ./device-out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/device-out}
mkdir -p "$out" /tmp/j
tar -xJf "$here/jre.tar.xz" -C /tmp/j
java=/tmp/j/jre/bin/java
cuda_lib=/usr/local/cuda/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$cuda_lib:${LD_LIBRARY_PATH:-}
export STEPWEAVE_CUDA_CACHE=/tmp/stepweave-kernels
cp="$here/lib/*"
flags=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xss4m -Xmx48g
       -Dstepweave.golden="$PWD/testdata/golden")

{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
  echo "== gpu test group"
  "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.GpuSuite
  echo "gpu suite exit: $?"
} 2>&1 | tee "$out/gpu-tests.log"

{
  echo "== DiT timings (F32 path, random weights)"
  timeout 120 "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.DitTiming small f32 1 5 16 16 32 3
  if [ "${TIMINGS:-all}" = all ]; then
    timeout 120 "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.DitTiming small f32 1 21 60 104 512 3
    timeout 120 "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.DitTiming small bf16 1 21 60 104 512 3
    timeout ${FULL_TIMEOUT:-240} "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.DitTiming 1.3b bf16 1 21 60 104 512 2
  fi
  echo "timings exit: $?"
} 2>&1 | tee "$out/timings.log"
