//! The benchmark (filled in below).
use std::path::PathBuf;
use std::process::ExitCode;

/// Run the benchmark.
pub async fn run(_seconds: u64, _clients: &[usize], _dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    anyhow::bail!("bench: not implemented yet")
}
