//! `jackdaw-bench`: run the workloads of WORKLOADS.md on Jackdaw and its peers, in one run.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use jackdaw_bench::engine::Mode;
use jackdaw_bench::engines::Kind;
use jackdaw_bench::workloads::{self, ColdMethod, Sizes, Verify, Workload};
use jackdaw_bench::ycsb::workload::{Props, Spec, RUN_ORDER};
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
/// WORKLOADS.md. Prints one summary table (workload × engine: ratio to the best peer); with
/// --verbose, one table per workload (ops/s, ratio to the best peer, device bytes per op, device
/// flushes per transaction, database size, commit latency, Jackdaw's journal figures).
#[derive(Debug, Parser)]
#[command(name = "jackdaw-bench", version, args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,

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

    /// Never drop the whole machine's page cache: the cold reads drop only the database files'
    /// pages (posix_fadvise), as --fadvise does.
    #[arg(long)]
    no_drop_caches: bool,

    /// Print every workload's full table (device bytes, sizes, latency, Jackdaw's journal
    /// figures) as it finishes; the summary table alone otherwise.
    #[arg(long)]
    verbose: bool,

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

    /// LMDB's map size in GiB (default 64; valgrind refuses a 64 GiB map: 2 fits a profile).
    #[arg(long, value_name = "GIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    lmdb_map_gib: u64,

    /// Internal: the child of commit-syscalls under strace (N commits of 100 items in --dir).
    #[arg(long, hide = true, value_name = "N")]
    child_commits: Option<u64>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// YCSB's workloads A–F (CoreWorkload, YCSB's generators, keys and property files) on every
    /// engine: one load per engine, then each workload per durability mode and thread count.
    Ycsb(YcsbArgs),
}

/// `jackdaw-bench ycsb`: prints one summary table (workload × engine, ops/s and the ratio to the
/// best peer); `--verbose` adds latency per operation type, sizes and device bytes.
#[derive(Debug, clap::Args)]
struct YcsbArgs {
    /// A YCSB property file (YCSB's own `workloada` … `workloadf` run unchanged); repeatable. Unknown
    /// property names are reported.
    #[arg(long = "workload-file", value_name = "FILE")]
    workload_file: Vec<PathBuf>,

    /// A property, as YCSB's `-p` (recordcount, operationcount, maxexecutiontime, ...); wins over
    /// the files. Repeatable.
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    props: Vec<String>,

    /// YCSB's workloads by letter when no --workload-file is given, in the order they use the
    /// loaded database (default a,b,c,f,e,d: YCSB's order, D last as it inserts).
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,

    /// Engines, comma-separated: jackdaw, lmdb, redb, sqlite, rocksdb. Default: all compiled in.
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,

    /// Client thread counts, one pass each (default 1,2,4,8,16; --quick: 1,2).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,

    /// Durability modes, one pass each: sync, buff (default both).
    #[arg(long, value_delimiter = ',')]
    durability: Vec<String>,

    /// 10,000 records and 10,000 operations at 1 and 2 threads.
    #[arg(long)]
    quick: bool,

    /// Write every figure as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write report.md (summary and detail) and the charts (SVG) to DIR.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,

    /// Print the first N keys of the load phase, one a line, and exit.
    #[arg(long, value_name = "N")]
    print_keys: Option<u64>,

    /// Print the first N operations of the run phase (READ key, UPDATE key, INSERT key,
    /// SCAN key len, READMODIFYWRITE key) as a one-thread run generates them, and exit.
    #[arg(long, value_name = "N")]
    trace_ops: Option<u64>,

    /// Also print the detail tables.
    #[arg(long)]
    verbose: bool,

    /// Do not drop the page cache before each pass (dropping it needs root for the whole
    /// machine's cache; otherwise only the database files' pages are dropped).
    #[arg(long)]
    no_drop_caches: bool,

    /// Seed of the generators (printed; pass it back to repeat a run).
    #[arg(long)]
    seed: Option<u64>,

    /// Where the databases live (default: target/jackdaw-bench). Must be on a real disk.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,

    /// Keep the databases after the run.
    #[arg(long)]
    keep: bool,

    /// No progress bars.
    #[arg(long)]
    no_progress: bool,

    /// Run every pass N times, every engine once per round from its loaded files (the first
    /// engine rotating), and report each engine's median round: ratios that one stall of a
    /// shared machine does not move.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=99))]
    repeat: u64,

    /// LMDB's map size in GiB (default 64; valgrind refuses a 64 GiB map: 2 fits a profile).
    #[arg(long, value_name = "GIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1024))]
    lmdb_map_gib: u64,
}

fn parse_engines(list: &[String]) -> Result<Vec<Kind>> {
    let mut engines = Vec::new();
    for e in list {
        match Kind::from_name(e.trim()) {
            Some(k) if k != Kind::JackdawAppend => engines.push(k),
            _ => bail!("unknown engine {e:?}: one of jackdaw, lmdb, redb, sqlite, rocksdb"),
        }
    }
    if engines.is_empty() {
        engines = jackdaw_bench::default_engines();
    }
    Ok(engines)
}

/// Lines to standard output; a reader that stopped reading (`| head -1`) ends them quietly.
fn print_lines(lines: impl IntoIterator<Item = String>) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for l in lines {
        match writeln!(out, "{l}") {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            r => r?,
        }
    }
    Ok(())
}

