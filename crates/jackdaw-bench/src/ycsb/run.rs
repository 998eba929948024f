//! Running YCSB on the engines: one load per engine (in `buff`, ended by a close and a
//! `sync()`), checked record by record; then, per pass (durability × thread count), every
//! engine's loaded files restored from their copy and the workloads run on them in order
//! (A, B, C, F, E, D by default), each workload on a freshly opened database, as YCSB runs each
//! workload in a client of its own.
//!
//! Each operation is its own transaction: READ is one read snapshot; UPDATE reads the record,
//! changes one field (`writeallfields=false`) and writes the whole record back (the read and the
//! write are not atomic, as in YCSB's RocksDB binding); INSERT writes a new record; SCAN reads
//! `len` records from the start key; READMODIFYWRITE is a READ followed by an UPDATE. Writes go
//! through [`Engine::put_one`] (Jackdaw: one `WriteBatch` per operation, from every thread).

use super::report::{LoadRow, OpStats, RunRow, YcsbFailure, YcsbReport};
use super::workload::{decode_record, encode_record, load_record, Core, Op, OpKind, Spec};
use crate::device::{self, BlockDev};
use crate::engine::{Engine, Mode};
use crate::engines::Kind;
use crate::gen::Rng;
use crate::measure::{Progress, Window};
use anyhow::{bail, ensure, Context, Result};
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One `ycsb` run's settings.
#[derive(Debug, Clone)]
pub struct YcsbConfig {
    pub engines: Vec<Kind>,
    /// The workloads, in the order they use the loaded database.
    pub workloads: Vec<Spec>,
    pub threads: Vec<usize>,
    pub modes: Vec<Mode>,
    pub seed: u64,
    /// Where the databases live (a real disk).
    pub dir: PathBuf,
    pub json: Option<PathBuf>,
    pub report: Option<PathBuf>,
    /// Print the detail tables too.
    pub verbose: bool,
    /// Drop the page cache after restoring the loaded files, before each pass.
    pub drop_caches: bool,
    pub progress: bool,
    /// Print tables on stdout.
    pub print: bool,
    pub keep: bool,
    /// A label for the size of the run (`quick`, `custom`, ...).
    pub scale: String,
    /// In `sync` passes, at most this many operations per workload (a durable commit of a
    /// single-writer peer takes 0.5–2.6 ms); None: `operationcount` in every mode.
    pub sync_operation_count: Option<i64>,
    /// Rounds of every pass (at least 1): every engine once per round, the first engine
    /// rotating, each from its loaded files; each engine's median round is reported.
    pub repeat: usize,
}

