//! jackdaw-bench: Jackdaw against LMDB, redb, SQLite (and RocksDB, behind the `rocksdb` feature)
//! on the workloads of WORKLOADS.md, in one run, with ratios to the best peer.
//!
//! Layout: [`engine`] (the trait), [`engines`] (one adapter per engine), [`workloads`] (every
//! workload, by its WORKLOADS.md name), [`disk`] (the disk's physical limits), [`device`] and
//! [`measure`] (block-device counters, page-cache dropping, windows, progress), [`report`]
//! (tables, SVG charts, JSON), [`gen`] (seeded keys and values), [`ycsb`] (YCSB's workloads A–F:
//! its generators, CoreWorkload, the runs and their report; `jackdaw-bench ycsb`), [`cleanup`]
//! (working directories that a stopped bench does not leave behind).
//!
//! Every engine's run of a workload starts after a `sync()` and on a quiet device
//! (`device::settle`), so that no engine pays (in time or in device bytes) for the write-back of
//! pages, or the discard of a deleted database's blocks, that another engine left, and the engines take
//! turns at running first (the order rotates by one per round of a workload; tables keep the asked
//! order). With `--repeat N`, a short workload runs in up to N rounds, each engine once per round,
//! and the table shows each engine's median round (`report::median_rounds`), its other rounds'
//! ops/s in the notes.

pub mod cleanup;
pub mod device;
pub mod disk;
pub mod engine;
pub mod engines;
pub mod gen;
pub mod measure;
pub mod report;
pub mod workloads;
pub mod ycsb;

use anyhow::{bail, Context, Result};
use engines::Kind;
use report::{Failure, Report, Row};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;
use workloads::{ColdMethod, Ctx, Sizes, Verify, Workload};

/// One run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Engines asked for (an engine this build lacks is reported as skipped).
    pub engines: Vec<Kind>,
    pub workloads: Vec<Workload>,
    pub sizes: Sizes,
    pub seed: u64,
    /// Where databases live (a directory on a real disk, never a tmpfs).
    pub dir: PathBuf,
    pub json: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub verify: Verify,
    pub progress: bool,
    pub cold: ColdMethod,
    /// Binary to re-run under `strace -c -f` for commit-syscalls.
    pub strace_exe: Option<PathBuf>,
    /// Keep the databases after the run.
    pub keep: bool,
    /// Print on stdout: the summary table at the end, and with `verbose` every workload's
    /// table as it finishes.
    pub print: bool,
    /// Print every workload's full table (the summary alone otherwise).
    pub verbose: bool,
    /// Rounds of each workload whose earlier rounds took under `REPEAT_UNDER_SECS` in all (each
    /// engine's median round is reported); 1 = every workload runs once.
    pub repeat: usize,
}

impl Failure {
    fn of(w: &Workload, kind: Kind, skipped: bool, reason: String) -> Failure {
        Failure { workload: w.name(), engine: kind.name().into(), skipped, reason }
    }
}

/// A workload runs another round (up to `Config::repeat`) only while its rounds so far took less
/// than this, all engines together: short workloads are the noisy ones (a stall of the shared
/// machine is a large part of a 0.2 s run), while a long one already averages over minutes.
pub const REPEAT_UNDER_SECS: f64 = 60.0;

/// The engines a run uses by default: Jackdaw, LMDB, redb, SQLite, and RocksDB when compiled in.
pub fn default_engines() -> Vec<Kind> {
    let mut v = vec![Kind::Jackdaw, Kind::Lmdb, Kind::Redb, Kind::Sqlite];
    if cfg!(feature = "rocksdb") {
        v.push(Kind::Rocksdb);
    }
    v
}

/// A default seed: different on every run, short enough to type back.
pub fn fresh_seed() -> u64 {
    let t =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let mut r = gen::Rng::new(t ^ ((std::process::id() as u64) << 32));
    r.next_u64() % 1_000_000_000
}

/// The default database directory: `target/jackdaw-bench` of the workspace the binary was built in.
pub fn default_dir() -> PathBuf {
    if let Ok(exe) = std::env::current_exe() {
        if let Some(t) = exe.ancestors().find(|a| a.file_name().is_some_and(|n| n == "target")) {
            return t.join("jackdaw-bench");
        }
    }
    PathBuf::from("target").join("jackdaw-bench")
}

