//! The workloads of WORKLOADS.md, exactly as named there, and how each is run on one engine.

use crate::device::{disk_usage, disk_usage_split, drop_cache, BlockDev, DropMethod};
use crate::engine::{Engine, JackdawCommit, Mode, ReadOps};
use crate::engines::Kind;
use crate::gen::{rnd_key, seq_key, value_sum, Key, Rng, Values};
use crate::measure::{Measured, Progress, Stopwatch, Window};
use crate::report::{JackdawPerTx, Latency, Row};
use anyhow::{bail, ensure, Context, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Operation counts of every workload. `full` is WORKLOADS.md; `quick` is 10× smaller; `tiny`
/// (~1,000 operations) is for the smoke test.
#[derive(Debug, Clone)]
pub struct Sizes {
    pub label: &'static str,
    /// fill-seq and the read workloads: items.
    pub fill_n: u64,
    /// fill-rnd-tx, fill-rnd-1m, free-space-control: transactions (of `tx_size`).
    pub tx_count: u64,
    pub tx_size: u64,
    /// fill-seq-tx: transactions (of `tx_size`).
    pub seq_tx_count: u64,
    /// large-values: values of 64 KiB (in transactions of 10) and of 8 MiB (one per transaction).
    pub large_small_n: u64,
    pub large_big_n: u64,
    /// commit-syscalls: measured commits.
    pub syscall_commits: u64,
    /// commit-snapshots: measured commits in each phase, and snapshots held open in the second.
    pub snapshot_commits: u64,
    pub snapshots: u64,
    /// disk limits: latency samples and sequential bytes.
    pub disk_iters: u64,
    pub disk_seq_bytes: u64,
    /// Longest wait for a quiet device before each engine's run (`device::settle`).
    pub settle_ms: u64,
}

impl Sizes {
    pub fn full() -> Sizes {
        Sizes {
            label: "full",
            fill_n: 1_000_000,
            tx_count: 10_000,
            tx_size: 100,
            seq_tx_count: 100_000,
            large_small_n: 1_000,
            large_big_n: 10,
            syscall_commits: 1_000,
            snapshot_commits: 10_000,
            snapshots: 10_000,
            disk_iters: 2_000,
            disk_seq_bytes: 1 << 30,
            settle_ms: 10_000,
        }
    }
    pub fn quick() -> Sizes {
        Sizes {
            label: "quick (10× smaller)",
            fill_n: 100_000,
            tx_count: 1_000,
            tx_size: 100,
            seq_tx_count: 10_000,
            large_small_n: 100,
            large_big_n: 1,
            syscall_commits: 200,
            snapshot_commits: 2_000,
            snapshots: 10_000,
            disk_iters: 500,
            disk_seq_bytes: 256 << 20,
            settle_ms: 10_000,
        }
    }
    pub fn tiny() -> Sizes {
        Sizes {
            label: "tiny (smoke test)",
            fill_n: 1_000,
            tx_count: 10,
            tx_size: 100,
            seq_tx_count: 10,
            large_small_n: 20,
            large_big_n: 1,
            syscall_commits: 10,
            snapshot_commits: 50,
            snapshots: 100,
            disk_iters: 10,
            disk_seq_bytes: 8 << 20,
            settle_ms: 1_000,
        }
    }
}

pub const VALUE_LEN: usize = 100;
pub const SEQ_TX_VALUE_LEN: usize = 128;
pub const LARGE_SMALL_LEN: usize = 64 << 10;
pub const LARGE_BIG_LEN: usize = 8 << 20;
pub const LARGE_SMALL_PER_TX: u64 = 10;
pub const PARALLEL: [usize; 5] = [1, 2, 4, 8, 16];

/// One concrete workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// The physical limits of the disk (rows of their own).
    Disk,
    FillSeq(Mode),
    ReadSeq {
        cold: bool,
    },
    ReadRnd {
        cold: bool,
    },
    ReadParallel {
        threads: usize,
        cold: bool,
    },
    FillRndTx(Mode),
    /// `read-rnd` on the `fill-rnd-tx` (`buff`) database right after it is written, neither
    /// closed nor reopened: the reads find the last commits' pages where the engine keeps them
    /// until its data file has them (for Jackdaw, the page table) — issue 21's baseline.
    ReadRndAfterRnd,
    FillSeqTx,
    FillRnd1m,
    LargeValues,
    FreeSpaceControl,
    CommitSyscalls,
    /// Jackdaw only (the harness cannot hold other engines' snapshots): commit p50 with none and
    /// with many open snapshots (faults issue §6).
    CommitSnapshots,
}

impl Workload {
    /// Every workload, in the order a run executes them.
    pub fn all() -> Vec<Workload> {
        let mut v = vec![
            Workload::Disk,
            Workload::FillSeq(Mode::None),
            Workload::FillSeq(Mode::Buff),
            Workload::FillSeq(Mode::Sync),
        ];
        for cold in [false, true] {
            v.push(Workload::ReadSeq { cold });
            v.push(Workload::ReadRnd { cold });
            for threads in PARALLEL {
                v.push(Workload::ReadParallel { threads, cold });
            }
        }
        v.extend([
            Workload::FillRndTx(Mode::Buff),
            Workload::FillRndTx(Mode::Sync),
            Workload::ReadRndAfterRnd,
            Workload::FillSeqTx,
            Workload::FillRnd1m,
            Workload::LargeValues,
            Workload::FreeSpaceControl,
            Workload::CommitSyscalls,
            Workload::CommitSnapshots,
        ]);
        v
    }

    /// The name rows carry (large-values reports four rows under `large-values-*`).
    pub fn name(&self) -> String {
        let c = |cold: bool| if cold { "-cold" } else { "" };
        match self {
            Workload::Disk => "disk".into(),
            Workload::FillSeq(m) => format!("fill-seq-{}", m.name()),
            Workload::ReadSeq { cold } => format!("read-seq{}", c(*cold)),
            Workload::ReadRnd { cold } => format!("read-rnd{}", c(*cold)),
            Workload::ReadParallel { threads, cold } => {
                format!("read-parallel-{threads}{}", c(*cold))
            }
            Workload::FillRndTx(m) => format!("fill-rnd-tx-{}", m.name()),
            Workload::ReadRndAfterRnd => "read-rnd-after-rnd".into(),
            Workload::FillSeqTx => "fill-seq-tx-sync".into(),
            Workload::FillRnd1m => "fill-rnd-1m".into(),
            Workload::LargeValues => "large-values".into(),
            Workload::FreeSpaceControl => "free-space-control".into(),
            Workload::CommitSyscalls => "commit-syscalls".into(),
            Workload::CommitSnapshots => "commit-snapshots".into(),
        }
    }

    /// The WORKLOADS.md name this workload is a case of.
    pub fn group(&self) -> &'static str {
        match self {
            Workload::Disk => "disk",
            Workload::FillSeq(_) => "fill-seq",
            Workload::ReadSeq { cold: false } => "read-seq",
            Workload::ReadRnd { cold: false } => "read-rnd",
            Workload::ReadParallel { cold: false, .. } => "read-parallel-N",
            Workload::ReadSeq { cold: true }
            | Workload::ReadRnd { cold: true }
            | Workload::ReadParallel { cold: true, .. } => "read-*-cold",
            Workload::FillRndTx(_) => "fill-rnd-tx",
            Workload::ReadRndAfterRnd => "read-rnd-after-rnd",
            Workload::FillSeqTx => "fill-seq-tx",
            Workload::FillRnd1m => "fill-rnd-1m",
            Workload::LargeValues => "large-values",
            Workload::FreeSpaceControl => "free-space-control",
            Workload::CommitSyscalls => "commit-syscalls",
            Workload::CommitSnapshots => "commit-snapshots",
        }
    }

    pub fn is_read(&self) -> bool {
        matches!(self, Workload::ReadSeq { .. } | Workload::ReadRnd { .. } | Workload::ReadParallel { .. })
    }
}

