#!/usr/bin/env bash
# Checks that the workspace builds with its declared minimum Rust (rust-version in Cargo.toml),
# with and without the `cuda` feature. Not part of CI: it installs that toolchain with rustup
# (about 560 MB unpacked), then checks in about 1.5 minutes on 2 cores. CI's clippy run catches the
# commonest slip meanwhile: clippy::incompatible_msrv flags standard-library APIs newer than
# rust-version.
set -euo pipefail
cd "$(dirname "$0")/.."
msrv="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
rustup toolchain install "$msrv" --profile minimal
export CARGO_TARGET_DIR="$PWD/target/msrv"
cargo "+$msrv" check --workspace --all-targets
cargo "+$msrv" check -p bigfuse -p bigfuse-runtime --no-default-features --all-targets
echo "builds with Rust $msrv"