/// Run the selected workloads on the selected engines; print as it goes (when `cfg.print`), and
/// write the JSON and the report directory when asked.
pub fn run(cfg: &Config) -> Result<Report> {
    let started = Instant::now();
    std::fs::create_dir_all(&cfg.dir).with_context(|| format!("create {}", cfg.dir.display()))?;
    let mount = device::mount_of(&cfg.dir)?;
    if matches!(mount.fs_type.as_str(), "tmpfs" | "ramfs") {
        bail!(
            "{} is on a {} ({}): the benchmark measures a real disk; pass --dir on one",
            cfg.dir.display(),
            mount.fs_type,
            mount.mount_point
        );
    }
    let dev = device::block_dev_of(&cfg.dir);
    let work = cleanup::WorkDir::create(&cfg.dir, "run", cfg.keep)?;
    let run_dir = work.path().to_path_buf();

    let mut rep = Report {
        seed: cfg.seed,
        scale: cfg.sizes.label.to_string(),
        dir: cfg.dir.display().to_string(),
        fs_type: mount.fs_type.clone(),
        mount_point: mount.mount_point.clone(),
        device: Some(match &dev {
            Some(d) => format!("{} ({}:{}, counters from {})", d.name, d.major, d.minor, d.stat.display()),
            None => "n/a (no block device behind the directory: device counters unavailable)".into(),
        }),
        ..Report::default()
    };
    let mut engines = Vec::new();
    for k in &cfg.engines {
        if let Some(why) = k.unavailable() {
            eprintln!("SKIPPED: {}: {why}", k.name());
            rep.failures.push(Failure {
                workload: "all".into(),
                engine: k.name().into(),
                skipped: true,
                reason: why.into(),
            });
        } else {
            engines.push(*k);
            rep.engines.push(k.name().into());
            let m = |md| k.mode_mapping(md).to_string();
            rep.mode_mapping
                .push((k.name().into(), [m(engine::Mode::None), m(engine::Mode::Buff), m(engine::Mode::Sync)]));
        }
    }
    if engines.contains(&Kind::Jackdaw) && cfg.workloads.contains(&Workload::FreeSpaceControl) {
        let k = Kind::JackdawAppend;
        let m = |md| k.mode_mapping(md).to_string();
        rep.mode_mapping.push((
            format!("{} (free-space-control only, FreeSpacePolicy::AppendOnly)", k.name()),
            [m(engine::Mode::None), m(engine::Mode::Buff), m(engine::Mode::Sync)],
        ));
    }
    if cfg.print {
        println!("# jackdaw-bench\n");
        print!("{}", report::header(&rep));
        let cold = cfg.workloads.iter().any(|w| w.name().ends_with("-cold"));
        if cold && cfg.cold == ColdMethod::Auto {
            println!(
                "The read-*-cold workloads drop the page cache before each cold read: the whole machine's\n\
                 (echo 3 > /proc/sys/vm/drop_caches) when run as root, else the database files' pages\n\
                 (posix_fadvise). --no-drop-caches drops only the database files' pages."
            );
        }
        println!();
    }

    let mut ctx = Ctx::new(
        run_dir.clone(),
        dev.clone(),
        cfg.seed,
        cfg.sizes.clone(),
        cfg.verify,
        cfg.progress,
        cfg.cold,
        cfg.strace_exe.clone(),
        cfg.keep,
    );
    let mut seq_failed: std::collections::HashMap<Kind, String> = Default::default();
    // Engines take turns at running first: the order rotates by one per round of each workload.
    let mut turn = 0usize;
    let canonical = |engine: &str| -> (usize, bool) {
        let k = Kind::from_name(engine);
        let base = if k == Some(Kind::JackdawAppend) { Some(Kind::Jackdaw) } else { k };
        (engines.iter().position(|e| Some(*e) == base).unwrap_or(usize::MAX), k == Some(Kind::JackdawAppend))
    };
    for w in &cfg.workloads {
        let first_new = rep.rows.len();
        if *w == Workload::Disk {
            match disk::measure(
                &run_dir.join("disk"),
                dev.as_ref(),
                cfg.sizes.disk_iters,
                cfg.sizes.disk_seq_bytes,
                cfg.seed,
            ) {
                Ok(rows) => rep.rows.extend(rows),
                Err(e) => {
                    eprintln!("FAILED: disk limits: {e:#}");
                    rep.failures.push(Failure {
                        workload: "disk".into(),
                        engine: "disk".into(),
                        skipped: false,
                        reason: format!("{e:#}"),
                    });
                }
            }
        } else {
            // Rounds: every engine once per round, the first engine rotating. A workload whose
            // first round was short runs again, up to `cfg.repeat` rounds, and each engine's
            // median round is reported (`median_rounds`).
            let mut rows: Vec<Row> = Vec::new();
            let mut failed: Vec<Kind> = Vec::new();
            let w_started = Instant::now();
            for round in 0..cfg.repeat.max(1) {
                if round > 0 && w_started.elapsed().as_secs_f64() > REPEAT_UNDER_SECS {
                    break;
                }
                let mut list: Vec<Kind> = engines.iter().copied().filter(|k| !failed.contains(k)).collect();
                if !list.is_empty() {
                    let n = list.len();
                    list.rotate_left(turn % n);
                    turn += 1;
                }
                if *w == Workload::FreeSpaceControl {
                    if let Some(p) = list.iter().position(|k| *k == Kind::Jackdaw) {
                        list.insert(p + 1, Kind::JackdawAppend);
                    }
                }
                for kind in list {
                    if w.is_read() {
                        if let Some(why) = seq_failed.get(&kind) {
                            let reason = format!("no fill-seq database: {why}");
                            eprintln!("SKIPPED: {} on {}: {reason}", kind.name(), w.name());
                            rep.failures.push(Failure::of(w, kind, true, reason));
                            failed.push(kind);
                            continue;
                        }
                    }
                    // Start every engine on a quiet device: the dirty pages an earlier engine left
                    // in the page cache would otherwise be written back during this one's run,
                    // slowing it and counting in its device bytes (the first engine of each
                    // workload paid for the last one of the workload before).
                    device::sync_all();
                    let waited = device::settle(dev.as_ref(), std::time::Duration::from_millis(cfg.sizes.settle_ms));
                    if waited.as_millis() >= 500 {
                        eprintln!(
                            "  (device busy: waited {:.1} s before {} on {})",
                            waited.as_secs_f64(),
                            kind.name(),
                            w.name()
                        );
                    }
                    let res = catch_unwind(AssertUnwindSafe(|| ctx.run(*w, kind)));
                    let res = match res {
                        Ok(r) => r,
                        Err(p) => {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_else(|| "panic".into());
                            Err(anyhow::anyhow!("panicked: {msg}"))
                        }
                    };
                    match res {
                        Ok(new) => {
                            for r in &new {
                                eprintln!(
                                    "  {:<24} {:<15} {:>10} ops/s  {:>8.3} s{}",
                                    r.workload,
                                    r.engine,
                                    report::si(r.ops_per_sec),
                                    r.secs,
                                    if round > 0 { format!("  (round {})", round + 1) } else { String::new() }
                                );
                            }
                            rows.extend(new);
                        }
                        Err(e) => {
                            let reason = format!("{e:#}");
                            eprintln!("FAILED: {} on {}: {reason}", kind.name(), w.name());
                            if matches!(w, Workload::FillSeq(engine::Mode::Sync)) {
                                seq_failed.entry(kind).or_insert_with(|| reason.clone());
                            }
                            rep.failures.push(Failure::of(w, kind, false, reason));
                            failed.push(kind);
                        }
                    }
                }
            }
            rep.rows.extend(report::median_rounds(rows));
        }
        // Tables list the engines in the order asked for, whoever ran first.
        rep.rows[first_new..].sort_by_key(|r| canonical(&r.engine));
        // A durable Jackdaw commit against the raw write of its record's size (WORKLOADS.md floor).
        let (before, new) = rep.rows.split_at_mut(first_new);
        for r in new.iter_mut().filter(|r| r.engine == Kind::Jackdaw.name() && r.mode.starts_with("sync")) {
            let (Some(l), Some(j)) = (r.latency, r.jackdaw.as_ref()) else { continue };
            if j.journal_bytes_written <= 0.0 || j.written_once_pages > 0.0 {
                continue;
            }
            if let Some(raw) = disk::raw_direct_p50_us(before, j.journal_bytes_written) {
                let x = l.p50_us / raw;
                r.commit_vs_raw_write = Some(x);
                let note = format!(
                    "commit p50 = {x:.2}× a raw O_DIRECT|O_DSYNC write of its record ({:.0} KiB: {raw:.0} µs)",
                    (j.journal_bytes_written / 4096.0).ceil() * 4.0
                );
                r.notes = if r.notes.is_empty() { note } else { format!("{}; {note}", r.notes) };
            }
        }
        // Ratios and the tables of this workload's rows.
        let names = report::workloads_in_order(&rep.rows[first_new..]);
        for n in &names {
            report::set_ratios(&mut rep.rows, n, |e| Kind::from_name(e).is_some_and(|k| !k.is_jackdaw()));
            if cfg.print && cfg.verbose {
                let rows: Vec<&Row> = rep.rows.iter().filter(|r| &r.workload == n).collect();
                println!("### {n}\n\n{}", report::table(&rows));
            }
        }
    }
    ctx.cleanup();
    rep.cold_cache_method = ctx.cold_used.map(|m| m.describe().to_string());
    drop(work);
    rep.total_secs = started.elapsed().as_secs_f64();
    if let Some(m) = &rep.cold_cache_method {
        if cfg.print {
            println!("cold reads: page cache dropped with {m}");
        }
    }
    if let Some(p) = &cfg.json {
        report::write_json(&rep, p)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(d) = &cfg.report {
        report::write_report_dir(&rep, d)?;
        eprintln!("wrote {}/report.md and one SVG per workload", d.display());
    }
    let f = report::failures(&rep);
    if cfg.print {
        if !cfg.verbose {
            print!("{}", report::summary(&rep));
            println!(
                "\n(--verbose: every workload's table: device bytes, sizes, latency, Jackdaw's journal figures)\n"
            );
        }
        let space = report::space_table(&rep);
        if !space.is_empty() {
            println!("{space}");
        }
        if f.is_empty() {
            println!("all engines ran every selected workload (seed {}, {:.0} s)", rep.seed, rep.total_secs);
        } else {
            println!("Failed or skipped (seed {}):\n{f}", rep.seed);
        }
    }
    Ok(rep)
}
