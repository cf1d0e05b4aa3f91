#!/usr/bin/env bash
# Runs on the GPU machine from the repository root (see package.sh): unpacks the carried Java
# runtime, runs the "gpu" test group (op-by-op CudaBackend vs CpuBackend, kernel compilation, the
# VMM pool, the golden parity suite in F32, the BF16 mode's bounds), then the benchmark table
# (BENCH=quick for small shapes only). Logs go to $OUT (or ./device-out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/device-out}
mkdir -p "$out" /tmp/j
tar -xJf "$here/jre.tar.xz" -C /tmp/j
java=/tmp/j/jre/bin/java
cuda_lib=/usr/local/cuda/targets/x86_64-linux/lib
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$cuda_lib:${LD_LIBRARY_PATH:-}
export STEPWEAVE_CUDA_CACHE=/tmp/stepweave-kernels
# NCCL comes with PyTorch's wheels there (nvidia-nccl): NCCL_HOME/lib holds libnccl.so.2.
export NCCL_HOME=${NCCL_HOME:-$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)}
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
  # BENCH=quick: small shapes only; BENCH=all: the issue's table (see Bench).
  timeout ${BENCH_TIMEOUT:-420} "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.Bench "${BENCH:-all}"
  echo "bench exit: $?"
} 2>&1 | tee "$out/bench.log"

{
  # Eager vs CUDA-graph-replayed 1.3B DiT at image shapes (GRAPH_BENCH=quick: 256x256 batch 1).
  timeout ${GRAPH_BENCH_TIMEOUT:-300} "$java" "${flags[@]}" -cp "$cp" dev.stepweave.cuda.GraphBench "${GRAPH_BENCH:-all}"
  echo "graph bench exit: $?"
} 2>&1 | tee "$out/graph-bench.log"
