#!/usr/bin/env bash
# Runs every test of the workspace (release profile, as CI does), then the demo.
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --release "$@"
