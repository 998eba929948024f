//! The one helper module of the engine's tests (`mod common;` in each test file):
//!
//! - [`TestDb`]: the fixture of every test that writes: a fresh directory, an open `Env`, and a
//!   full `check()` when it drops (the test fails on any problem), as bbolt's tests run
//!   `Tx.Check` after every test;
//! - [`tmpdir`]: a fresh directory on the project's disk, removed unless the test fails;
//! - [`test_opts`], raw page helpers ([`alloc`], [`fill`], [`read_value`], [`check_pages`]);
//! - seeds ([`seed`], [`seed_or`], [`seeds`], [`env_seed`]: `JACKDAW_SEED` replays) and the
//!   seeded generator [`Rng`]; [`OnPanic`]; [`copy_dir`] (crash images);
//! - [`gate`]: `GatedStorage`, a storage whose syncs can be held at a gate.
#![allow(dead_code)]

pub mod gate;

use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{CheckReport, Env, Error, Options, ReadTxn, WriteTxn};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

// ---------------------------------------------------------------------------------------------
// Directories.

/// A fresh directory on the project's own disk (target/tmp), never a tmpfs.
/// Removed when the guard drops, unless the test is failing (then it stays
/// for a look): a suite run must not leave gigabytes behind on a CI machine
/// whose disk may be nearly full.
pub fn tmpdir(name: &str) -> TmpDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    TmpDir(d)
}

/// A test's directory; see [`tmpdir`].
#[derive(Debug)]
pub struct TmpDir(PathBuf);

