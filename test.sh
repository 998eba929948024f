#!/usr/bin/env bash
# Runs every test of the workspace (release profile, as CI does), then the quickstart example.
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --release "$@"
cargo run --release -p jackdaw --example quickstart > /dev/null
echo "quickstart: ok"