/// Where `--json` and `--report` write, checked before a run (it used to fail after it, losing
/// its figures): the JSON's folder is made as `--report`'s is, and neither may be the wrong kind.
fn check_outputs(
    json: Option<&std::path::Path>,
    report: Option<&std::path::Path>,
    dir: Option<&std::path::Path>,
) -> Result<()> {
    if let Some(d) = dir.filter(|d| d.exists() && !d.is_dir()) {
        bail!("--dir {}: a file; give the directory the databases go in (made if missing)", d.display());
    }
    if let Some(j) = json {
        if j.is_dir() {
            bail!("--json {}: a directory; give a file name", j.display());
        }
        if let Some(parent) = j.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("--json {}: create {}", j.display(), parent.display()))?;
        }
    }
    if let Some(r) = report.filter(|r| r.exists() && !r.is_dir()) {
        bail!("--report {}: a file; give a directory (it is made if missing)", r.display());
    }
    Ok(())
}

fn ycsb(a: YcsbArgs) -> Result<()> {
    check_outputs(a.json.as_deref(), a.report.as_deref(), a.dir.as_deref())?;
    // Scale defaults: built-in workloads get them over their files' 1,000; a --workload-file
    // keeps its own counts unless --quick; -p wins over everything.
    let scale: Vec<String> = if a.quick {
        vec!["recordcount=10000".into(), "operationcount=10000".into()]
    } else {
        vec!["recordcount=1000000".into(), "operationcount=1000000".into()]
    };
    let mut specs = Vec::new();
    if a.workload_file.is_empty() {
        let letters: Vec<String> = if a.workloads.is_empty() {
            RUN_ORDER.iter().map(|s| s.to_string()).collect()
        } else {
            a.workloads.iter().map(|w| w.trim().to_lowercase()).collect()
        };
        for l in letters {
            let mut o = scale.clone();
            o.extend(a.props.iter().cloned());
            specs.push(Spec::builtin(&l, &o)?);
        }
    } else {
        if !a.workloads.is_empty() {
            bail!("--workloads picks YCSB's built-in files by letter; with --workload-file, list the files instead");
        }
        for f in &a.workload_file {
            let mut p = Props::read(f)?;
            if a.quick {
                p.apply_overrides(&scale)?;
            }
            p.apply_overrides(&a.props)?;
            let name = f.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "file".into());
            let name = name.strip_prefix("workload").filter(|s| !s.is_empty()).unwrap_or(&name).to_string();
            specs.push(Spec::from_props(&name, &p).with_context(|| format!("workload file {}", f.display()))?);
        }
    }
    for s in &specs {
        for u in &s.unknown {
            eprintln!("warning: workload {}: unknown YCSB property {u}: not read by this port", s.name);
        }
    }
    let seed = a.seed.unwrap_or_else(jackdaw_bench::fresh_seed);
    if let Some(n) = a.print_keys {
        return print_lines(jackdaw_bench::ycsb::run::load_keys(&specs[0], n));
    }
    if let Some(n) = a.trace_ops {
        let mut lines = Vec::new();
        for s in &specs {
            if specs.len() > 1 {
                lines.push(format!("# workload {}", s.name));
            }
            lines.extend(jackdaw_bench::ycsb::run::trace_ops(s, seed, n)?);
        }
        return print_lines(lines);
    }
    let mut modes = Vec::new();
    for d in if a.durability.is_empty() { vec!["sync".to_string(), "buff".into()] } else { a.durability.clone() } {
        modes.push(match d.trim() {
            "sync" => Mode::Sync,
            "buff" => Mode::Buff,
            o => bail!("--durability {o:?}: sync or buff"),
        });
    }
    let threads = if !a.threads.is_empty() {
        a.threads.clone()
    } else if a.quick {
        vec![1, 2]
    } else {
        vec![1, 2, 4, 8, 16]
    };
    if threads.iter().any(|&t| t == 0 || t > 1024) {
        bail!("--threads: every count must be from 1 to 1024");
    }
    let user_ops = a.props.iter().any(|p| p.trim_start().starts_with("operationcount="));
    let cfg = jackdaw_bench::ycsb::YcsbConfig {
        engines: parse_engines(&a.engines)?,
        workloads: specs,
        threads,
        modes,
        seed,
        dir: a.dir.unwrap_or_else(jackdaw_bench::default_dir),
        json: a.json,
        report: a.report,
        verbose: a.verbose,
        drop_caches: !a.no_drop_caches,
        progress: !a.no_progress && std::io::stderr().is_terminal(),
        print: true,
        keep: a.keep,
        scale: if a.quick { "quick".into() } else { "full".into() },
        // The full run: 100,000 operations per workload in sync (1,000,000 in buff).
        sync_operation_count: (!a.quick && !user_ops).then_some(100_000),
        repeat: a.repeat as usize,
    };
    jackdaw_bench::engines::lmdb::set_map_gib(a.lmdb_map_gib as usize);
    eprintln!("seed {seed}");
    let rep = jackdaw_bench::ycsb::run(&cfg)?;
    if !rep.failures.is_empty() && rep.failures.iter().any(|f| f.what != "all") {
        std::process::exit(2);
    }
    Ok(())
}

/// Errors print as one line with their causes (`error: ...: ...`), as the other programs do, and
/// exit with 1 (a failed check of what an engine read back exits with 2).
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jackdaw-bench: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let mut a = Args::parse();
    if let Some(Command::Ycsb(y)) = a.command.take() {
        return ycsb(y);
    }
    if a.list {
        return print_lines(Workload::all().iter().map(|w| format!("{:<24} ({})", w.name(), w.group())));
    }
    check_outputs(a.json.as_deref(), a.report.as_deref(), a.dir.as_deref())?;
    let engines = parse_engines(&a.engines)?;
    jackdaw_bench::engines::lmdb::set_map_gib(a.lmdb_map_gib as usize);
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
        cold: if a.fadvise || a.no_drop_caches { ColdMethod::Fadvise } else { ColdMethod::Auto },
        strace_exe,
        keep: a.keep,
        print: true,
        verbose: a.verbose,
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