fn glob(pat: &str, s: &str) -> bool {
    match pat.split_once('*') {
        None => pat == s,
        Some((pre, rest)) => {
            if !s.starts_with(pre) {
                return false;
            }
            let s = &s[pre.len()..];
            (0..=s.len()).any(|i| s.is_char_boundary(i) && glob(rest, &s[i..]))
        }
    }
}

/// The workloads selected by `--workloads` (names, WORKLOADS.md group names, `*` globs, or
/// `all`), in run order. A selector that matches nothing is an error.
pub fn select(selectors: &[String]) -> Result<Vec<Workload>> {
    let all = Workload::all();
    if selectors.is_empty() || selectors.iter().any(|s| s == "all") {
        return Ok(all);
    }
    let mut keep = vec![false; all.len()];
    for sel in selectors {
        let mut hit = false;
        for (i, w) in all.iter().enumerate() {
            let name = w.name();
            let m = name == *sel
                || w.group() == sel
                || glob(sel, &name)
                || (sel == "read-parallel" && matches!(w, Workload::ReadParallel { cold: false, .. }))
                || (sel == "fill-seq-tx" && *w == Workload::FillSeqTx);
            if m {
                keep[i] = true;
                hit = true;
            }
        }
        if !hit {
            let names: Vec<String> = all.iter().map(|w| w.name()).collect();
            bail!("no workload matches {sel:?}; workloads: {} (or a group: fill-seq, read-parallel-N, read-*-cold, fill-rnd-tx, ...)", names.join(", "));
        }
    }
    Ok(all.into_iter().zip(keep).filter(|(_, k)| *k).map(|(w, _)| w).collect())
}

/// How much a write workload checks what the engine stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    Off,
    /// After the timed part, with the engine still open: a full ordered scan compared with the
    /// model, and point gets of up to 10,000 present and deleted keys.
    Scan,
    /// `Scan`, point gets of every key, and the same again after close and reopen.
    Full,
}

/// How cold reads drop the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColdMethod {
    /// /proc/sys/vm/drop_caches when writable, else posix_fadvise.
    Auto,
    /// posix_fadvise(DONTNEED) on the database files only.
    Fadvise,
}

/// Everything a workload run needs, and what runs share (the filled database for reads).
pub struct Ctx {
    pub root: PathBuf,
    pub dev: Option<BlockDev>,
    pub seed: u64,
    pub sizes: Sizes,
    pub verify: Verify,
    pub progress: bool,
    pub cold: ColdMethod,
    /// The binary to run under `strace -c -f` for commit-syscalls (None: engine counters only).
    pub strace_exe: Option<PathBuf>,
    pub keep: bool,
    /// How the last cold read dropped the cache.
    pub cold_used: Option<DropMethod>,
    seq_db: HashMap<Kind, PathBuf>,
    fill_vals: Option<Arc<Values>>,
}

