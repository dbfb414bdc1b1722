#!/usr/bin/env bash
# The whole test suite on any machine, GPU or not: formatting, lints, every test. Every generated
# kernel is compiled by NVRTC 13, and every snapshot kernel once more by NVRTC 12 (bigfuse runs with
# either); both libraries are installed from PyPI into target/ when they are missing. GPU tests run
# when a GPU is present and say they skipped otherwise; with BIGFUSE_REQUIRE_GPU=1 a missing GPU
# fails them.
set -euo pipefail
cd "$(dirname "$0")/.."
install_nvrtc() { # DIR LIBRARY WHEEL
  if [ ! -e "$1/$2" ]; then
    echo "installing $3 into $1"
    python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
      --target "${1%/nvidia/*}" "$3"
  fi
}
nvrtc13="${BIGFUSE_NVRTC_DIR:-$PWD/target/nvrtc}/nvidia/cu13/lib"
nvrtc12="${BIGFUSE_NVRTC12_DIR:-$PWD/target/nvrtc12}/nvidia/cuda_nvrtc/lib"
install_nvrtc "$nvrtc13" libnvrtc.so.13 nvidia-cuda-nvrtc==13.0.88
install_nvrtc "$nvrtc12" libnvrtc.so.12 nvidia-cuda-nvrtc-cu12==12.9.86
# Both on the path: NVRTC 13 is preferred, unless a CUDA 12 driver needs NVRTC 12.
export LD_LIBRARY_PATH="$nvrtc13:$nvrtc12${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace "$@"
# The libraries' documentation: a rustdoc warning (a broken link, an unparsable example) fails.
# `--lib`: the bench is a binary, whose doc comments are not published.
echo "== documentation (rustdoc warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --workspace --lib --no-deps
echo "== the NVRTC of the run above, then every snapshot kernel with NVRTC 12"
cargo test --quiet --test snapshots nvrtc_version -- --show-output
BIGFUSE_NVRTC="$nvrtc12/libnvrtc.so.12" BIGFUSE_EXPECT_NVRTC=12 \
  cargo test --quiet --test snapshots -- --show-output
echo "== without the cuda feature: no CUDA crate in the tree, everything on the CPU backend"
if cargo tree --no-default-features -e normal -p bigfuse | grep -q cudarc; then
  echo "cudarc is in the tree without the cuda feature" >&2
  exit 1
fi
cargo clippy --quiet --no-default-features -p bigfuse-runtime -p bigfuse --all-targets -- -D warnings
cargo test --quiet --no-default-features -p bigfuse-runtime -p bigfuse --lib --test backends --test errors --test batches --test arrays --test concurrency --test multi
cargo test --quiet --no-default-features -p bigfuse-runtime -p bigfuse --doc
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-default-features -p bigfuse-runtime -p bigfuse --lib --no-deps
