#!/usr/bin/env bash
# Builds everything the GPU machine needs into DEST (default: <repo>/.device, git-ignored):
# the jars of tensor/core/models/cuda/bench with their runtime and test dependencies, the cuda
# module's test classes (the "gpu" group, GpuSuite), the bench module's classes (the GPU benchmark
# mains of dev.stepweave.bench.gpu), a jlink'd Java 25 runtime and run.sh.
# Then call the device tool's `run` with carry [".device"] and command `bash .device/run.sh`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$repo/.device}
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
cd "$repo"
# Each module writes its classpath (relative paths resolve against the module's directory).
./mvnw -q -B package -pl cuda,bench -am -DskipTests \
  dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/device.classpath
rm -rf "$dest/lib"
mkdir -p "$dest/lib"
cat cuda/target/device.classpath <(echo) bench/target/device.classpath | tr ':' '\n' |
  sort -u | while read -r entry || [ -n "$entry" ]; do
  [ -z "$entry" ] && continue
  if [ -d "$entry" ]; then
    # A reactor module resolved to its classes directory: pack it as a jar.
    name=$(echo "$entry" | sed 's|/target/.*||; s|.*/||')
    "$JAVA_HOME/bin/jar" cf "$dest/lib/stepweave-$name-$(basename "$entry").jar" -C "$entry" .
  else
    cp "$entry" "$dest/lib/"
  fi
done
cp cuda/target/stepweave-cuda-*.jar "$dest/lib/" 2>/dev/null || true
"$JAVA_HOME/bin/jar" cf "$dest/lib/stepweave-cuda-tests.jar" -C cuda/target/test-classes .
"$JAVA_HOME/bin/jar" cf "$dest/lib/stepweave-bench.jar" -C bench/target/classes .
[ -f "$dest/jre.tar.xz" ] || /work/shared/device/make-jre.sh "$dest" >/dev/null
cp scripts/device/run.sh "$dest/run.sh"
du -sh "$dest"
