//! `jackdaw-bench`: run the workloads of WORKLOADS.md on Jackdaw and its peers, in one run.

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use jackdaw_bench::engine::Kind;
use jackdaw_bench::workloads::{self, ColdMethod, Sizes, Verify, Workload};
use jackdaw_bench::Config;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum VerifyArg {
    /// Trust the engines (only the read workloads' checksums are checked).
    Off,
    /// Full ordered scan + sampled gets after every write workload (default).
    Scan,
    /// Every key by get too, and again after close and reopen.
    Full,
}

/// Benchmark Jackdaw against LMDB, redb, SQLite (WAL) and RocksDB on the workloads of
/// WORKLOADS.md. Prints one table per workload (ops/s, ratio to the best peer, device bytes per
/// op, device flushes per transaction, database size, commit latency, Jackdaw's journal figures).
#[derive(Debug, Parser)]
#[command(name = "jackdaw-bench", version)]
struct Args {
    /// Engines, comma-separated: jackdaw, lmdb, redb, sqlite, rocksdb (rocksdb needs the
    /// `rocksdb` cargo feature). Default: all compiled in.
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,

    /// Workloads, comma-separated: names (fill-seq-sync, read-rnd-cold, ...), WORKLOADS.md groups
    /// (fill-seq, read-parallel-N, read-*-cold, fill-rnd-tx, fill-seq-tx, fill-rnd-1m,
    /// large-values, free-space-control, commit-syscalls, commit-snapshots (Jackdaw only), disk), `*` globs, or `all` (default).
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,

    /// The 10× smaller variant of every workload (CI smoke, README).
    #[arg(long, conflicts_with = "tiny")]
    quick: bool,

    /// About 1,000 operations per workload (the smoke test's size).
    #[arg(long)]
    tiny: bool,

    /// Seed of the key and value generator (printed on every run; pass it back to repeat one).
    #[arg(long)]
    seed: Option<u64>,

    /// Write every figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write report.md (a Markdown table per workload) and one SVG chart per workload to DIR.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,

    /// Where the databases live (default: target/jackdaw-bench). Must be on a real disk, not a tmpfs.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,

    /// How much to check that each engine read back exactly what it wrote.
    #[arg(long, value_enum, default_value = "scan")]
    verify: VerifyArg,

    /// Drop the cache for cold reads with posix_fadvise on the database files only, even when
    /// /proc/sys/vm/drop_caches is writable.
    #[arg(long)]
    fadvise: bool,

    /// Do not run strace for commit-syscalls (engine counters and device figures only).
    #[arg(long)]
    no_strace: bool,

    /// No progress bars.
    #[arg(long)]
    no_progress: bool,

    /// Jackdaw's debug log: one line per journal write and per flush on stderr (pages, bytes,
    /// pages by kind), as `Options::flush_log` prints them.
    #[arg(long)]
    io_log: bool,

    /// Keep the databases after the run.
    #[arg(long)]
    keep: bool,

    /// Run each workload up to N times, every engine once per round, while its rounds so far took
    /// under a minute in all (the short, noisy ones), and report each engine's median round.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=99))]
    repeat: u64,

    /// List the workloads and exit.
    #[arg(long)]
    list: bool,

    /// Internal: the child of commit-syscalls under strace (N commits of 100 items in --dir).
    #[arg(long, hide = true, value_name = "N")]
    child_commits: Option<u64>,
}

fn main() -> Result<()> {
    let a = Args::parse();
    if a.list {
        for w in Workload::all() {
            println!("{:<24} ({})", w.name(), w.group());
        }
        return Ok(());
    }
    let mut engines = Vec::new();
    for e in &a.engines {
        match Kind::from_name(e.trim()) {
            Some(k) if k != Kind::JackdawAppend => engines.push(k),
            _ => bail!("unknown engine {e:?}: one of jackdaw, lmdb, redb, sqlite, rocksdb"),
        }
    }
    if engines.is_empty() {
        engines = jackdaw_bench::default_engines();
    }
    let seed = a.seed.unwrap_or_else(jackdaw_bench::fresh_seed);

    if let Some(n) = a.child_commits {
        let dir = a.dir.ok_or_else(|| anyhow::anyhow!("--child-commits needs --dir"))?;
        return workloads::child_commits(engines[0], &dir, n, seed);
    }

    let sizes = if a.tiny {
        Sizes::tiny()
    } else if a.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    let strace_exe = if a.no_strace {
        None
    } else {
        let found = std::process::Command::new("strace").arg("-V").output().is_ok_and(|o| o.status.success());
        if found {
            std::env::current_exe().ok()
        } else {
            eprintln!("note: strace not found: commit-syscalls reports engine counters and device figures only");
            None
        }
    };
    let cfg = Config {
        engines,
        workloads: workloads::select(&a.workloads)?,
        sizes,
        seed,
        dir: a.dir.unwrap_or_else(jackdaw_bench::default_dir),
        json: a.json,
        report: a.report,
        verify: match a.verify {
            VerifyArg::Off => Verify::Off,
            VerifyArg::Scan => Verify::Scan,
            VerifyArg::Full => Verify::Full,
        },
        progress: !a.no_progress && std::io::stderr().is_terminal(),
        cold: if a.fadvise { ColdMethod::Fadvise } else { ColdMethod::Auto },
        strace_exe,
        keep: a.keep,
        print: true,
        repeat: a.repeat as usize,
    };
    jackdaw_bench::engines::jackdaw::set_io_log(a.io_log);
    eprintln!("seed {seed}");
    let rep = jackdaw_bench::run(&cfg)?;
    if rep.failures.iter().any(|f| !f.skipped) {
        std::process::exit(2);
    }
    Ok(())
}
