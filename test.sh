#!/usr/bin/env bash
# Runs every test of the workspace (release profile, as CI does).
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --release "$@"
