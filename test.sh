#!/usr/bin/env bash
# Runs every test of the workspace (release profile, as CI does), the deterministic-scheduler
# stage (the engine built with its `shuttle` feature), then the quickstart example. Every test
# binary runs even when one fails, so that a CI log shows every failure.
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --release --no-fail-fast "$@"
cargo test --release -p jackdaw --features shuttle --test shuttle -- --nocapture
cargo run --release -p jackdaw --example quickstart > /dev/null
echo "quickstart: ok"
