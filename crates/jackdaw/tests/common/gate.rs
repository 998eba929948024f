//! `GatedStorage`: a `Storage` wrapper (written against the public traits only) whose syncs at
//! chosen `SyncSite`s, and whose reads of the header block, can be made to block until the test
//! opens the gate (or lets calls through one at a time).
#![allow(dead_code)]

use jackdaw::internals::{
    FsStorage, JournalHandles, LockAttempt, LockGuard, LockTarget, Mapping, OpenMode, Storage, StorageFile, SyncSite,
};
use std::io::{self, IoSlice};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// `sync_data` / `sync_all` with this site.
    Sync(SyncSite),
    /// `read_exact_at` at offset 0 of the data file (header slot 0: open and `check()`).
    HeaderRead,
    /// Every sync, whatever its site (only as an armed point).
    AnySync,
    /// `Storage::remove` of any path.
    Remove,
}

impl Point {
    fn matches(self, call: Point) -> bool {
        self == call || (self == Point::AnySync && matches!(call, Point::Sync(_)))
    }
}

#[derive(Default, Debug)]
struct State {
    armed: Option<Point>,
    /// Calls currently held at the gate.
    waiting: usize,
    /// Calls that reached the gate since it was armed.
    arrived: usize,
    /// Held calls allowed through by `step` (not yet taken).
    tickets: usize,
    /// The points of the calls held right now.
    held: Vec<Point>,
}

/// The gate: armed for one point; calls reaching it wait until `release`.
#[derive(Default, Debug)]
pub struct Gate {
    st: Mutex<State>,
    cv: Condvar,
}

impl Gate {
    pub fn arm(&self, p: Point) {
        let mut s = self.st.lock().unwrap();
        s.armed = Some(p);
        s.arrived = 0;
        s.tickets = 0;
    }
    /// Let one held (or the next) call through; the gate stays armed.
    pub fn step(&self) {
        self.st.lock().unwrap().tickets += 1;
        self.cv.notify_all();
    }
    /// `step`, then wait until the call let through has left the gate (so the next
    /// `wait_held_or` sees the following call, not this one).
    pub fn step_and_wait(&self) {
        let mut s = self.st.lock().unwrap();
        s.tickets += 1;
        self.cv.notify_all();
        while s.tickets > 0 {
            s = self.cv.wait(s).unwrap();
        }
    }
    /// Points of the calls held right now.
    pub fn held(&self) -> Vec<Point> {
        self.st.lock().unwrap().held.clone()
    }
    /// Calls that reached the gate since it was armed.
    pub fn arrived(&self) -> usize {
        self.st.lock().unwrap().arrived
    }
    /// Wait until at least `n` calls are held, or `done()` is true; false after `limit`.
    pub fn wait_held_or(&self, n: usize, limit: Duration, done: impl Fn() -> bool) -> bool {
        let end = Instant::now() + limit;
        let mut s = self.st.lock().unwrap();
        while s.waiting < n && !done() {
            let now = Instant::now();
            if now >= end {
                return false;
            }
            s = self.cv.wait_timeout(s, (end - now).min(Duration::from_millis(20))).unwrap().0;
        }
        true
    }
    /// Open the gate: waiting calls proceed, later ones pass.
    pub fn release(&self) {
        let mut s = self.st.lock().unwrap();
        s.armed = None;
        s.tickets = 0;
        self.cv.notify_all();
    }
    /// Calls held right now.
    pub fn waiting(&self) -> usize {
        self.st.lock().unwrap().waiting
    }
    /// Wait until at least one call is held; false after `limit` (a deadlock guard, not a timing
    /// assertion: the event is expected to happen promptly).
    pub fn wait_blocked(&self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut s = self.st.lock().unwrap();
        while s.waiting == 0 {
            let now = Instant::now();
            if now >= end {
                return false;
            }
            s = self.cv.wait_timeout(s, end - now).unwrap().0;
        }
        true
    }
    fn pass(&self, p: Point) {
        let mut s = self.st.lock().unwrap();
        if !s.armed.is_some_and(|a| a.matches(p)) {
            return;
        }
        s.waiting += 1;
        s.arrived += 1;
        s.held.push(p);
        self.cv.notify_all();
        loop {
            if !s.armed.is_some_and(|a| a.matches(p)) {
                break;
            }
            if s.tickets > 0 {
                s.tickets -= 1;
                break;
            }
            s = self.cv.wait(s).unwrap();
        }
        let i = s.held.iter().position(|h| *h == p).expect("held");
        s.held.remove(i);
        s.waiting -= 1;
        self.cv.notify_all();
    }
}

/// Opens the gate when dropped: a test that panics with the gate armed must not leave a flush
/// (or the `Env` drop that follows the panic) waiting forever.
pub struct ReleaseOnDrop(pub Arc<Gate>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// `FsStorage` with a gate.
#[derive(Debug, Clone)]
pub struct GatedStorage {
    inner: Arc<dyn Storage>,
    pub gate: Arc<Gate>,
}

impl GatedStorage {
    pub fn new() -> GatedStorage {
        GatedStorage { inner: Arc::new(FsStorage), gate: Arc::new(Gate::default()) }
    }
}

struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Arc<Gate>,
    is_data: bool,
}

struct GatedMap(Arc<dyn Mapping>);

struct GatedLock(#[allow(dead_code)] Box<dyn LockGuard>);
impl LockGuard for GatedLock {}

impl Mapping for GatedMap {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn slice(&self, offset: usize, len: usize) -> Option<&[u8]> {
        self.0.slice(offset, len)
    }
}

impl GatedStorage {
    fn wrap(&self, f: Arc<dyn StorageFile>, is_data: bool) -> Arc<dyn StorageFile> {
        Arc::new(GatedFile { inner: f, gate: self.gate.clone(), is_data })
    }
}

impl Storage for GatedStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        let is_data = path.file_name().is_some_and(|n| n == "data.jdb");
        Ok(self.wrap(self.inner.open(path, mode)?, is_data))
    }
    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        let h = self.inner.open_journal(path)?;
        let buffered = self.wrap(h.buffered.clone(), false);
        // Keep "same handle" identity: the journal compares handles with Arc::ptr_eq.
        let direct = if Arc::ptr_eq(&h.direct, &h.buffered) { buffered.clone() } else { self.wrap(h.direct, false) };
        Ok(JournalHandles { direct, buffered, io: h.io })
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.gate.pass(Point::Remove);
        self.inner.remove(path)
    }
    fn sync_dir(&self, path: &Path, site: SyncSite) -> io::Result<()> {
        self.gate.pass(Point::Sync(site));
        self.inner.sync_dir(path, site)
    }
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        Ok(match self.inner.lock(path, target)? {
            LockAttempt::Acquired(g) => LockAttempt::Acquired(Box::new(GatedLock(g))),
            held => held,
        })
    }
}

impl StorageFile for GatedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if self.is_data && offset == 0 {
            self.gate.pass(Point::HeaderRead);
        }
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()> {
        self.inner.write_vectored_at(bufs, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)
    }
    fn sync_data(&self, site: SyncSite) -> io::Result<()> {
        self.gate.pass(Point::Sync(site));
        self.inner.sync_data(site)
    }
    fn sync_all(&self, site: SyncSite) -> io::Result<()> {
        self.gate.pass(Point::Sync(site));
        self.inner.sync_all(site)
    }
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
        Ok(Arc::new(GatedMap(self.inner.map(len)?)))
    }
}