impl Ctx {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        root: PathBuf,
        dev: Option<BlockDev>,
        seed: u64,
        sizes: Sizes,
        verify: Verify,
        progress: bool,
        cold: ColdMethod,
        strace_exe: Option<PathBuf>,
        keep: bool,
    ) -> Ctx {
        Ctx {
            root,
            dev,
            seed,
            sizes,
            verify,
            progress,
            cold,
            strace_exe,
            keep,
            cold_used: None,
            seq_db: HashMap::new(),
            fill_vals: None,
        }
    }

    fn fresh_dir(&self, workload: &str, kind: Kind) -> Result<PathBuf> {
        let d = self.root.join(workload).join(kind.name());
        if d.exists() {
            std::fs::remove_dir_all(&d).with_context(|| format!("remove {}", d.display()))?;
        }
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }

    fn done_with(&self, dir: &Path) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    fn bar(&self, len: u64, label: String) -> Progress {
        Progress::new(self.progress, len, label)
    }

    /// The values of fill-seq (and so of every read workload), generated once.
    fn fill_values(&mut self) -> Arc<Values> {
        if self.fill_vals.is_none() {
            let mut rng = Rng::stream(self.seed, "fill-seq-values");
            self.fill_vals = Some(Arc::new(Values::new(&mut rng, self.sizes.fill_n as usize, VALUE_LEN)));
        }
        self.fill_vals.clone().expect("set")
    }

    /// Remove the databases kept for the read workloads.
    pub fn cleanup(&mut self) {
        for (_, d) in self.seq_db.drain() {
            if !self.keep {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }

    /// Run `w` on engine `kind`; returns its rows.
    pub fn run(&mut self, w: Workload, kind: Kind) -> Result<Vec<Row>> {
        let rows = match w {
            Workload::Disk => unreachable!("disk limits are not an engine workload"),
            Workload::FillSeq(mode) => vec![self.fill_seq(kind, mode)?],
            Workload::ReadSeq { cold } => vec![self.reads(w, kind, ReadOrder::Seq, 1, cold)?],
            Workload::ReadRnd { cold } => vec![self.reads(w, kind, ReadOrder::Rnd, 1, cold)?],
            Workload::ReadParallel { threads, cold } => {
                vec![self.reads(w, kind, ReadOrder::Seq, threads, cold)?]
            }
            Workload::FillRndTx(mode) => vec![self.fill_rnd_tx(w, kind, mode, "fill-rnd-tx")?],
            Workload::ReadRndAfterRnd => vec![self.read_rnd_after_rnd(kind)?],
            Workload::FillSeqTx => vec![self.fill_seq_tx(kind)?],
            Workload::FillRnd1m => vec![self.fill_rnd_tx(w, kind, Mode::Sync, "fill-rnd-1m")?],
            Workload::LargeValues => self.large_values(kind)?,
            Workload::FreeSpaceControl => vec![self.free_space_control(kind)?],
            Workload::CommitSyscalls => vec![self.commit_syscalls(kind)?],
            Workload::CommitSnapshots => self.commit_snapshots(kind)?.into_iter().collect(),
        };
        Ok(rows)
    }

    // ---------------------------------------------------------------- fill-seq

    fn fill_seq(&mut self, kind: Kind, mode: Mode) -> Result<Row> {
        let name = Workload::FillSeq(mode).name();
        let n = self.sizes.fill_n;
        let vals = self.fill_values();
        let keys: Vec<Key> = (0..n).map(seq_key).collect();
        let plan = Plan::puts(keys, vec![vals.clone()], n, n);
        let dir = self.fresh_dir(&name, kind)?;
        let pb = self.bar(n, format!("{name} {}", kind.name()));

        let win = Window::begin(self.dev.as_ref());
        let mut sw = Stopwatch::start();
        let eng = kind.open(&dir, mode)?;
        let st = plan.run(&*eng, 0..plan.txs(), &pb)?;
        sw.pause();
        pb.finish();
        plan.verify(&*eng, kind, self.verify)?;
        sw.resume();
        eng.close()?;
        let el = sw.elapsed();
        let m = win.end();
        if self.verify == Verify::Full {
            plan.verify_reopened(kind, &dir, mode)?;
        }

        let mut row = make_row(&name, kind, Some(mode), n, 1, el, m);
        set_space(&mut row, kind, &dir, Some(plan.live_bytes()));
        row.jackdaw = st.jackdaw.map(|j| JackdawPerTx::of(&j, 1));
        row.notes = "one transaction; open and close timed".into();
        if mode == Mode::Sync {
            self.seq_db.insert(kind, dir);
        } else {
            self.done_with(&dir);
        }
        Ok(row)
    }

    /// The fill-seq (sync) database of `kind`, built untimed if fill-seq-sync did not run.
    fn seq_db(&mut self, kind: Kind) -> Result<PathBuf> {
        if let Some(d) = self.seq_db.get(&kind) {
            return Ok(d.clone());
        }
        let n = self.sizes.fill_n;
        let vals = self.fill_values();
        let keys: Vec<Key> = (0..n).map(seq_key).collect();
        let plan = Plan::puts(keys, vec![vals.clone()], n, n);
        let dir = self.fresh_dir("fill-seq-sync", kind)?;
        let pb = self.bar(n, format!("(setup: fill-seq) {}", kind.name()));
        let eng = kind.open(&dir, Mode::Sync)?;
        plan.run(&*eng, 0..1, &pb)?;
        pb.finish();
        plan.verify(&*eng, kind, self.verify)?;
        eng.close()?;
        self.seq_db.insert(kind, dir.clone());
        Ok(dir)
    }

    // ---------------------------------------------------------------- reads

    fn reads(&mut self, w: Workload, kind: Kind, order: ReadOrder, threads: usize, cold: bool) -> Result<Row> {
        let name = w.name();
        let dir = self.seq_db(kind)?;
        let vals = self.fill_values();
        let n = self.sizes.fill_n as usize;
        let keys: Vec<Key> = (0..n as u64).map(seq_key).collect();
        let mut idx: Vec<u32> = (0..n as u32).collect();
        if order == ReadOrder::Rnd {
            Rng::stream(self.seed, "read-rnd").shuffle(&mut idx);
        }
        let expected = (0..n).fold(0u64, |a, i| a.wrapping_add(value_sum(vals.get(i))));
        let mut notes = String::new();
        if cold {
            let how = self.drop_for_cold(&dir)?;
            self.cold_used = Some(how);
            notes = format!("cache dropped: {}", how.describe());
        }
        let eng = kind.open(&dir, Mode::Sync)?;
        let pb = self.bar(n as u64, format!("{name} {}", kind.name()));
        let parts: Vec<&[u32]> = idx.chunks(n.div_ceil(threads).max(1)).collect();
        let win = cold.then(|| Window::begin(self.dev.as_ref()));
        let faults = crate::measure::page_faults();
        let t0 = Instant::now();
        let sums: Vec<Result<(u64, u64)>> = if threads == 1 {
            vec![read_part(&*eng, &keys, parts.first().copied().unwrap_or(&[]), &pb)]
        } else {
            std::thread::scope(|s| {
                let hs: Vec<_> = parts
                    .iter()
                    .map(|p| {
                        let (eng, keys, pb) = (&*eng, &keys, &pb);
                        s.spawn(move || read_part(eng, keys, p, pb))
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("reader thread panicked"))))
                    .collect()
            })
        };
        let el = t0.elapsed();
        let (major, minor) = crate::measure::page_faults();
        let faults = (major.saturating_sub(faults.0), minor.saturating_sub(faults.1));
        let seen = win.map(|w| w.end());
        pb.finish();
        eng.close()?;
        let (mut sum, mut found) = (0u64, 0u64);
        for r in sums {
            let (s, f) = r?;
            sum = sum.wrapping_add(s);
            found += f;
        }
        ensure!(found == n as u64, "{}: {name}: found {found} of {n} keys", kind.name());
        ensure!(
            sum == expected,
            "{}: {name}: values read back differ from those written (checksum mismatch)",
            kind.name()
        );
        let mut row = make_row(&name, kind, None, n as u64, threads as u64, el, Measured::default());
        row.device_bytes_per_op = None;
        row.device_flushes_per_tx = None;
        row.proc_write_bytes_per_op = None;
        let db = if cold { disk_usage(&dir) } else { 0 };
        if let Some(m) = seen.filter(|m| m.dev_read_bytes.is_some()) {
            row.device_read_bytes = m.dev_read_bytes;
            notes = format!("{notes}; {}", cold_read_note(&m, db, faults));
        }
        if cold {
            // The control: the same files read plainly after the same drop, this round.
            self.drop_for_cold(&dir)?;
            let ctl = crate::device::read_files_mb_per_sec(&dir)?;
            row.mb_per_sec = Some(db as f64 / el.as_secs_f64().max(1e-9) / 1e6);
            row.cold_control_mb_per_sec = Some(ctl);
            notes = format!("{notes}; {ctl:.0} MB/s for a plain read of the files after a drop (control)");
        }
        if threads > 1 {
            notes = if notes.is_empty() { format!("{threads} threads") } else { format!("{threads} threads; {notes}") };
        }
        row.notes = notes;
        Ok(row)
    }

    /// Drop the page cache for a cold read of `dir`, as `--fadvise` / `--no-drop-caches` say.
    fn drop_for_cold(&self, dir: &Path) -> Result<DropMethod> {
        Ok(match self.cold {
            ColdMethod::Auto => drop_cache(dir)?,
            ColdMethod::Fadvise => {
                crate::device::sync_all();
                crate::device::drop_cache_fadvise(dir)?;
                DropMethod::Fadvise
            }
        })
    }

    // ---------------------------------------------------------------- multi-transaction fills

    fn fill_rnd_tx(&mut self, w: Workload, kind: Kind, mode: Mode, stream: &str) -> Result<Row> {
        let name = w.name();
        let plan = self.rnd_tx_plan(stream);
        self.run_multi(&name, kind, mode, &plan, "")
    }

    /// `fill-rnd-tx`'s plan: `tx_count` transactions of `tx_size` random keys.
    fn rnd_tx_plan(&self, stream: &str) -> Plan {
        let (txs, per) = (self.sizes.tx_count, self.sizes.tx_size);
        let n = txs * per;
        let mut rng = Rng::stream(self.seed, stream);
        let keys: Vec<Key> = (0..n).map(|_| rnd_key(&mut rng)).collect();
        let vals = Values::new(&mut rng, n as usize, VALUE_LEN);
        Plan::puts(keys, vec![Arc::new(vals)], n, per)
    }

    /// Write `fill-rnd-tx`'s transactions (`buff`, untimed), then time a `read-rnd` of every key
    /// present, in a random order, in the same open environment.
    fn read_rnd_after_rnd(&mut self, kind: Kind) -> Result<Row> {
        let name = Workload::ReadRndAfterRnd.name();
        let plan = self.rnd_tx_plan("fill-rnd-tx");
        let dir = self.fresh_dir(&name, kind)?;
        let eng = kind.open(&dir, Mode::Buff)?;
        let pb = self.bar(plan.ops.len() as u64, format!("(setup: fill-rnd-tx-buff) {}", kind.name()));
        plan.run(&*eng, 0..plan.txs(), &pb)?;
        pb.finish();
        let mut keys = Vec::new();
        let mut expected = 0u64;
        for (k, last) in plan.model() {
            if let Some(i) = last {
                keys.push(k);
                expected = expected.wrapping_add(value_sum(plan.value(&plan.ops[i])));
            }
        }
        let n = keys.len();
        let mut idx: Vec<u32> = (0..n as u32).collect();
        Rng::stream(self.seed, "read-rnd-after-rnd").shuffle(&mut idx);
        let pb = self.bar(n as u64, format!("{name} {}", kind.name()));
        let t0 = Instant::now();
        let (sum, found) = read_part(&*eng, &keys, &idx, &pb)?;
        let el = t0.elapsed();
        pb.finish();
        eng.close()?;
        ensure!(found == n as u64, "{}: {name}: found {found} of {n} keys", kind.name());
        ensure!(
            sum == expected,
            "{}: {name}: values read back differ from those written (checksum mismatch)",
            kind.name()
        );
        let mut row = make_row(&name, kind, None, n as u64, 1, el, Measured::default());
        row.device_bytes_per_op = None;
        row.device_flushes_per_tx = None;
        row.proc_write_bytes_per_op = None;
        row.notes = "fill-rnd-tx-buff written, then read at once (not reopened)".into();
        self.done_with(&dir);
        Ok(row)
    }

    fn fill_seq_tx(&mut self, kind: Kind) -> Result<Row> {
        let name = Workload::FillSeqTx.name();
        let (txs, per) = (self.sizes.seq_tx_count, self.sizes.tx_size);
        let n = txs * per;
        let mut rng = Rng::stream(self.seed, "fill-seq-tx");
        let keys: Vec<Key> = (0..n).map(seq_key).collect();
        let vals = Values::new(&mut rng, n as usize, SEQ_TX_VALUE_LEN);
        let plan = Plan::puts(keys, vec![Arc::new(vals)], n, per);
        self.run_multi(&name, kind, Mode::Sync, &plan, "16 B keys, 128 B values")
    }

    /// Open untimed, run every transaction of `plan` timed, verify, close; the device window
    /// covers the transactions and the close (which is where deferred writes land).
    fn run_multi(&mut self, name: &str, kind: Kind, mode: Mode, plan: &Plan, notes: &str) -> Result<Row> {
        let dir = self.fresh_dir(name, kind)?;
        let eng = kind.open(&dir, mode)?;
        let pb = self.bar(plan.ops.len() as u64, format!("{name} {}", kind.name()));
        let win = Window::begin(self.dev.as_ref());
        let t0 = Instant::now();
        let mut st = plan.run(&*eng, 0..plan.txs(), &pb)?;
        let el = t0.elapsed();
        pb.finish();
        plan.verify(&*eng, kind, self.verify)?;
        eng.close()?;
        let m = win.end();
        if self.verify == Verify::Full {
            plan.verify_reopened(kind, &dir, mode)?;
        }
        let mut row = make_row(name, kind, Some(mode), plan.ops.len() as u64, plan.txs() as u64, el, m);
        set_space(&mut row, kind, &dir, Some(plan.live_bytes()));
        row.latency = Latency::of(&mut st.commit);
        row.jackdaw = st.jackdaw.map(|j| JackdawPerTx::of(&j, plan.txs() as u64));
        row.notes = join_notes(&[notes, "device bytes include close()"]);
        self.done_with(&dir);
        Ok(row)
    }

    // ---------------------------------------------------------------- large-values

    fn large_values(&mut self, kind: Kind) -> Result<Vec<Row>> {
        let (ns, nb) = (self.sizes.large_small_n, self.sizes.large_big_n);
        let mut rng = Rng::stream(self.seed, "large-values");
        let small = Values::new(&mut rng, ns as usize, LARGE_SMALL_LEN);
        let big = Values::new(&mut rng, nb as usize, LARGE_BIG_LEN);
        let keys: Vec<Key> = (0..ns + nb).map(seq_key).collect();
        let mut ops: Vec<Op> = (0..ns).map(|i| Op::Put { key: i as u32, pool: 0, val: i as u32 }).collect();
        ops.extend((0..nb).map(|i| Op::Put { key: (ns + i) as u32, pool: 1, val: i as u32 }));
        let mut bounds: Vec<usize> =
            (0..ns.div_ceil(LARGE_SMALL_PER_TX)).map(|t| ((t + 1) * LARGE_SMALL_PER_TX).min(ns) as usize).collect();
        let small_txs = bounds.len();
        bounds.extend((0..nb).map(|i| (ns + i + 1) as usize));
        let plan = Plan { keys, pools: vec![Arc::new(small), Arc::new(big)], ops, bounds };

        let dir = self.fresh_dir("large-values", kind)?;
        let eng = kind.open(&dir, Mode::Sync)?;
        let mut rows = Vec::new();
        for (label, txr, count, len) in
            [("64k", 0..small_txs, ns, LARGE_SMALL_LEN), ("8m", small_txs..plan.txs(), nb, LARGE_BIG_LEN)]
        {
            let name = format!("large-values-write-{label}");
            let pb = self.bar(count, format!("{name} {}", kind.name()));
            let win = Window::begin(self.dev.as_ref());
            let t0 = Instant::now();
            let mut st = plan.run(&*eng, txr.clone(), &pb)?;
            let el = t0.elapsed();
            pb.finish();
            let m = win.end();
            let mut row = make_row(&name, kind, Some(Mode::Sync), count, txr.len() as u64, el, m);
            row.mb_per_sec = Some((count as usize * len) as f64 / el.as_secs_f64() / 1e6);
            row.latency = Latency::of(&mut st.commit);
            row.jackdaw = st.jackdaw.map(|j| JackdawPerTx::of(&j, txr.len() as u64));
            row.notes = if label == "64k" { "1 tx = 10 × 64 KiB".into() } else { "1 tx = 1 × 8 MiB".into() };
            rows.push(row);
        }
        // Read every value back, in key order, one read transaction.
        let total = ns + nb;
        let expected: u64 = plan.ops.iter().fold(0u64, |a, op| a.wrapping_add(value_sum(plan.value(op))));
        let all: Vec<u32> = (0..total as u32).collect();
        // Time one read of every value and check what it summed.
        let timed = |pb: Progress, read: &mut dyn FnMut(&Progress) -> Result<(u64, u64)>| -> Result<Duration> {
            let t0 = Instant::now();
            let (sum, found) = read(&pb)?;
            let el = t0.elapsed();
            pb.finish();
            ensure!(
                found == total && sum == expected,
                "{}: large-values read back wrong data ({found} of {total} found)",
                kind.name()
            );
            Ok(el)
        };
        // The values are copied into one buffer of the largest value's size whose pages the
        // process has already touched, for every engine alike: otherwise the figure depends on
        // where the allocator finds 8 MiB after the engine's writes (an `mmap` of fresh pages,
        // with a page fault per 4 KiB on first copy, or heap pages already touched).
        let mut buf = vec![1u8; LARGE_BIG_LEN];
        buf.clear();
        let pb = self.bar(total, format!("large-values-read {}", kind.name()));
        let el = timed(pb, &mut |pb| read_part_into(&*eng, &plan.keys, &all, pb, std::mem::take(&mut buf)))?;
        // Again, each value as the engine's get lends it (no copy where it offers a view).
        let pb = self.bar(total, format!("large-values-read-view {}", kind.name()));
        let view_el = timed(pb, &mut |pb| read_part_view(&*eng, &plan.keys, &all, pb))?;
        plan.verify(&*eng, kind, self.verify)?;
        eng.close()?;
        if self.verify == Verify::Full {
            plan.verify_reopened(kind, &dir, Mode::Sync)?;
        }
        let bytes = ns as usize * LARGE_SMALL_LEN + nb as usize * LARGE_BIG_LEN;
        let mut row = make_row("large-values-read", kind, None, total, 1, el, Measured::default());
        set_space(&mut row, kind, &dir, Some(plan.live_bytes()));
        row.device_bytes_per_op = None;
        row.device_flushes_per_tx = None;
        row.proc_write_bytes_per_op = None;
        row.mb_per_sec = Some(bytes as f64 / el.as_secs_f64() / 1e6);
        row.notes = "every value copied out, warm cache".into();
        rows.push(row.clone());
        row.workload = "large-values-read-view".into();
        // (The space on disk is the read row's.)
        (row.db_bytes, row.data_bytes, row.journal_bytes, row.live_bytes, row.space_amp) =
            (None, None, None, None, None);
        row.secs = view_el.as_secs_f64().max(1e-9);
        row.ops_per_sec = total as f64 / row.secs;
        row.mb_per_sec = Some(bytes as f64 / row.secs / 1e6);
        row.notes = "each value read where get lends it (LMDB: the map; redb: its page; RocksDB: a pinned slice; SQLite: the row's blob; Jackdaw: the page, a copy past one overflow page)".into();
        rows.push(row);
        self.done_with(&dir);
        Ok(rows)
    }

    // ---------------------------------------------------------------- free-space-control

    fn free_space_control(&mut self, kind: Kind) -> Result<Row> {
        let name = Workload::FreeSpaceControl.name();
        let (txs, per) = (self.sizes.tx_count, self.sizes.tx_size);
        let n = txs * per;
        let mut rng = Rng::stream(self.seed, "free-space-control");
        let mut keys: Vec<Key> = (0..n).map(|_| rnd_key(&mut rng)).collect();
        let mut victims: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut victims);
        victims.truncate((n / 2) as usize);
        let fresh = victims.len();
        keys.extend((0..fresh).map(|_| rnd_key(&mut rng)));
        let vals = Values::new(&mut rng, n as usize + fresh, VALUE_LEN);
        let mut ops: Vec<Op> = (0..n as u32).map(|i| Op::Put { key: i, pool: 0, val: i }).collect();
        let mut bounds: Vec<usize> = (1..=txs).map(|t| (t * per) as usize).collect();
        // The churn: transactions of `per` operations, half deletes of fill keys, half inserts.
        let half = (per / 2).max(1) as usize;
        for (c, chunk) in victims.chunks(half).enumerate() {
            for (j, v) in chunk.iter().enumerate() {
                ops.push(Op::Del { key: *v });
                let k = (n as usize + c * half + j) as u32;
                ops.push(Op::Put { key: k, pool: 0, val: k });
            }
            bounds.push(ops.len());
        }
        let plan = Plan { keys, pools: vec![Arc::new(vals)], ops, bounds };
        let fill_txs = txs as usize;

        let dir = self.fresh_dir(&name, kind)?;
        let eng = kind.open(&dir, Mode::Sync)?;
        let pb = self.bar(plan.ops.len() as u64, format!("{name} {}", kind.name()));
        let win = Window::begin(self.dev.as_ref());
        let t0 = Instant::now();
        let mut st = plan.run(&*eng, 0..fill_txs, &pb)?;
        let t_fill = t0.elapsed();
        let size_fill = disk_usage(&dir);
        let t1 = Instant::now();
        let st2 = plan.run(&*eng, fill_txs..plan.txs(), &pb)?;
        let t_churn = t1.elapsed();
        let el = t0.elapsed() - (t1 - (t0 + t_fill));
        pb.finish();
        st.commit.extend(st2.commit);
        if let (Some(a), Some(b)) = (st.jackdaw.as_mut(), st2.jackdaw) {
            a.add(&b);
        }
        plan.verify(&*eng, kind, self.verify)?;
        let info = eng.info();
        eng.close()?;
        let m = win.end();
        if self.verify == Verify::Full {
            plan.verify_reopened(kind, &dir, Mode::Sync)?;
        }
        let ops = plan.ops.len() as u64;
        let mut row = make_row(&name, kind, Some(Mode::Sync), ops, plan.txs() as u64, el, m);
        set_space(&mut row, kind, &dir, Some(plan.live_bytes()));
        row.latency = Latency::of(&mut st.commit);
        row.jackdaw = st.jackdaw.map(|j| JackdawPerTx::of(&j, plan.txs() as u64));
        let churn_ops = ops - n;
        row.notes = format!(
            "fill {} ops/s, churn (½ deletes + ½ inserts) {} ops/s; size after fill {}; device bytes include close(){}",
            crate::report::si(n as f64 / t_fill.as_secs_f64()),
            crate::report::si(churn_ops as f64 / t_churn.as_secs_f64()),
            crate::report::bytes(size_fill as f64),
            if kind == Kind::JackdawAppend { "; FreeSpacePolicy::AppendOnly" } else { "" }
        );
        row.notes = join_notes(&[&row.notes, &info]);
        self.done_with(&dir);
        Ok(row)
    }

    // ---------------------------------------------------------------- commit-syscalls

    fn commit_syscalls(&mut self, kind: Kind) -> Result<Row> {
        let name = Workload::CommitSyscalls.name();
        let n = self.sizes.syscall_commits;
        let per = self.sizes.tx_size;
        let plan = syscall_plan(self.seed, n + WARMUP_COMMITS, per);
        let dir = self.fresh_dir(&name, kind)?;
        let eng = kind.open(&dir, Mode::Sync)?;
        let pb = self.bar(n * per, format!("{name} {}", kind.name()));
        plan.run(&*eng, 0..WARMUP_COMMITS as usize, &Progress::new(false, 0, String::new()))?;
        let c0 = eng.counters();
        let win = Window::begin(self.dev.as_ref());
        let t0 = Instant::now();
        let mut st = plan.run(&*eng, WARMUP_COMMITS as usize..plan.txs(), &pb)?;
        let el = t0.elapsed();
        pb.finish();
        let m = win.end();
        let c1 = eng.counters();
        let info = eng.info();
        plan.verify(&*eng, kind, self.verify)?;
        eng.close()?;
        let mut row = make_row(&name, kind, Some(Mode::Sync), n * per, n, el, m);
        set_space(&mut row, kind, &dir, Some(plan.live_bytes()));
        row.latency = Latency::of(&mut st.commit);
        row.jackdaw = st.jackdaw.map(|j| JackdawPerTx::of(&j, n));
        let mut notes = Vec::new();
        if let Some(b) = m.dev_bytes {
            notes.push(format!(
                "device {} and {:.2} write requests per commit",
                crate::report::bytes(b as f64 / n as f64),
                m.dev_write_ios.unwrap_or(0) as f64 / n as f64
            ));
        }
        // Engine counters per commit.
        let before: HashMap<_, _> = c0.into_iter().collect();
        let per_commit: Vec<String> = c1
            .iter()
            .filter_map(|(k, v)| {
                let d = v.saturating_sub(*before.get(k).unwrap_or(&0));
                (d > 0 && k != "commits").then(|| format!("{k} {:.2}", d as f64 / n as f64))
            })
            .collect();
        if !per_commit.is_empty() {
            notes.push(format!("engine counters per commit: {}", per_commit.join(", ")));
        }
        if !info.is_empty() {
            notes.push(info);
        }
        self.done_with(&dir);
        // strace -c -f of a child doing the same commits, minus a child doing none.
        match &self.strace_exe {
            Some(exe) => match strace_per_commit(exe, kind, &self.root, self.seed, n.min(STRACE_MAX_COMMITS)) {
                Ok((total, top)) => {
                    row.syscalls_per_commit = Some(total);
                    notes.push(format!("strace -c -f per commit: {top}"));
                }
                Err(e) => notes.push(format!("strace unavailable: {e:#}")),
            },
            None => notes.push("strace not run".into()),
        }
        row.notes = notes.join("; ");
        Ok(row)
    }
}

