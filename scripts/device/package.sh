#!/usr/bin/env bash
# Builds everything the GPU machine needs into DEST (default: <repo>/.device, git-ignored): the
# jars of every module with their runtime and test dependencies in one lib.tar.xz (the
# `stepweave` CLI, the cuda module's test classes — the "gpu" group, GpuSuite — and the bench
# module's GPU benchmark mains of dev.stepweave.bench.gpu), a jlink'd Java 25 runtime, run.sh and,
# when the diffusers source is given, diffusers.tar.xz for the whole-generation reference
# (wan_pipeline.py) and PyTorch's training step (train_reference.py). The Python scripts
# (scripts/device/*.py: reference.py, train_reference.py, which imports it, …) go beside run.sh.
# Usage: package.sh [DEST] [DIFFUSERS_SRC]   (DIFFUSERS_SRC: a checkout's src/ folder)
# The CLI travels without what only `stepweave serve` and the embedded default need (the HTTP
# server's and the job stores' libraries, the default's trained weights: PIPELINE and SERVE run
# random-weight checkpoints) and the runtime without the desktop, HTTP and SQL modules — enough
# for `generate`, `bench generate` and `bench serve`. DEVICE_CLI=0 leaves the CLI out altogether:
# enough for TESTS, BENCH, MAINS, ROLLOUT, REFERENCE and TRAIN_REFERENCE, not for PIPELINE or SERVE.
# Then call the device tool's `run` with carry [".device"] and command `bash .device/run.sh`.
# The tool carries the work tree with it, 64 MiB at most: the tracked files are ~43 MB and this
# package ~24 MB with diffusers, so move trained/ (12 MB; nothing on the device reads it) out of the
# checkout for the call and back after it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$repo/.device}
diffusers=${2:-}
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd) # absolute: the jars are repacked from other directories
cd "$repo"
# Each module writes its classpath (relative paths resolve against the module's directory).
./mvnw -q -B package -pl cuda,bench,cli -am -DskipTests \
  dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=target/device.classpath
rm -rf "$dest/lib" "$dest/lib.tar.xz"
mkdir -p "$dest/lib"
modules="cuda bench"
[ "${DEVICE_CLI:-1}" = 0 ] || modules="$modules cli"
for module in $modules; do cat "$module/target/device.classpath"; echo; done | tr ':' '\n' | sort -u |
  while read -r entry || [ -n "$entry" ]; do
    [ -z "$entry" ] && continue
    if [ -d "$entry" ]; then
      # A reactor module resolved to its classes directory: pack it as a jar.
      name=$(echo "$entry" | sed 's|/target/.*||; s|.*/||')
      "$JAVA_HOME/bin/jar" cf "$dest/lib/stepweave-$name-$(basename "$entry").jar" -C "$entry" .
    else
      cp "$entry" "$dest/lib/"
    fi
  done
for module in $modules; do # the projects themselves are not on their own classpaths
  ls "$dest/lib/stepweave-$module-"*.jar >/dev/null 2>&1 ||
    "$JAVA_HOME/bin/jar" cf "$dest/lib/stepweave-$module-classes.jar" -C "$module/target/classes" .
done
"$JAVA_HOME/bin/jar" cf "$dest/lib/stepweave-cuda-tests.jar" -C cuda/target/test-classes .
# Keep the carry small (the device tool takes 64 MiB with the work tree): no architecture-test or
# JMH libraries, and only the tokenizer's Linux x86-64 native library.
rm -f "$dest/lib/"archunit-*.jar "$dest/lib/"jmh-core-*.jar "$dest/lib/"commons-math3-*.jar \
  "$dest/lib/"jopt-simple-*.jar # JMH runs on the CPU only
for jar in "$dest/lib/"tokenizers-*.jar; do
  zip -q -d "$jar" 'native/lib/linux-aarch64/*' 'native/lib/osx-*' 'native/lib/win-*' || true
done
# JNA (the tokenizer's) likewise: only its Linux x86-64 dispatch library of 28.
for jar in "$dest/lib/"jna-*.jar; do
  [ -f "$jar" ] || continue
  keep=com/sun/jna/linux-x86-64/
  natives=$(unzip -Z1 "$jar" | grep -E '^com/sun/jna/[^/]+/.+\.(so|a|dll|jnilib|dylib)$' |
    grep -v "^$keep" || true)
  [ -z "$natives" ] || echo "$natives" | xargs zip -q -d "$jar"
done
# Nothing on the device runs the embedded default (tests, benches and PIPELINE load the golden and
# random-weight checkpoints): its 5.6 MB of trained weights stay behind.
for jar in "$dest/lib/"stepweave-models-*.jar; do
  zip -q -d "$jar" 'dev/stepweave/models/wan/embedded/trained/*' || true
done
# Nor does anything start the HTTP server or open a job store: their libraries stay behind (the
# CLI's commands load without them; `serve` would fail on the device).
rm -f "$dest/lib/"jetty-*.jar "$dest/lib/"postgresql-*.jar "$dest/lib/"sqlite-jdbc-*.jar \
  "$dest/lib/"HikariCP-*.jar
# The jars travel as one xz archive of their entries stored uncompressed: xz over the classes
# themselves is about a third smaller than over deflated jars (run.sh unpacks it).
stored=$(mktemp -d)
for jar in "$dest/lib/"*.jar; do
  unpacked=$(mktemp -d)
  (cd "$unpacked" && "$JAVA_HOME/bin/jar" xf "$jar")
  rm "$jar"
  (cd "$unpacked" && zip -q -0 -r -X "$stored/$(basename "$jar")" .)
  rm -rf "$unpacked"
done
rm -rf "$dest/lib"
tar -C "$stored" -cf - . | xz -T2 -6 > "$dest/lib.tar.xz"
rm -rf "$stored"
# A diffusers archive from an earlier package goes unless this one asks for it.
[ -n "$diffusers" ] || rm -f "$dest/diffusers.tar.xz"
# The runtime, jlink'd here: nothing run on the device needs the desktop (ImageIO: PNG and JPEG
# output; the MP4 writer does without), HTTP, SQL (and with it XML) or naming modules, which with
# the JVM's native symbols (stripped: nothing on the device reads them) would be 13 MB of the
# carry the 64 MiB limit on the working tree and carry needs.
jre_modules=java.base,java.logging,java.management,jdk.incubator.vector,jdk.unsupported,jdk.zipfs
if [ ! -f "$dest/jre.tar.xz" ] || [ "$(cat "$dest/jre.modules" 2>/dev/null)" != "$jre_modules" ]; then
  jre=$(mktemp -d)
  "$JAVA_HOME/bin/jlink" --add-modules "$jre_modules" --strip-debug --no-header-files \
    --no-man-pages --output "$jre/jre" 2>&1 | grep -v incubator || true
  strip --strip-unneeded "$jre/jre/lib/server/libjvm.so"
  tar -C "$jre" -cf - jre | xz -T2 -9e > "$dest/jre.tar.xz"
  rm -rf "$jre"
  echo "$jre_modules" > "$dest/jre.modules"
fi
if [ -n "$diffusers" ]; then
  tar -C "$diffusers" -cJf "$dest/diffusers.tar.xz" diffusers
fi
cp scripts/device/run.sh scripts/device/*.py "$dest/"
du -sh "$dest"
