#!/usr/bin/env bash
# The whole test suite on any machine, GPU or not: formatting, lints, every test. Every generated
# kernel is compiled by NVRTC; the NVRTC library is installed into target/nvrtc (from PyPI) when
# it is missing. GPU tests run when a GPU is present and say they skipped otherwise; with
# BIGFUSE_REQUIRE_GPU=1 a missing GPU fails them.
set -euo pipefail
cd "$(dirname "$0")/.."
nvrtc_dir="${BIGFUSE_NVRTC_DIR:-$PWD/target/nvrtc}"
if [ ! -e "$nvrtc_dir/nvidia/cu13/lib/libnvrtc.so.13" ]; then
  echo "installing the NVRTC library into $nvrtc_dir"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$nvrtc_dir" nvidia-cuda-nvrtc==13.0.88
fi
export LD_LIBRARY_PATH="$nvrtc_dir/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace "$@"