impl Ctx {
    /// commit-snapshots (Jackdaw only; no row for the others): small commits (10 puts of 100
    /// bytes, `Durability::None`, manual flusher, so the figure is the engine's own work per
    /// commit) timed first with no reader, then with `snapshots` read transactions open, begun
    /// between the first commits of the phase so that they hold many distinct snapshot ids. The
    /// row's latency is the second phase's; the notes give both p50s and their ratio (faults issue
    /// §6: within 1.2x).
    fn commit_snapshots(&mut self, kind: Kind) -> Result<Option<Row>> {
        if kind != Kind::Jackdaw {
            return Ok(None);
        }
        use jackdaw::{Durability, Env, FlusherMode, Options};
        let name = Workload::CommitSnapshots.name();
        let (n, snaps) = (self.sizes.snapshot_commits, self.sizes.snapshots);
        let dir = self.fresh_dir(&name, kind)?;
        let env = Env::open(&dir, Options::default().durability(Durability::None).flusher(FlusherMode::Manual))?;
        let mut tx = env.write()?;
        let tree = tx.create_tree("t")?;
        tx.commit()?;
        let pb = self.bar(4 * n, format!("{name} {}", kind.name()));
        let mut key = 0u64;
        let mut phase = |held: &mut Vec<jackdaw::ReadTxn>, open: u64| -> Result<Vec<Duration>> {
            let mut t = Vec::with_capacity(n as usize);
            let per = open.div_ceil(n.min(open.max(1)));
            for _ in 0..n {
                let mut tx = env.write()?;
                for _ in 0..10 {
                    tx.put(&tree, key.to_be_bytes(), [7u8; VALUE_LEN])?;
                    key += 1;
                }
                let t0 = Instant::now();
                tx.commit()?;
                t.push(t0.elapsed());
                for _ in 0..per {
                    if (held.len() as u64) < open {
                        held.push(env.read()?);
                    }
                }
                pb.inc(1);
            }
            Ok(t)
        };
        let mut held = Vec::new();
        // A warm-up phase (the tree's first pages, the allocator), then the one timed.
        let _ = phase(&mut held, 0)?;
        let mut none = phase(&mut held, 0)?;
        // Open the snapshots (spread over commits), then time a phase with all of them open.
        let _ = phase(&mut held, snaps)?;
        let t0 = Instant::now();
        let mut with = phase(&mut held, snaps)?;
        let el = t0.elapsed();
        pb.finish();
        let distinct = {
            let mut ids: Vec<u64> = held.iter().map(|r| r.txid().get()).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        let open = held.len();
        drop(held);
        env.close()?;
        let (a, b) = (Latency::of(&mut none), Latency::of(&mut with));
        let mut row = make_row(&name, kind, Some(Mode::None), n * 10, n, el, Measured::default());
        // Every key (8 bytes) written once, with a value of VALUE_LEN.
        set_space(&mut row, kind, &dir, Some(key * (8 + VALUE_LEN as u64)));
        row.latency = b;
        if let (Some(a), Some(b)) = (a, b) {
            row.notes = format!(
                "commit p50 {:.1} us with 0 snapshots, {:.1} us with {open} open ({distinct} distinct ids): {:.2}x",
                a.p50_us,
                b.p50_us,
                b.p50_us / a.p50_us
            );
        }
        self.done_with(&dir);
        Ok(Some(row))
    }
}

const WARMUP_COMMITS: u64 = 5;
const STRACE_MAX_COMMITS: u64 = 200;

fn syscall_plan(seed: u64, txs: u64, per: u64) -> Plan {
    let n = txs * per;
    let mut rng = Rng::stream(seed, "commit-syscalls");
    let keys: Vec<Key> = (0..n).map(|_| rnd_key(&mut rng)).collect();
    let vals = Values::new(&mut rng, n as usize, VALUE_LEN);
    Plan::puts(keys, vec![Arc::new(vals)], n, per)
}

/// The child side of commit-syscalls under strace: open in sync mode, the warm-up commits,
/// `commits` commits of 100 random items, close.
pub fn child_commits(kind: Kind, dir: &Path, commits: u64, seed: u64) -> Result<()> {
    let plan = syscall_plan(seed, commits + WARMUP_COMMITS, 100);
    let eng = kind.open(dir, Mode::Sync)?;
    let pb = Progress::new(false, 0, String::new());
    plan.run(&*eng, 0..plan.txs(), &pb)?;
    eng.close()
}

fn strace_counts(exe: &Path, kind: Kind, root: &Path, seed: u64, commits: u64) -> Result<HashMap<String, u64>> {
    let dir = root.join("commit-syscalls-child").join(format!("{}-{commits}", kind.name()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let out = dir.with_extension("strace");
    let st = std::process::Command::new("strace")
        .arg("-f")
        .arg("-c")
        .arg("-o")
        .arg(&out)
        .arg(exe)
        .args(["--child-commits", &commits.to_string(), "--engines", kind.name(), "--seed", &seed.to_string(), "--dir"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .context("spawn strace")?;
    ensure!(st.status.success(), "strace child failed: {}", String::from_utf8_lossy(&st.stderr).trim());
    let text = std::fs::read_to_string(&out)?;
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&out);
    let mut m = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 || f[0].starts_with('%') || f[0].starts_with('-') {
            continue;
        }
        let sys = *f.last().expect("len checked");
        if sys == "total" {
            continue;
        }
        if let Ok(calls) = f[3].parse::<u64>() {
            *m.entry(sys.to_string()).or_insert(0) += calls;
        }
    }
    ensure!(!m.is_empty(), "no syscall table in strace output");
    Ok(m)
}

/// Syscalls per commit (and the five most frequent), from two strace runs.
fn strace_per_commit(exe: &Path, kind: Kind, root: &Path, seed: u64, commits: u64) -> Result<(f64, String)> {
    let base = strace_counts(exe, kind, root, seed, 0)?;
    let run = strace_counts(exe, kind, root, seed, commits)?;
    let mut per: Vec<(String, f64)> = run
        .iter()
        .map(|(k, v)| (k.clone(), (*v as f64 - *base.get(k).unwrap_or(&0) as f64) / commits as f64))
        .filter(|(_, v)| *v >= 0.05)
        .collect();
    per.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = per.iter().map(|p| p.1).sum();
    let top: Vec<String> = per.iter().take(6).map(|(k, v)| format!("{k} {v:.2}")).collect();
    Ok((total, top.join(", ")))
}

// -------------------------------------------------------------------- plans

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadOrder {
    Seq,
    Rnd,
}

/// Read the keys `part` (indexes into `keys`), copying every value out; returns the folded
/// checksum and how many keys were found.
fn read_part(eng: &dyn Engine, keys: &[Key], part: &[u32], pb: &Progress) -> Result<(u64, u64)> {
    read_part_into(eng, keys, part, pb, Vec::with_capacity(256))
}

/// `read_part` through `ReadOps::get_view`: every byte of each value read once where the engine
/// lends it (a copy reads every byte too).
fn read_part_view(eng: &dyn Engine, keys: &[Key], part: &[u32], pb: &Progress) -> Result<(u64, u64)> {
    let (mut sum, mut found, mut all) = (0u64, 0u64, 0u64);
    eng.read(&mut |r: &dyn ReadOps| {
        for (j, &i) in part.iter().enumerate() {
            let mut visit = |v: &[u8]| {
                sum = sum.wrapping_add(value_sum(v));
                all = all.wrapping_add(crate::gen::read_every_byte(v));
            };
            if r.get_view(&keys[i as usize], &mut visit)? {
                found += 1;
            }
            if j % 4096 == 4095 {
                pb.inc(4096);
            }
        }
        Ok(())
    })?;
    std::hint::black_box(all);
    Ok((sum, found))
}

/// `read_part` copying into `buf` (the caller sizes it).
fn read_part_into(eng: &dyn Engine, keys: &[Key], part: &[u32], pb: &Progress, buf: Vec<u8>) -> Result<(u64, u64)> {
    let (mut sum, mut found) = (0u64, 0u64);
    let mut buf = Some(buf);
    eng.read(&mut |r: &dyn ReadOps| {
        let mut buf = buf.take().unwrap_or_default();
        for (j, &i) in part.iter().enumerate() {
            if r.get_into(&keys[i as usize], &mut buf)? {
                found += 1;
                sum = sum.wrapping_add(value_sum(&buf));
            }
            if j % 4096 == 4095 {
                pb.inc(4096);
            }
        }
        Ok(())
    })?;
    Ok((sum, found))
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Put { key: u32, pool: u8, val: u32 },
    Del { key: u32 },
}

/// A sequence of transactions over pre-generated keys and values.
struct Plan {
    keys: Vec<Key>,
    pools: Vec<Arc<Values>>,
    ops: Vec<Op>,
    /// End (exclusive) of each transaction's ops.
    bounds: Vec<usize>,
}

#[derive(Default)]
struct RunStats {
    commit: Vec<Duration>,
    jackdaw: Option<JackdawCommit>,
}

impl Plan {
    /// `n` puts of key i → value i, in transactions of `per`.
    fn puts(keys: Vec<Key>, pools: Vec<Arc<Values>>, n: u64, per: u64) -> Plan {
        let ops = (0..n as u32).map(|i| Op::Put { key: i, pool: 0, val: i }).collect();
        let bounds = (1..=n.div_ceil(per.max(1))).map(|t| (t * per).min(n) as usize).collect();
        Plan { keys, pools, ops, bounds }
    }

    fn txs(&self) -> usize {
        self.bounds.len()
    }

    fn value(&self, op: &Op) -> &[u8] {
        match op {
            Op::Put { pool, val, .. } => self.pools[*pool as usize].get(*val as usize),
            Op::Del { .. } => &[],
        }
    }

    /// Run transactions `txs` (indexes into `bounds`).
    fn run(&self, eng: &dyn Engine, txs: std::ops::Range<usize>, pb: &Progress) -> Result<RunStats> {
        let mut st = RunStats { commit: Vec::with_capacity(txs.len()), jackdaw: None };
        for t in txs {
            let lo = if t == 0 { 0 } else { self.bounds[t - 1] };
            let hi = self.bounds[t];
            let ops = &self.ops[lo..hi];
            let info = eng.write(&mut |w| {
                for (j, op) in ops.iter().enumerate() {
                    match *op {
                        Op::Put { key, pool, val } => {
                            w.put(&self.keys[key as usize], self.pools[pool as usize].get(val as usize))?
                        }
                        Op::Del { key } => w.delete(&self.keys[key as usize])?,
                    }
                    if j % 8192 == 8191 {
                        pb.inc(8192);
                    }
                }
                Ok(())
            })?;
            pb.inc((ops.len() % 8192) as u64);
            st.commit.push(info.commit_time);
            if let Some(j) = info.jackdaw {
                st.jackdaw.get_or_insert_with(JackdawCommit::default).add(&j);
            }
        }
        Ok(st)
    }

    /// The final state: (key, Some(op index of the last put) | None if deleted), sorted by key.
    fn model(&self) -> Vec<(Key, Option<usize>)> {
        let mut v: Vec<(Key, usize)> = self
            .ops
            .iter()
            .enumerate()
            .map(|(i, op)| match op {
                Op::Put { key, .. } | Op::Del { key } => (self.keys[*key as usize], i),
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut out: Vec<(Key, Option<usize>)> = Vec::with_capacity(v.len());
        for (k, i) in v {
            let present = matches!(self.ops[i], Op::Put { .. }).then_some(i);
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = present,
                _ => out.push((k, present)),
            }
        }
        out
    }

    /// The logical bytes the plan leaves in the database: key and value lengths of the pairs
    /// present at the end (a key put twice counted once, with its last value; deleted keys not).
    fn live_bytes(&self) -> u64 {
        self.model()
            .iter()
            .filter_map(|(k, last)| last.map(|i| (k.len() + self.value(&self.ops[i]).len()) as u64))
            .sum()
    }

    /// Check that the engine holds exactly the model: an ordered full scan and point gets.
    fn verify(&self, eng: &dyn Engine, kind: Kind, level: Verify) -> Result<()> {
        if level == Verify::Off {
            return Ok(());
        }
        let model = self.model();
        let present: Vec<(&Key, &[u8])> =
            model.iter().filter_map(|(k, i)| i.map(|i| (k, self.value(&self.ops[i])))).collect();
        let absent: Vec<&Key> = model.iter().filter(|(_, i)| i.is_none()).map(|(k, _)| k).collect();
        let name = kind.name();
        eng.read(&mut |r: &dyn ReadOps| {
            let mut pos = 0usize;
            let mut bad: Option<String> = None;
            let seen = r.scan(b"", None, &mut |k, v| {
                if bad.is_none() {
                    match present.get(pos) {
                        Some((ek, ev)) if k == &ek[..] && v == *ev => {}
                        Some((ek, ev)) => {
                            bad = Some(format!(
                                "scan item {pos}: got key {:?} ({} B value), expected {:?} ({} B value){}",
                                String::from_utf8_lossy(k),
                                v.len(),
                                String::from_utf8_lossy(&ek[..]),
                                ev.len(),
                                if k == &ek[..] { " — value differs" } else { "" }
                            ))
                        }
                        None => {
                            bad =
                                Some(format!("scan item {pos}: unexpected extra key {:?}", String::from_utf8_lossy(k)))
                        }
                    }
                }
                pos += 1;
                Ok(())
            })?;
            if let Some(b) = bad {
                bail!("{name} read back wrong data: {b}");
            }
            ensure!(
                seen as usize == present.len(),
                "{name} read back {seen} pairs in a full scan, expected {}",
                present.len()
            );
            // Point gets: every key at Full, an even sample of ≤ 10,000 otherwise.
            let step = |len: usize| if level == Verify::Full { 1 } else { (len / 10_000).max(1) };
            let mut buf = Vec::new();
            for (k, v) in present.iter().step_by(step(present.len())) {
                ensure!(
                    r.get_into(&k[..], &mut buf)?,
                    "{name}: get {:?} found nothing",
                    String::from_utf8_lossy(&k[..])
                );
                ensure!(buf == *v, "{name}: get {:?} returned a wrong value", String::from_utf8_lossy(&k[..]));
            }
            for k in absent.iter().step_by(step(absent.len())) {
                ensure!(
                    !r.get_into(&k[..], &mut buf)?,
                    "{name}: deleted key {:?} still found",
                    String::from_utf8_lossy(&k[..])
                );
            }
            // A bounded range: the middle half of the present keys.
            if present.len() >= 4 {
                let (a, b) = (present.len() / 4, 3 * present.len() / 4);
                let mut i = a;
                let mut ok = true;
                let got = r.scan(&present[a].0[..], Some(&present[b].0[..]), &mut |k, _| {
                    ok &= present.get(i).is_some_and(|p| k == &p.0[..]);
                    i += 1;
                    Ok(())
                })?;
                ensure!(
                    ok && got as usize == b - a,
                    "{name}: bounded range scan returned {got} pairs (expected {})",
                    b - a
                );
            }
            Ok(())
        })
        .with_context(|| format!("verifying {name}"))
    }

    fn verify_reopened(&self, kind: Kind, dir: &Path, mode: Mode) -> Result<()> {
        let eng = kind.open(dir, mode)?;
        self.verify(&*eng, kind, Verify::Full).context("after close and reopen")?;
        eng.close()
    }
}

/// The row's size on disk (`dir` after close), split between data and journal files as the
/// engine's adapter says (`Kind::is_journal_file`), and against `live` key+value bytes.
fn set_space(row: &mut Row, kind: Kind, dir: &Path, live: Option<u64>) {
    let (data, journal) = disk_usage_split(dir, &|rel| kind.is_journal_file(rel));
    row.db_bytes = Some(data + journal);
    row.data_bytes = Some(data);
    row.journal_bytes = Some(journal);
    row.live_bytes = live;
    row.space_amp = live.filter(|l| *l > 0).map(|l| (data + journal) as f64 / l as f64);
}

/// What a cold read fetched from the device against the database's size: every read workload
/// touches every page, so a drop that reached the engine's pages reads about the whole database
/// back; a row that read less than half of it was served from a cache and is not cold.
///
/// How it was read tells a slow round's cause: the requests the device completed (their mean
/// size: what readahead asked for, after merging), the time they spent in the device (summed over
/// requests in flight together), and the process's page faults (major: waited for the device).
fn cold_read_note(m: &crate::measure::Measured, db: u64, (major, minor): (u64, u64)) -> String {
    let read = m.dev_read_bytes.unwrap_or(0);
    let pct = read as f64 * 100.0 / db.max(1) as f64;
    let mut what = format!("read {} from the device ({pct:.0}% of the database)", crate::report::bytes(read as f64));
    if let (Some(ios), Some(ms)) = (m.dev_read_ios, m.dev_read_ms) {
        let mean = crate::report::bytes(read as f64 / ios.max(1) as f64);
        what = format!("{what} in {ios} requests of {mean} on average, {ms} ms in the device");
    }
    what = format!("{what}; {major} major and {minor} minor page faults");
    if read == 0 || read < db / 2 {
        format!("{what}; NOT COLD: the cache drop did not reach this engine's pages")
    } else {
        what
    }
}

fn join_notes(parts: &[&str]) -> String {
    parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("; ")
}

#[allow(clippy::too_many_arguments)]
fn make_row(name: &str, kind: Kind, mode: Option<Mode>, ops: u64, txs: u64, el: Duration, m: Measured) -> Row {
    let secs = el.as_secs_f64().max(1e-9);
    Row {
        workload: name.to_string(),
        engine: kind.name().to_string(),
        mode: mode.map(|md| format!("{}: {}", md.name(), kind.mode_mapping(md))).unwrap_or_default(),
        ops,
        txs,
        secs,
        ops_per_sec: ops as f64 / secs,
        device_bytes_per_op: m.dev_bytes.map(|b| b as f64 / ops.max(1) as f64),
        device_flushes_per_tx: m.dev_flushes.map(|f| f as f64 / txs.max(1) as f64),
        proc_write_bytes_per_op: m.proc_write_bytes.map(|b| b as f64 / ops.max(1) as f64),
        ..Row::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cold_read_served_from_cache_is_flagged() {
        let mib = 1 << 20;
        let read = |b: u64| crate::measure::Measured { dev_read_bytes: Some(b), ..Default::default() };
        assert!(!cold_read_note(&read(120 * mib), 128 * mib, (0, 0)).contains("NOT COLD"));
        assert!(cold_read_note(&read(120 * mib), 128 * mib, (0, 0)).contains("(94% of the database)"));
        assert!(cold_read_note(&read(3 * mib), 128 * mib, (0, 0)).contains("NOT COLD"));
        assert!(cold_read_note(&read(0), 0, (0, 0)).contains("NOT COLD"));
    }

    /// The note says how the device was read: requests, their mean size, device time, faults.
    #[test]
    fn a_cold_read_note_says_how_it_was_read() {
        let m = crate::measure::Measured {
            dev_read_bytes: Some(120 << 20),
            dev_read_ios: Some(60),
            dev_read_ms: Some(250),
            ..Default::default()
        };
        let note = cold_read_note(&m, 128 << 20, (7, 900));
        assert!(note.contains("in 60 requests of 2.0 MiB on average, 250 ms in the device"), "{note}");
        assert!(note.contains("7 major and 900 minor page faults"), "{note}");
    }

    #[test]
    fn selection() {
        let names = |s: &[&str]| {
            select(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>())
                .unwrap()
                .iter()
                .map(|w| w.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&["fill-seq"]), ["fill-seq-none", "fill-seq-buff", "fill-seq-sync"]);
        assert_eq!(names(&["read-seq"]), ["read-seq"]);
        assert_eq!(names(&["read-*-cold"]).len(), 7);
        assert_eq!(names(&["read-parallel-N"]).len(), 5);
        assert_eq!(names(&["fill-seq-tx"]), ["fill-seq-tx-sync"]);
        assert!(select(&["nope".to_string()]).is_err());
    }

    /// An in-memory engine that can be told to lose every `lose_every`-th put: the check after a
    /// write workload must notice.
    struct Mem {
        map: std::sync::Mutex<std::collections::BTreeMap<Vec<u8>, Vec<u8>>>,
        lose_every: usize,
        n: std::sync::atomic::AtomicUsize,
    }

    struct MemW<'a>(&'a Mem, std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>>);
    impl crate::engine::WriteOps for MemW<'_> {
        fn put(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
            let i = self.0.n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if self.0.lose_every == 0 || !i.is_multiple_of(self.0.lose_every) {
                self.1.insert(k.to_vec(), Some(v.to_vec()));
            }
            Ok(())
        }
        fn delete(&mut self, k: &[u8]) -> Result<()> {
            self.1.insert(k.to_vec(), None);
            Ok(())
        }
    }

    struct MemR(std::collections::BTreeMap<Vec<u8>, Vec<u8>>);
    impl ReadOps for MemR {
        fn get_into(&self, k: &[u8], out: &mut Vec<u8>) -> Result<bool> {
            out.clear();
            Ok(self.0.get(k).map(|v| out.extend_from_slice(v)).is_some())
        }
        fn get_view(&self, k: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
            Ok(self.0.get(k).map(|v| f(v)).is_some())
        }
        fn scan(&self, lo: &[u8], hi: Option<&[u8]>, f: &mut crate::engine::Visit<'_>) -> Result<u64> {
            let mut n = 0;
            for (k, v) in self.0.range(lo.to_vec()..) {
                if hi.is_some_and(|h| k.as_slice() >= h) {
                    break;
                }
                f(k, v)?;
                n += 1;
            }
            Ok(n)
        }
    }

    impl Engine for Mem {
        fn write(
            &self,
            f: &mut dyn FnMut(&mut dyn crate::engine::WriteOps) -> Result<()>,
        ) -> Result<crate::engine::CommitInfo> {
            let mut w = MemW(self, Default::default());
            f(&mut w)?;
            let mut m = self.map.lock().unwrap();
            for (k, v) in w.1 {
                match v {
                    Some(v) => m.insert(k, v),
                    None => m.remove(&k),
                };
            }
            Ok(Default::default())
        }
        fn read(&self, f: &mut dyn FnMut(&dyn ReadOps) -> Result<()>) -> Result<()> {
            let snap = MemR(self.map.lock().unwrap().clone());
            f(&snap)
        }
        fn close(self: Box<Self>) -> Result<()> {
            Ok(())
        }
    }

    fn churn_plan() -> Plan {
        let mut rng = Rng::new(3);
        let keys: Vec<Key> = (0..300).map(|_| rnd_key(&mut rng)).collect();
        let vals = Values::new(&mut rng, 300, 20);
        let mut ops: Vec<Op> = (0..200u32).map(|i| Op::Put { key: i, pool: 0, val: i }).collect();
        for i in 0..100u32 {
            ops.push(Op::Del { key: i * 2 });
            ops.push(Op::Put { key: 200 + i, pool: 0, val: 200 + i });
        }
        let bounds = (1..=4).map(|t| t * 100).collect();
        Plan { keys, pools: vec![Arc::new(vals)], ops, bounds }
    }

    /// Live bytes: what an engine holding exactly the plan's final state holds, key and value
    /// lengths summed; a key put twice counts once (its last value), a deleted key not at all.
    #[test]
    fn live_bytes_are_the_final_state() {
        let plan = churn_plan();
        // 200 puts, then 100 of them deleted and 100 new keys put: 200 pairs of 16 + 20 bytes.
        assert_eq!(plan.live_bytes(), 200 * (16 + 20));
        let eng = Mem { map: Default::default(), lose_every: 0, n: Default::default() };
        plan.run(&eng, 0..plan.txs(), &Progress::new(false, 0, String::new())).unwrap();
        let held: u64 = eng.map.lock().unwrap().iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        assert_eq!(plan.live_bytes(), held);
        // The same key put twice with values of different lengths: the last one counts.
        let mut rng = Rng::new(5);
        let keys: Vec<Key> = vec![rnd_key(&mut rng)];
        let pools = vec![Arc::new(Values::new(&mut rng, 1, 50)), Arc::new(Values::new(&mut rng, 1, 7))];
        let ops = vec![Op::Put { key: 0, pool: 0, val: 0 }, Op::Put { key: 0, pool: 1, val: 0 }];
        assert_eq!(Plan { keys, pools, ops, bounds: vec![2] }.live_bytes(), 16 + 7);
    }

    #[test]
    fn verification_catches_a_lossy_engine() {
        let plan = churn_plan();
        let pb = Progress::new(false, 0, String::new());
        for (lose, ok) in [(0, true), (97, false)] {
            let eng = Mem { map: Default::default(), lose_every: lose, n: Default::default() };
            plan.run(&eng, 0..plan.txs(), &pb).unwrap();
            for level in [Verify::Scan, Verify::Full] {
                assert_eq!(plan.verify(&eng, Kind::Jackdaw, level).is_ok(), ok, "lose_every {lose}, {level:?}");
            }
        }
    }
}
