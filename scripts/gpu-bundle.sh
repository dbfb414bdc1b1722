#!/usr/bin/env bash
# Builds the test and bench binaries in release, strips them, and collects them with two runners
# into gpu-bundle/, which a GPU machine without a Rust toolchain can run from the repository root:
#   gpu-bundle/run-tests [filter]    every GPU-capable test binary, with BIGFUSE_REQUIRE_GPU=1
#   gpu-bundle/run-bench add ...     the benchmarks (see `gpu-bundle/run-bench --help`)
#   gpu-bundle/examples/<name>       the examples
# BIGFUSE_BUNDLE_NVRTC12=1 adds NVRTC 12 (the pip wheel's library, 113 MB, xz-compressed to about
# 32 MB so that it fits a 64 MiB transfer with the tests) in gpu-bundle/nvrtc12/, to run the tests
# with it on the GPU machine's driver:
#   gpu-bundle/run-tests-nvrtc12 [filter]     (unpacks it into /tmp, then runs the tests with it)
# The bench is built with its `gmp` feature (GMP on all host cores as the reference of `bench e2e`),
# which compiles GMP from source and needs `m4` (apt-get install -y m4). BIGFUSE_BUNDLE_GMP=0 builds
# it without GMP instead (its figures then read "not built").
set -euo pipefail
cd "$(dirname "$0")/.."
out=gpu-bundle

bench_features=()
if [ "${BIGFUSE_BUNDLE_GMP:-1}" != 0 ]; then
  if ! command -v m4 >/dev/null 2>&1; then
    echo "gpu-bundle: the bench's GMP reference (feature gmp) builds GMP from source, which needs m4." >&2
    echo "  install it:   apt-get install -y m4    (or: BIGFUSE_BUNDLE_GMP=0 $0 to bundle without GMP)" >&2
    exit 1
  fi
  bench_features=(--features gmp)
fi

rm -rf "$out"
mkdir -p "$out/tests"

cargo build --release -p bigfuse-bench ${bench_features[@]+"${bench_features[@]}"}
cp target/release/bench "$out/bench"
cargo build --release --examples
mkdir -p "$out/examples"
for e in examples/*.rs; do
  name="$(basename "$e" .rs)"
  cp "target/release/examples/$name" "$out/examples/$name"
done

# Test executables, from cargo's JSON messages. Snapshot tests (their files live under the
# source tree's absolute path) and compile-fail tests (they need cargo) stay with CI.
cargo test --release --workspace --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        name = m["target"]["name"]
        if name in ("snapshots", "macro_errors", "bigfuse_macros", "user_add"):
            continue
        print(name, m["executable"])
' | while read -r name exe; do
    cp "$exe" "$out/tests/$name"
  done
strip "$out"/bench "$out"/tests/* "$out"/examples/* 2>/dev/null || true

if [ "${BIGFUSE_BUNDLE_NVRTC12:-0}" = 1 ]; then
  nvrtc12="${BIGFUSE_NVRTC12_DIR:-$PWD/target/nvrtc12}"
  if [ ! -e "$nvrtc12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --target "$nvrtc12" nvidia-cuda-nvrtc-cu12==12.9.86
  fi
  mkdir -p "$out/nvrtc12"
  # NVRTC finds its builtins library beside itself.
  for f in "$nvrtc12"/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 "$nvrtc12"/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.*; do
    xz -T0 -6 -c "$f" > "$out/nvrtc12/$(basename "$f").xz"
  done
  cat > "$out/run-tests-nvrtc12" <<'RUN'
#!/usr/bin/env bash
# Runs the tests with the bundled NVRTC 12 (and nothing else: BIGFUSE_NVRTC names the one library
# to load) on this machine's driver, with a kernel cache of its own.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib=/tmp/bigfuse-nvrtc12
mkdir -p "$lib"
for f in "$here"/nvrtc12/*.xz; do
  [ -e "$lib/$(basename "$f" .xz)" ] || xz -dc "$f" > "$lib/$(basename "$f" .xz)"
done
export BIGFUSE_NVRTC="$lib/libnvrtc.so.12" BIGFUSE_EXPECT_NVRTC=12 BIGFUSE_CACHE_DIR=/tmp/bigfuse-cache-nvrtc12
exec "$here/run-tests" "$@"
RUN
  chmod +x "$out/run-tests-nvrtc12"
fi

cat > "$out/run-tests" <<'RUN'
#!/usr/bin/env bash
# Runs every test binary of the bundle with a GPU required (a missing GPU fails, never skips).
# Run from the repository root. Extra arguments go to each test binary (e.g. a name filter).
here="$(cd "$(dirname "$0")" && pwd)"
export BIGFUSE_REQUIRE_GPU=1
status=0
for t in "$here"/tests/*; do
  echo "== $(basename "$t")"
  "$t" "$@" || status=1
done
exit $status
RUN
cat > "$out/run-bench" <<'RUN'
#!/usr/bin/env bash
# The benchmarks: e.g. `gpu-bundle/run-bench add --json bench-add.json`,
# `gpu-bundle/run-bench e2e --json e2e.json --plots plots`, `gpu-bundle/run-bench jit --json jit.json`.
exec "$(cd "$(dirname "$0")" && pwd)/bench" "$@"
RUN
chmod +x "$out/run-tests" "$out/run-bench"
du -sh "$out"
ls -la "$out" "$out/tests"