/// Space on disk of each entry of `dir` (allocated blocks), largest first.
fn file_sizes(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let p = e.path();
                    let n = if p.is_dir() {
                        device::disk_usage(&p)
                    } else {
                        use std::os::unix::fs::MetadataExt;
                        e.metadata().map(|m| m.blocks() * 512).unwrap_or(0)
                    };
                    (e.file_name().to_string_lossy().to_string(), n)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn copy_dir(src: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let to = dst.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &to)?;
        } else {
            std::fs::copy(e.path(), &to).with_context(|| format!("copy {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// Key + field-value bytes of one stored record, from its encoding (no allocation).
fn app_bytes(key: &[u8], v: &[u8]) -> u64 {
    let mut n = key.len() as u64;
    let mut b = v;
    let mut name = true;
    while b.len() >= 4 {
        let l = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if b.len() < 4 + l {
            break;
        }
        if !name {
            n += l as u64;
        }
        name = !name;
        b = &b[4 + l..];
    }
    n
}

/// Live application bytes of the whole database (an untimed ordered scan).
fn live_bytes(e: &dyn Engine) -> Result<u64> {
    let mut total = 0u64;
    e.read(&mut |r| {
        r.scan(b"", None, &mut |k, v| {
            total += app_bytes(k, v);
            Ok(())
        })?;
        Ok(())
    })?;
    Ok(total)
}

fn hist() -> Histogram<u64> {
    // Nanoseconds from 1 ns to an hour, 3 significant digits (longer operations saturate).
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid HDR bounds and precision")
}

/// The run-phase seed of one thread: thread 0 of a workload is what `--trace-ops` shows.
pub fn thread_rng(seed: u64, workload: &str, thread: usize) -> Rng {
    Rng::stream(seed.wrapping_add(thread as u64), &format!("ycsb-run-{workload}"))
}

/// The first `n` operations of `spec`'s run phase, as thread 0 of a one-thread run generates
/// them (`--trace-ops`).
pub fn trace_ops(spec: &Spec, seed: u64, n: u64) -> Result<Vec<String>> {
    let core = Core::new(spec.clone())?;
    let mut r = thread_rng(seed, &spec.name, 0);
    let mut out = Vec::new();
    for _ in 0..n.min(spec.operation_count.max(0) as u64) {
        let op = core.next_op(&mut r);
        if let Op::Insert { keynum, .. } = &op {
            core.acknowledge(*keynum)?;
        }
        out.push(op.trace());
    }
    Ok(out)
}

/// The first `n` keys of the load phase (`--print-keys`).
pub fn load_keys(spec: &Spec, n: u64) -> Vec<String> {
    (0..n.min(spec.insert_count.max(0) as u64)).map(|i| spec.key(spec.insert_start + i as i64)).collect()
}

/// A decoded record: (field name, value) in stored order.
type Record = Vec<(String, Vec<u8>)>;

struct ThreadOut {
    hists: Vec<Histogram<u64>>,
    all: Histogram<u64>,
    not_found: [u64; 5],
    scanned: u64,
    done: u64,
}

/// Run one workload's operations on `e` from `threads` threads.
fn run_phase(
    e: &dyn Engine,
    core: &Core,
    threads: usize,
    seed: u64,
    progress: &Progress,
) -> Result<(Vec<ThreadOut>, Duration, bool)> {
    let total = core.spec.operation_count.max(0) as u64;
    let deadline = core.spec.max_execution_time.map(Duration::from_secs_f64);
    let names = core.spec.field_names();
    let field_count = core.spec.field_count;
    let timed_out = AtomicBool::new(false);
    let started = Instant::now();
    let results: Vec<Result<ThreadOut>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mine = total / threads as u64 + u64::from((t as u64) < total % threads as u64);
                let (names, timed_out) = (&names, &timed_out);
                s.spawn(move || -> Result<ThreadOut> {
                    let mut r = thread_rng(seed, &core.spec.name, t);
                    let mut out = ThreadOut {
                        hists: (0..5).map(|_| hist()).collect(),
                        all: hist(),
                        not_found: [0; 5],
                        scanned: 0,
                        done: 0,
                    };
                    let mut buf = Vec::with_capacity(2048);
                    let mut enc = Vec::with_capacity(2048);
                    // Read the record of `key` and decode it (YCSB's read, all fields).
                    let read = |key: &str, buf: &mut Vec<u8>| -> Result<Option<Record>> {
                        let mut found = false;
                        e.read(&mut |rd| {
                            found = rd.get_into(key.as_bytes(), buf)?;
                            Ok(())
                        })?;
                        if !found {
                            return Ok(None);
                        }
                        let rec = decode_record(buf).with_context(|| format!("record of {key}"))?;
                        ensure!(
                            rec.len() == field_count,
                            "record of {key} has {} fields, not {field_count}",
                            rec.len()
                        );
                        Ok(Some(rec))
                    };
                    let update = |key: &str,
                                  field: Option<usize>,
                                  r: &mut Rng,
                                  buf: &mut Vec<u8>,
                                  enc: &mut Vec<u8>|
                     -> Result<bool> {
                        let new = match field {
                            Some(i) => {
                                let v = core.field_value(r);
                                let Some(mut rec) = read(key, buf)? else { return Ok(false) };
                                let name = &names[i];
                                match rec.iter_mut().find(|f| &f.0 == name) {
                                    Some(f) => f.1 = v,
                                    None => rec.push((name.clone(), v)),
                                }
                                rec
                            }
                            None => core.record(names, r),
                        };
                        encode_record(&new, enc);
                        e.put_one(key.as_bytes(), enc)?;
                        Ok(true)
                    };
                    for _ in 0..mine {
                        if let Some(d) = deadline {
                            if started.elapsed() >= d {
                                timed_out.store(true, Ordering::Relaxed);
                                break;
                            }
                        }
                        let op = core.next_op(&mut r);
                        let kind = op.kind();
                        let t0 = Instant::now();
                        let found = match &op {
                            Op::Read { key } => read(key, &mut buf)?.is_some(),
                            Op::Update { key, field } => update(key, *field, &mut r, &mut buf, &mut enc)?,
                            Op::Insert { key, keynum } => {
                                let rec = core.record(names, &mut r);
                                encode_record(&rec, &mut enc);
                                let res = e.put_one(key.as_bytes(), &enc);
                                core.acknowledge(*keynum)?;
                                res?;
                                true
                            }
                            Op::Scan { key, len } => {
                                let mut n = 0u64;
                                e.read(&mut |rd| {
                                    n = rd.scan_limit(key.as_bytes(), *len as u64, &mut |k, v| {
                                        let rec = decode_record(v).with_context(|| {
                                            format!("record of {} in a scan", String::from_utf8_lossy(k))
                                        })?;
                                        ensure!(rec.len() == field_count, "scanned record has {} fields", rec.len());
                                        Ok(())
                                    })?;
                                    Ok(())
                                })?;
                                out.scanned += n;
                                n > 0
                            }
                            Op::ReadModifyWrite { key, field } => {
                                let a = read(key, &mut buf)?.is_some();
                                let b = update(key, *field, &mut r, &mut buf, &mut enc)?;
                                a && b
                            }
                        };
                        let ns = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                        out.hists[kind.index()].saturating_record(ns.max(1));
                        out.all.saturating_record(ns.max(1));
                        if !found {
                            out.not_found[kind.index()] += 1;
                        }
                        out.done += 1;
                        progress.inc(1);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked"))))
            .collect()
    });
    let elapsed = started.elapsed();
    let outs = results.into_iter().collect::<Result<Vec<_>>>()?;
    Ok((outs, elapsed, timed_out.load(Ordering::Relaxed)))
}

/// Load `spec`'s records into a fresh database of `kind` in `dir` (buff, one transaction per
/// record, one client thread), close it, sync, and check every record by key.
fn load(kind: Kind, spec: &Spec, dir: &Path, seed: u64, dev: Option<&BlockDev>, progress: bool) -> Result<LoadRow> {
    let _ = std::fs::remove_dir_all(dir);
    let core = Core::new(spec.clone())?;
    let names = spec.field_names();
    let n = spec.insert_count.max(0) as u64;
    let pb = Progress::new(progress, n, format!("load {}", kind.name()));
    let e = kind.open(dir, Mode::Buff)?;
    let win = Window::begin(dev);
    let t = Instant::now();
    let mut enc = Vec::with_capacity(2048);
    let mut live = 0u64;
    for i in 0..n as i64 {
        let keynum = spec.insert_start + i;
        let key = spec.key(keynum);
        let rec = load_record(&core, &names, seed, keynum);
        encode_record(&rec, &mut enc);
        live += app_bytes(key.as_bytes(), &enc);
        e.put_one(key.as_bytes(), &enc)?;
        pb.inc(1);
    }
    e.close()?;
    let secs = t.elapsed().as_secs_f64();
    let m = win.end();
    pb.finish();
    let db_bytes = device::disk_usage(dir);
    let files = file_sizes(dir);
    // Read every record back by key from a reopened database.
    let e = kind.open(dir, Mode::Buff)?;
    let mut verified = 0u64;
    let mut buf = Vec::new();
    for i in 0..n as i64 {
        let keynum = spec.insert_start + i;
        let key = spec.key(keynum);
        encode_record(&load_record(&core, &names, seed, keynum), &mut enc);
        let mut found = false;
        e.read(&mut |r| {
            found = r.get_into(key.as_bytes(), &mut buf)?;
            Ok(())
        })?;
        ensure!(found, "{}: loaded record {key} (key number {keynum}) is missing", kind.name());
        ensure!(buf == enc, "{}: loaded record {key} reads back different bytes", kind.name());
        verified += 1;
    }
    let scanned = live_bytes(e.as_ref())?;
    ensure!(scanned == live, "{}: a full scan finds {scanned} live bytes, the load wrote {live}", kind.name());
    e.close()?;
    Ok(LoadRow {
        engine: kind.name().into(),
        records: n,
        secs,
        ops_per_sec: n as f64 / secs.max(1e-9),
        ratio_to_best_peer: None,
        db_bytes,
        live_bytes: live,
        disk_per_live: db_bytes as f64 / live.max(1) as f64,
        device_bytes_per_insert: m.dev_bytes.map(|b| b as f64 / n.max(1) as f64),
        verified,
        files,
    })
}

/// Run one workload on the database in `dir`.
#[allow(clippy::too_many_arguments)]
fn run_workload(
    kind: Kind,
    spec: &Spec,
    dir: &Path,
    mode: Mode,
    threads: usize,
    seed: u64,
    dev: Option<&BlockDev>,
    progress: bool,
) -> Result<RunRow> {
    let core = Core::new(spec.clone())?;
    let e = kind.open(dir, mode)?;
    let pb = Progress::new(
        progress,
        spec.operation_count.max(0) as u64,
        format!("{} {} {} {}t", spec.name, kind.name(), mode.name(), threads),
    );
    let win = Window::begin(dev);
    let (outs, elapsed, timed_out) = run_phase(e.as_ref(), &core, threads, seed, &pb)?;
    let m = win.end();
    pb.finish();
    let live = live_bytes(e.as_ref())?;
    e.close()?;
    let db_bytes = device::disk_usage(dir);
    let files = file_sizes(dir);
    let mut all = hist();
    let mut hists: Vec<Histogram<u64>> = (0..5).map(|_| hist()).collect();
    let (mut nf, mut scanned, mut ops) = ([0u64; 5], 0, 0);
    for o in &outs {
        all.add(&o.all).context("merge histograms")?;
        for (i, h) in o.hists.iter().enumerate() {
            hists[i].add(h).context("merge histograms")?;
            nf[i] += o.not_found[i];
        }
        scanned += o.scanned;
        ops += o.done;
    }
    let mut latency = Vec::new();
    for k in OpKind::ALL {
        if !hists[k.index()].is_empty() {
            latency.push(OpStats::of(k.name(), &hists[k.index()], nf[k.index()]));
        }
    }
    latency.push(OpStats::of("ALL", &all, nf.iter().sum()));
    let write_ops: u64 = OpKind::ALL.iter().filter(|k| k.writes()).map(|k| hists[k.index()].len()).sum();
    let secs = elapsed.as_secs_f64();
    Ok(RunRow {
        workload: spec.name.clone(),
        engine: kind.name().into(),
        mode: mode.name().into(),
        threads,
        ops,
        secs,
        ops_per_sec: ops as f64 / secs.max(1e-9),
        ratio_to_best_peer: None,
        latency,
        write_ops,
        scanned_records: scanned,
        db_bytes,
        live_bytes: live,
        disk_per_live: db_bytes as f64 / live.max(1) as f64,
        device_bytes_per_write_op: match (m.dev_bytes, write_ops) {
            (Some(b), w) if w > 0 => Some(b as f64 / w as f64),
            _ => None,
        },
        timed_out,
        files,
        rounds_ops_per_sec: Vec::new(),
    })
}

/// The settings every workload of a run must share: they use one loaded database.
fn check_shared(specs: &[Spec]) -> Result<()> {
    let Some(a) = specs.first() else { bail!("no workload to run") };
    for b in &specs[1..] {
        let same = a.record_count == b.record_count
            && a.insert_start == b.insert_start
            && a.insert_count == b.insert_count
            && a.field_count == b.field_count
            && a.field_length == b.field_length
            && a.field_length_dist == b.field_length_dist
            && a.field_prefix == b.field_prefix
            && a.ordered == b.ordered
            && a.zero_padding == b.zero_padding;
        ensure!(
            same,
            "workloads {} and {} use one loaded database, so their recordcount, insertstart, insertcount, \
             fieldcount, fieldlength(distribution), fieldnameprefix, insertorder and zeropadding must agree",
            a.name,
            b.name
        );
    }
    Ok(())
}

/// One row per (workload, engine, mode, threads), in first-seen order: the engine's median
/// round by ops/s (`report::median_of`), listing every round's ops/s when there were several.
pub fn median_runs(rows: Vec<RunRow>) -> Vec<RunRow> {
    let mut groups: Vec<Vec<RunRow>> = Vec::new();
    for r in rows {
        let same =
            |g: &RunRow| g.workload == r.workload && g.engine == r.engine && g.mode == r.mode && g.threads == r.threads;
        match groups.iter_mut().find(|g| same(&g[0])) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let several = g.len() > 1;
            let (mut m, all) = crate::report::median_of(g, |r| r.ops_per_sec);
            if several {
                m.rounds_ops_per_sec = all;
            }
            m
        })
        .collect()
}

/// Fill in the ratio columns: each row over the best peer of its (workload, mode, threads).
pub fn set_ratios(rep: &mut YcsbReport) {
    let is_peer = |e: &str| Kind::from_name(e).is_some_and(|k| !k.is_jackdaw());
    let best_load = rep.loads.iter().filter(|l| is_peer(&l.engine)).map(|l| l.ops_per_sec).fold(0.0f64, f64::max);
    for l in &mut rep.loads {
        l.ratio_to_best_peer = (best_load > 0.0).then(|| l.ops_per_sec / best_load);
    }
    let keys: Vec<(String, String, usize)> =
        rep.runs.iter().map(|r| (r.workload.clone(), r.mode.clone(), r.threads)).collect();
    for (w, m, t) in keys {
        let same = |r: &RunRow| r.workload == w && r.mode == m && r.threads == t;
        let best =
            rep.runs.iter().filter(|r| same(r) && is_peer(&r.engine)).map(|r| r.ops_per_sec).fold(0.0f64, f64::max);
        for r in rep.runs.iter_mut().filter(|r| same(r)) {
            r.ratio_to_best_peer = (best > 0.0).then(|| r.ops_per_sec / best);
        }
    }
}

/// Run YCSB as `cfg` says; print as it goes (when `cfg.print`), and write the JSON and the
/// report directory when asked.
pub fn run(cfg: &YcsbConfig) -> Result<YcsbReport> {
    let started = Instant::now();
    check_shared(&cfg.workloads)?;
    ensure!(!cfg.threads.is_empty() && cfg.threads.iter().all(|t| *t >= 1), "--threads: at least one count >= 1");
    ensure!(!cfg.modes.is_empty(), "--durability: at least one of sync, buff");
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
    let work = crate::cleanup::WorkDir::create(&cfg.dir, "ycsb", cfg.keep)?;
    let run_dir = work.path().to_path_buf();
    let first = &cfg.workloads[0];
    let mut rep = YcsbReport {
        seed: cfg.seed,
        scale: cfg.scale.clone(),
        dir: cfg.dir.display().to_string(),
        device: dev.as_ref().map(|d| format!("{} ({}:{})", d.name, d.major, d.minor)),
        record_count: first.record_count,
        operation_count: first.operation_count,
        sync_operation_count: cfg.sync_operation_count.filter(|n| *n < first.operation_count),
        workloads: cfg.workloads.iter().map(|w| w.name.clone()).collect(),
        threads: cfg.threads.clone(),
        modes: cfg.modes.iter().map(|m| m.name().to_string()).collect(),
        page_cache: if cfg.drop_caches {
            "dropped after restoring the loaded files, before each pass (/proc/sys/vm/drop_caches as root, \
             else posix_fadvise(DONTNEED) on the database files)"
                .into()
        } else {
            "not dropped (--no-drop-caches)".into()
        },
        ..YcsbReport::default()
    };
    for w in &cfg.workloads {
        for u in &w.unknown {
            rep.unknown_properties.push(format!("workload {}: {u}", w.name));
        }
    }
    let mut engines = Vec::new();
    for k in &cfg.engines {
        if let Some(why) = k.unavailable() {
            eprintln!("SKIPPED: {}: {why}", k.name());
            rep.failures.push(YcsbFailure { engine: k.name().into(), what: "all".into(), reason: why.into() });
        } else {
            engines.push(*k);
            rep.engines.push(k.name().into());
        }
    }
    if cfg.print {
        println!("# jackdaw-bench ycsb\n");
        println!(
            "seed {} · {} records · {} operations{}\nworkloads {} · threads {:?} · durability {}\ndir {} ({})",
            cfg.seed,
            first.record_count,
            first.operation_count,
            rep.sync_operation_count.map_or_else(String::new, |n| format!(" ({n} in sync)")),
            rep.workloads.join(","),
            cfg.threads,
            rep.modes.join(","),
            rep.dir,
            rep.device.as_deref().unwrap_or("no block device")
        );
        if cfg.drop_caches {
            println!(
                "The page cache is dropped before each pass: the whole machine's as root\n\
                 (echo 3 > /proc/sys/vm/drop_caches), else the database files' pages (posix_fadvise).\n\
                 --no-drop-caches keeps it."
            );
        }
        println!();
    }

    // Load every engine once.
    let mut loaded: Vec<(Kind, PathBuf)> = Vec::new();
    for &kind in &engines {
        let dir = run_dir.join("loaded").join(kind.name());
        device::sync_all();
        let res = load(kind, first, &dir, cfg.seed, dev.as_ref(), cfg.progress);
        match res {
            Ok(row) => {
                eprintln!(
                    "  load {:<8} {:>10} rec/s  {:>8.2} s  db {}  disk÷live {:.2}  verified {}",
                    kind.name(),
                    crate::report::si(row.ops_per_sec),
                    row.secs,
                    crate::report::bytes(row.db_bytes as f64),
                    row.disk_per_live,
                    row.verified
                );
                let e = kind.open(&dir, Mode::Buff)?;
                let note = format!(
                    "durability none/buff/sync: {} / {} / {}; {}",
                    kind.mode_mapping(Mode::None),
                    kind.mode_mapping(Mode::Buff),
                    kind.mode_mapping(Mode::Sync),
                    e.concurrency()
                );
                e.close()?;
                rep.engine_notes.push((kind.name().into(), note));
                rep.loads.push(row);
                loaded.push((kind, dir));
            }
            Err(e) => {
                let reason = format!("{e:#}");
                eprintln!("FAILED: {} load: {reason}", kind.name());
                rep.failures.push(YcsbFailure { engine: kind.name().into(), what: "load".into(), reason });
            }
        }
    }

    // Passes: durability × threads, each in `repeat` rounds; every engine restored from its
    // loaded copy before each round, the first engine rotating from round to round.
    let mut said_drop = false;
    let rounds = cfg.repeat.max(1);
    rep.rounds = rounds;
    let mut turn = 0;
    for &mode in &cfg.modes {
        for &threads in &cfg.threads {
            let mut failed: Vec<Kind> = Vec::new();
            for round in 0..rounds {
                let mut order: Vec<(Kind, PathBuf)> =
                    loaded.iter().filter(|(k, _)| !failed.contains(k)).cloned().collect();
                if !order.is_empty() {
                    let n = order.len();
                    order.rotate_left(turn % n);
                }
                turn += 1;
                for (kind, src) in &order {
                    let work = run_dir.join("work").join(kind.name());
                    let _ = std::fs::remove_dir_all(&work);
                    copy_dir(src, &work)?;
                    if cfg.drop_caches {
                        if !said_drop && !cfg.print {
                            eprintln!("dropping the page cache before each pass (--no-drop-caches keeps it)");
                        }
                        said_drop = true;
                        device::drop_cache(&work)?;
                    } else {
                        device::sync_all();
                    }
                    device::settle(dev.as_ref(), Duration::from_millis(2_000));
                    for spec in &cfg.workloads {
                        let mut spec = spec.clone();
                        if let (Mode::Sync, Some(n)) = (mode, cfg.sync_operation_count) {
                            spec.operation_count = spec.operation_count.min(n);
                        }
                        let spec = &spec;
                        match run_workload(*kind, spec, &work, mode, threads, cfg.seed, dev.as_ref(), cfg.progress) {
                            Ok(row) => {
                                eprintln!(
                                    "  {:<3} {:<8} {:<4} {:>2}t {:>10} ops/s  {:>8.3} s{}",
                                    row.workload,
                                    row.engine,
                                    row.mode,
                                    row.threads,
                                    crate::report::si(row.ops_per_sec),
                                    row.secs,
                                    if rounds > 1 { format!("  (round {})", round + 1) } else { String::new() }
                                );
                                rep.runs.push(row);
                            }
                            Err(e) => {
                                let reason = format!("{e:#}");
                                let what = format!("workload {} ({}, {} threads)", spec.name, mode.name(), threads);
                                eprintln!("FAILED: {} {what}: {reason}", kind.name());
                                rep.failures.push(YcsbFailure { engine: kind.name().into(), what, reason });
                                failed.push(*kind);
                                break;
                            }
                        }
                    }
                    let _ = std::fs::remove_dir_all(&work);
                }
            }
        }
    }
    rep.runs = median_runs(std::mem::take(&mut rep.runs));
    drop(work);
    set_ratios(&mut rep);
    rep.total_secs = started.elapsed().as_secs_f64();
    if cfg.print {
        print!("{}", super::report::summary(&rep));
        if cfg.verbose {
            println!();
            print!("{}", super::report::detail(&rep));
        } else {
            println!("\n(--verbose: latency per operation type, sizes and device bytes per pass)");
        }
        let f = super::report::failures(&rep);
        if f.is_empty() {
            println!("\nall engines ran every workload (seed {}, {:.0} s)", rep.seed, rep.total_secs);
        } else {
            println!("\nFailed or skipped (seed {}):\n{f}", rep.seed);
        }
    }
    if let Some(p) = &cfg.json {
        let s = serde_json::to_string_pretty(&rep)?;
        std::fs::write(p, s).with_context(|| format!("write {}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(d) = &cfg.report {
        super::report::write_dir(&rep, d)?;
        eprintln!("wrote {}/report.md and its charts", d.display());
    }
    Ok(rep)
}