impl TmpDir {
    /// The path, no longer removed on drop: for a caller that removes it itself.
    pub fn keep(self) -> PathBuf {
        let mut me = std::mem::ManuallyDrop::new(self);
        std::mem::take(&mut me.0)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

/// Small journal files so tests rotate and recycle them.
pub fn test_opts() -> Options {
    Options::default().journal_file_bytes(256 << 10)
}

// ---------------------------------------------------------------------------------------------
// The fixture.

/// A temporary database: a fresh [`tmpdir`] with an `Env` open in it (derefs to the `Env`).
///
/// When it drops (unless the test is already failing) it runs the full `check()` on the
/// database's final state and panics with every problem found: on the open `Env`; or, when the
/// test closed it (`close()`, `Env::close` through the deref, `take()`n and dropped) or it is
/// poisoned, on the database opened again with the last options (recovery first, as after a
/// crash). Then it closes the environment and removes the directory. `Env::close` through the
/// deref closes it; [`reopen`](TestDb::reopen) opens it again.
///
/// Opt-outs, each saying why: [`skip_check`](TestDb::skip_check) for a test that breaks the
/// database on purpose (no check), [`raw_pages`](TestDb::raw_pages) for one written through raw page
/// access (the check takes the given pages as the reachable ones, as [`check_pages`] does).
pub struct TestDb {
    env: Option<Env>,
    opts: Options,
    skip: Mutex<Option<String>>,
    live: Mutex<Option<Vec<u64>>>,
    // Last: removed after the environment is closed.
    dir: TmpDir,
}

impl TestDb {
    /// A fresh database named after `name`, open with [`test_opts`].
    pub fn new(name: &str) -> TestDb {
        TestDb::with_opts(name, test_opts())
    }

    /// A fresh database open with `opts`.
    pub fn with_opts(name: &str, opts: Options) -> TestDb {
        let mut db = TestDb::unopened(name, opts);
        db.open();
        db
    }

    /// The directory only (nothing in it yet); [`open`](TestDb::open) opens it with `opts`. The
    /// drop check opens it if the test left it closed (and it holds a database by then).
    pub fn unopened(name: &str, opts: Options) -> TestDb {
        TestDb { env: None, opts, skip: Mutex::new(None), live: Mutex::new(None), dir: tmpdir(name) }
    }

    /// The directory only, for a test that opens its own environments in it
    /// (`Env::open(&db, ...)`): the drop check opens it with [`test_opts`] (or what
    /// [`set_opts`](TestDb::set_opts) says) once the test's environments are gone.
    pub fn dir(name: &str) -> TestDb {
        TestDb::unopened(name, test_opts())
    }

    /// A copy of this database's files as they are now, unopened: taken while it is open, a
    /// crash image (everything the engine has written to the OS). Same options.
    pub fn image(&self, name: &str) -> TestDb {
        let img = TestDb::unopened(name, self.opts.clone());
        copy_dir(&self.dir, &img.dir);
        img
    }

    /// Open the environment with the current options; panics if one is open or the open fails.
    pub fn open(&mut self) -> &Env {
        let (opts, path) = (self.opts.clone(), self.dir.display().to_string());
        self.try_open(opts).unwrap_or_else(|e| panic!("open {path}: {e}"))
    }

    /// Open with `opts` (which become the options of later reopens and of the drop check).
    pub fn try_open(&mut self, opts: Options) -> jackdaw::Result<&Env> {
        assert!(self.env.is_none(), "TestDb::open: {} is open already", self.dir.display());
        let env = Env::open(&self.dir, opts.clone())?;
        self.opts = opts;
        Ok(self.env.insert(env))
    }

    /// Close (must succeed) and open again with the same options.
    pub fn reopen(&mut self) -> &Env {
        let opts = self.opts.clone();
        self.reopen_with(opts)
    }

    /// Close (must succeed; the test may have closed it already through `Env::close`) and open
    /// again with `opts`.
    pub fn reopen_with(&mut self, opts: Options) -> &Env {
        if let Some(env) = self.env.take() {
            env.close().unwrap_or_else(|e| panic!("close {}: {e}", self.dir.display()));
        }
        self.opts = opts;
        self.open()
    }

    /// Hand the open environment to the test (it may drop it, close it, crash it...); the drop
    /// check opens the database again.
    pub fn take(&mut self) -> Env {
        self.env.take().expect("TestDb::take: no environment is open")
    }

    /// Whether an environment is open.
    pub fn is_open(&self) -> bool {
        self.env.is_some()
    }

    /// The open environment (also through `Deref`).
    pub fn env(&self) -> &Env {
        self.env.as_ref().unwrap_or_else(|| panic!("TestDb: {} is not open", self.dir.display()))
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The options of the last open.
    pub fn opts(&self) -> Options {
        self.opts.clone()
    }

    /// Set the options of the next open (and of the drop check's open, if it needs one).
    pub fn set_opts(&mut self, opts: Options) {
        self.opts = opts;
    }

    /// No check on drop: the test damaged the database on purpose (or left it in a state that
    /// cannot be opened again, such as a leaked `Env`). `why` says which.
    pub fn skip_check(&self, why: &str) {
        *self.skip.lock().unwrap() = Some(why.to_string());
    }

    /// The database is written through raw page access: the drop check takes `live` (every page
    /// in use but the meta page) as the reachable set instead of the tree walk.
    pub fn raw_pages(&self, live: impl IntoIterator<Item = u64>) {
        *self.live.lock().unwrap() = Some(live.into_iter().collect());
    }

    fn check_env(&self, env: &Env) -> jackdaw::Result<CheckReport> {
        match self.live.lock().unwrap().clone() {
            Some(live) => env.check_with(move |_| Ok(live)),
            None => env.check(),
        }
    }

    /// The drop check: `Err` describes what is wrong.
    fn final_check(&mut self) -> Result<(), String> {
        let where_ = self.dir.display().to_string();
        let mut ran = None;
        if let Some(env) = self.env.take() {
            match self.check_env(&env) {
                // Closed by the test or poisoned: check what is on disk, below.
                Err(Error::Closed) | Err(Error::Poisoned(_)) => drop(env),
                r => ran = Some((env, r)),
            }
        }
        let (env, r) = match ran {
            Some(x) => x,
            None => {
                let empty = std::fs::read_dir(&self.dir).map_or(true, |mut d| d.next().is_none());
                if empty && opts_on_disk(&self.opts) {
                    // No database was ever made here.
                    return Ok(());
                }
                // A clone of the test's `Env` may still be on its way out on another thread (one
                // that has sent its last result but not yet ended): wait for the lock a little.
                let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
                let env = loop {
                    match Env::open(&self.dir, self.opts.clone()) {
                        Err(Error::Locked { .. }) if std::time::Instant::now() < give_up => {
                            std::thread::sleep(std::time::Duration::from_millis(5))
                        }
                        r => break r.map_err(|e| format!("TestDb check: reopening {where_} failed: {e}"))?,
                    }
                };
                let r = self.check_env(&env);
                (env, r)
            }
        };
        let r = r.map_err(|e| format!("TestDb check of {where_} could not run: {e}"))?;
        if !r.is_clean() {
            let problems: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
            return Err(format!(
                "TestDb check of {where_} found {} problem(s):\n{}",
                problems.len(),
                problems.join("\n")
            ));
        }
        match env.close() {
            Ok(()) | Err(Error::Busy(_)) => Ok(()),
            Err(e) => Err(format!("TestDb: closing {where_} after its check failed: {e}")),
        }
    }
}

/// Whether `opts` keep the database in the directory (the default storage).
fn opts_on_disk(opts: &Options) -> bool {
    format!("{opts:?}").contains("FsStorage")
}

impl std::ops::Deref for TestDb {
    type Target = Env;
    fn deref(&self) -> &Env {
        self.env()
    }
}

impl std::fmt::Debug for TestDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TestDb({}, {})", self.dir.display(), if self.env.is_some() { "open" } else { "closed" })
    }
}

impl AsRef<Path> for TestDb {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The test failed already; the directory stays for a look (see `TmpDir`).
            return;
        }
        if self.skip.lock().unwrap().is_some() {
            return;
        }
        let t0 = std::time::Instant::now();
        if let Err(msg) = self.final_check() {
            panic!("{msg}");
        }
        // Slow checks are named (the suite's time budget); `JACKDAW_FIXTURE_TIMES=1` names all.
        let took = t0.elapsed();
        if took > std::time::Duration::from_millis(200) || std::env::var_os("JACKDAW_FIXTURE_TIMES").is_some() {
            println!("TestDb: the drop check of {} took {:.3} ms", self.dir.display(), took.as_secs_f64() * 1e3);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Raw pages.

/// Write a raw page: `value` repeated as u64s after the header.
pub fn fill(tx: &mut WriteTxn, pgno: u64, value: u64) {
    let p = tx.page_mut(pgno).unwrap();
    for c in p[PAGE_HEADER..].chunks_mut(8) {
        c.copy_from_slice(&value.to_le_bytes());
    }
}

/// Allocate a raw page holding `value`.
pub fn alloc(tx: &mut WriteTxn, value: u64) -> u64 {
    let p = tx.alloc_page(PageKind::Raw).unwrap();
    fill(tx, p, value);
    p
}

pub fn value_of(page: &[u8]) -> u64 {
    let v = u64::from_le_bytes(page[PAGE_HEADER..PAGE_HEADER + 8].try_into().unwrap());
    assert!(page[PAGE_HEADER..].chunks(8).all(|c| c == v.to_le_bytes()), "torn page");
    v
}

pub fn read_value(r: &ReadTxn, pgno: u64) -> u64 {
    value_of(r.page(pgno).unwrap())
}

/// Check with the given set of live pages as the reachable set.
pub fn check_pages(env: &Env, live: impl IntoIterator<Item = u64>) {
    let live: Vec<u64> = live.into_iter().collect();
    env.check_with(move |_| Ok(live)).and_then(CheckReport::into_result).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Seeds and randomness.

/// xorshift64* seeded through splitmix64 (so seeds 0, 1, 2, ... give unrelated streams).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        self.next_u64() % n
    }
    /// In `[lo, hi]`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
    pub fn fill_bytes(&mut self, buf: &mut [u8]) {
        for c in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

/// `len` pseudo-random bytes from `seed` (incompressible: the journal holds what is written).
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Rng::new(seed).fill_bytes(&mut v);
    v
}

/// The seed given in `JACKDAW_SEED` (decimal or 0x-hex), if any.
pub fn env_seed() -> Option<u64> {
    let s = std::env::var("JACKDAW_SEED").ok()?;
    let s = s.trim();
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        s.parse::<u64>()
    };
    Some(v.unwrap_or_else(|_| panic!("JACKDAW_SEED={s:?} is not a u64")))
}

/// The test's seed: `JACKDAW_SEED` when set (replay), else from the clock; printed either way.
pub fn seed() -> u64 {
    let s = env_seed().unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("seed {s} (replay with JACKDAW_SEED={s})");
    s
}

/// `JACKDAW_SEED` if set, else `default` (fixed, so CI runs are reproducible). Prints it.
pub fn seed_or(test: &str, default: u64) -> u64 {
    let seed = env_seed().unwrap_or(default);
    println!("{test}: seed {seed} (replay with JACKDAW_SEED={seed})");
    seed
}

/// The seeds of a multi-seed test: `JACKDAW_SEED` alone if set, else `n` seeds from `base`.
pub fn seeds(test: &str, base: u64, n: u64) -> Vec<u64> {
    match env_seed() {
        Some(s) => {
            println!("{test}: seed {s} from JACKDAW_SEED");
            vec![s]
        }
        None => {
            let v: Vec<u64> = (0..n).map(|i| base + i).collect();
            println!("{test}: seeds {v:?} (replay one with JACKDAW_SEED=<seed>)");
            v
        }
    }
}

/// Prints its message if dropped while the thread panics (a failing test shows its seed even
/// when the assertion that failed knows nothing about it).
pub struct OnPanic(pub String);

impl Drop for OnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("\n*** {} ***\n", self.0);
        }
    }
}

/// Copy a directory tree (regular files and directories only). Used on a database that is still
/// open to get a crash image: everything the engine wrote to the OS is in it.
/// A missing `from` (a process killed before it created the database) copies as nothing.
pub fn copy_dir(from: &Path, to: &Path) {
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("read {}: {e}", from.display()),
    };
    std::fs::create_dir_all(to).unwrap();
    for e in entries {
        let e = e.unwrap();
        let ty = e.file_type().unwrap();
        let dst = to.join(e.file_name());
        if ty.is_dir() {
            copy_dir(&e.path(), &dst);
        } else if ty.is_file() {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}
