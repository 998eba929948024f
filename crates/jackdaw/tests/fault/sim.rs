//! `SimStorage`: a power-loss simulator behind the public `Storage` traits.
//!
//! The live state (what the engine reads, through `read_exact_at` and mappings) is an inner
//! `MemStorage`. Beside it, the simulator keeps what a power loss could leave on the device:
//!
//! - per file (inode): the durable bytes (`base`) and the log of operations since the file's last
//!   sync, in program order: writes (one per `write_*_at` call) and size changes (`set_len`,
//!   `allocate` growth). `sync_data`/`sync_all` make the whole log durable (the base becomes the
//!   live content). A write through the `direct` handle of `open_journal` (the storage reports
//!   `JournalIo::DirectSync`, i.e. `O_DIRECT|O_DSYNC`) is durable once it returns; it is kept in
//!   the log (so earlier unsynced operations keep their order) flagged durable. Deliberately
//!   pessimistic: such a write never makes a size change durable (bytes past the file's length in
//!   the crash image are dropped), which is the property the engine's preallocation relies on
//!   (`set_odsync_extends(true)` gives the lenient model, where it does).
//! - per directory: the durable entries and the log of creations, renames and removals since
//!   the directory's last `sync_dir`. A file whose name never became durable is gone after a
//!   crash, whatever was synced in it.
//!
//! After every mutating call a hook (installed by the test) runs with the storage in its new
//! state; it builds crash images (`build`): the durable state plus a choice of the pending
//! operations, in order (`Variant`): none, all, only the newest per file/directory, all but the
//! newest, or seeded random subsets in which kept writes may be torn at 512-byte sectors (each
//! sector old or new, or a prefix of the sectors new). A direct write is pending (tearable) at
//! its own point, durable afterwards.
//!
//! Ablation: `set_ablate(site)` turns the syncs of one `SyncSite` into no-ops that return `Ok`.

use super::Rng;
use jackdaw::internals::{
    JournalHandles, JournalIo, LockAttempt, LockTarget, Mapping, MemStorage, OpenMode, Storage, StorageFile, SyncSite,
};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, IoSlice};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub const SECTOR: u64 = 512;

#[derive(Clone)]
enum FOp {
    Write { off: u64, data: Arc<Vec<u8>> },
    SetLen(u64),
}

struct LOp {
    op: FOp,
    durable: bool,
    direct: bool,
    seq: u64,
}

struct Inode {
    base: Vec<u8>,
    log: Vec<LOp>,
    live: Arc<dyn StorageFile>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Entry {
    File(usize),
    Dir,
}

#[derive(Clone, Debug)]
enum DOp {
    Create(String, Entry),
    Rename(String, String),
    Remove(String),
}

#[derive(Default)]
struct Dir {
    base: BTreeMap<String, Entry>,
    log: Vec<DOp>,
}

struct State {
    mem: MemStorage,
    inodes: Vec<Inode>,
    names: HashMap<PathBuf, usize>,
    dirs: BTreeMap<PathBuf, Dir>,
    roots: Vec<PathBuf>,
    seq: u64,
}

/// What a crash point followed.
#[derive(Clone, Debug)]
pub enum OpKind {
    /// A write; the class of file and place (`data`, `header`, `data.new`, `journal`,
    /// `journal.direct`, `journal.prealloc`).
    Write(&'static str),
    SetLen,
    Allocate,
    Sync(SyncSite, bool),
    SyncDir(SyncSite, bool),
    Create,
    Rename,
    Remove,
    Mkdir,
}

#[derive(Clone, Debug)]
pub struct Point {
    /// Mutating calls so far (1-based index of this one).
    pub seq: u64,
    pub kind: OpKind,
}

impl Point {
    pub fn label(&self) -> String {
        match &self.kind {
            OpKind::Write(c) => format!("write {c}"),
            OpKind::SetLen => "set_len".into(),
            OpKind::Allocate => "allocate".into(),
            OpKind::Sync(s, false) => format!("sync {}", s.name()),
            OpKind::Sync(s, true) => format!("sync {} (ablated)", s.name()),
            OpKind::SyncDir(s, false) => format!("sync_dir {}", s.name()),
            OpKind::SyncDir(s, true) => format!("sync_dir {} (ablated)", s.name()),
            OpKind::Create => "create".into(),
            OpKind::Rename => "rename".into(),
            OpKind::Remove => "remove".into(),
            OpKind::Mkdir => "mkdir".into(),
        }
    }
}

/// Which pending operations a crash image keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Only what was made durable.
    DropAll,
    /// Everything written (the live state).
    KeepAll,
    /// Per file and per directory, only the newest pending operation.
    NewestOnly,
    /// Per file and per directory, every pending operation but the newest.
    AllButNewest,
    /// Each pending operation kept or dropped at random (seeded), kept writes sometimes torn.
    Random(u64),
}

pub type Hook = Box<dyn FnMut(&SimStorage, &Point) + Send>;

struct Shared {
    st: Mutex<State>,
    hook: Mutex<Option<Hook>>,
    ablate: Mutex<Option<SyncSite>>,
    spare_new: AtomicBool,
    /// Lenient `O_DSYNC`: a direct write also makes the size change it implies durable.
    odsync_extends: AtomicBool,
    crashed: AtomicBool,
}

/// The simulator. Cloning gives another handle to the same state.
#[derive(Clone)]
pub struct SimStorage {
    sh: Arc<Shared>,
}

impl std::fmt::Debug for SimStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimStorage")
    }
}

/// A crash image: directories and files (with their bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub roots: Vec<PathBuf>,
    pub dirs: Vec<PathBuf>,
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

impl Image {
    /// A `MemStorage` holding the image.
    pub fn mem(&self) -> MemStorage {
        let m = MemStorage::new();
        for d in self.roots.iter().chain(self.dirs.iter()) {
            m.create_dir_all(d).unwrap();
        }
        for (p, b) in &self.files {
            m.write_file(p, b);
        }
        m
    }
    pub fn hash(&self) -> u128 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut dirs = self.dirs.clone();
        dirs.sort();
        for d in &dirs {
            h.update(d.as_os_str().as_encoded_bytes());
            h.update(&[0]);
        }
        h.update(&[1]);
        for (p, b) in &self.files {
            h.update(p.as_os_str().as_encoded_bytes());
            h.update(&(b.len() as u64).to_le_bytes());
            h.update(b);
        }
        h.digest128()
    }
    pub fn bytes(&self) -> usize {
        self.files.values().map(|b| b.len()).sum()
    }
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("simulated power loss: {what}"))
}

/// The class of a write for the tallies.
fn class(path: &Path, direct: bool, off: u64, len: usize) -> &'static str {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name == "data.jdb" {
        if off < 2 * 4096 && len <= 4096 {
            "header"
        } else {
            "data"
        }
    } else if name == "data.jdb.tmp" {
        "data.new"
    } else if name.ends_with(".jnl.tmp") {
        "journal.prealloc"
    } else if name.ends_with(".jnl") {
        if direct {
            "journal.direct"
        } else {
            "journal"
        }
    } else {
        "other"
    }
}

/// Apply a write: whole (`tear` None), or only the sectors `tear` says are new.
fn apply_write(buf: &mut Vec<u8>, off: u64, data: &[u8], clip: bool, tear: Option<&dyn Fn(u64) -> bool>) {
    let off = off as usize;
    let mut end = off + data.len();
    if clip {
        end = end.min(buf.len());
        if end <= off {
            return;
        }
    } else if buf.len() < end {
        buf.resize(end, 0);
    }
    match tear {
        None => buf[off..end].copy_from_slice(&data[..end - off]),
        Some(new) => {
            let mut a = off;
            while a < end {
                let s = a as u64 / SECTOR;
                let b = (((s + 1) * SECTOR) as usize).min(end);
                if new(s) {
                    buf[a..b].copy_from_slice(&data[a - off..b - off]);
                }
                a = b;
            }
        }
    }
}

fn read_live(f: &dyn StorageFile) -> Vec<u8> {
    let len = f.len().unwrap() as usize;
    let mut v = vec![0u8; len];
    f.read_exact_at(&mut v, 0).unwrap();
    v
}

struct Chooser<'a> {
    v: Variant,
    /// Direct writes are clipped to the file's length (pessimistic `O_DSYNC`).
    clip_direct: bool,
    rng: Option<&'a mut Rng>,
    /// Random variants: probability (in 1/8) that a pending operation is kept.
    keep8: u64,
}

impl Chooser<'_> {
    fn keep(&mut self, is_last: bool) -> bool {
        match self.v {
            Variant::DropAll => false,
            Variant::KeepAll => true,
            Variant::NewestOnly => is_last,
            Variant::AllButNewest => !is_last,
            Variant::Random(_) => {
                let k = self.keep8;
                self.rng.as_mut().unwrap().chance(k, 8)
            }
        }
    }
}

impl State {
    fn content(&self, ino: usize, ch: &mut Chooser<'_>) -> Vec<u8> {
        let node = &self.inodes[ino];
        if ch.v == Variant::KeepAll {
            return read_live(node.live.as_ref());
        }
        let mut buf = node.base.clone();
        let last_pending = node.log.iter().rposition(|l| !l.durable);
        for (j, l) in node.log.iter().enumerate() {
            let keep = l.durable || ch.keep(Some(j) == last_pending);
            if !keep {
                continue;
            }
            match &l.op {
                FOp::SetLen(n) => buf.resize(*n as usize, 0),
                FOp::Write { off, data } => {
                    let torn =
                        !l.durable && matches!(ch.v, Variant::Random(_)) && ch.rng.as_mut().unwrap().chance(1, 3);
                    if torn {
                        let rng = ch.rng.as_mut().unwrap();
                        let first = *off / SECTOR;
                        let last = (*off + data.len().max(1) as u64 - 1) / SECTOR;
                        let n = last - first + 1;
                        // Per sector: new or old; half the time a prefix of the sectors is new.
                        let bits: Vec<bool> = if rng.chance(1, 2) {
                            let k = rng.below(n + 1);
                            (0..n).map(|i| i < k).collect()
                        } else {
                            (0..n).map(|_| rng.chance(1, 2)).collect()
                        };
                        let f = move |s: u64| bits[(s - first) as usize];
                        apply_write(&mut buf, *off, data, l.direct && ch.clip_direct, Some(&f));
                    } else {
                        apply_write(&mut buf, *off, data, l.direct && ch.clip_direct, None);
                    }
                }
            }
        }
        buf
    }

    fn entries(&self, d: &Dir, ch: &mut Chooser<'_>) -> BTreeMap<String, Entry> {
        let mut e = d.base.clone();
        if ch.v == Variant::DropAll {
            return e;
        }
        let n = d.log.len();
        for (j, op) in d.log.iter().enumerate() {
            if !ch.keep(j + 1 == n) {
                continue;
            }
            match op {
                DOp::Create(name, en) => {
                    e.insert(name.clone(), *en);
                }
                DOp::Rename(a, b) => {
                    if let Some(x) = e.remove(a) {
                        e.insert(b.clone(), x);
                    }
                }
                DOp::Remove(a) => {
                    e.remove(a);
                }
            }
        }
        e
    }

    fn pending(&self) -> usize {
        let reachable: std::collections::HashSet<usize> = self.names.values().copied().collect();
        let f: usize = reachable.iter().map(|&i| self.inodes[i].log.iter().filter(|l| !l.durable).count()).sum();
        let d: usize = self.dirs.values().map(|d| d.log.len()).sum();
        f + d
    }

    fn dir_log(&mut self, path: &Path, op: DOp) {
        let parent = path.parent().expect("a file in a directory");
        match self.dirs.get_mut(parent) {
            Some(d) => d.log.push(op),
            None => panic!("SimStorage: {} is outside the simulated directories", path.display()),
        }
    }
}

fn name_of(p: &Path) -> String {
    p.file_name().expect("a file name").to_string_lossy().into_owned()
}

impl SimStorage {
    /// An empty simulated file system whose `roots` exist (durably).
    pub fn new(roots: &[&str]) -> SimStorage {
        let mem = MemStorage::new();
        let mut dirs = BTreeMap::new();
        for r in roots {
            mem.create_dir_all(Path::new(r)).unwrap();
            dirs.insert(PathBuf::from(r), Dir::default());
        }
        SimStorage::with_state(State {
            mem,
            inodes: Vec::new(),
            names: HashMap::new(),
            dirs,
            roots: roots.iter().map(PathBuf::from).collect(),
            seq: 0,
        })
    }

    /// A simulated file system holding `img`, all of it durable.
    pub fn from_image(img: &Image) -> SimStorage {
        let mem = img.mem();
        let mut dirs: BTreeMap<PathBuf, Dir> = BTreeMap::new();
        for d in img.roots.iter().chain(img.dirs.iter()) {
            dirs.insert(d.clone(), Dir::default());
        }
        for d in &img.dirs {
            if let Some(p) = dirs.get_mut(d.parent().unwrap()) {
                p.base.insert(name_of(d), Entry::Dir);
            }
        }
        let mut inodes = Vec::new();
        let mut names = HashMap::new();
        for (p, b) in &img.files {
            let live = mem.open(p, OpenMode::ReadWrite).unwrap();
            let ino = inodes.len();
            inodes.push(Inode { base: b.clone(), log: Vec::new(), live });
            names.insert(p.clone(), ino);
            dirs.get_mut(p.parent().unwrap())
                .expect("file in a known directory")
                .base
                .insert(name_of(p), Entry::File(ino));
        }
        SimStorage::with_state(State { mem, inodes, names, dirs, roots: img.roots.clone(), seq: 0 })
    }

    fn with_state(st: State) -> SimStorage {
        SimStorage {
            sh: Arc::new(Shared {
                st: Mutex::new(st),
                hook: Mutex::new(None),
                ablate: Mutex::new(None),
                spare_new: AtomicBool::new(false),
                odsync_extends: AtomicBool::new(false),
                crashed: AtomicBool::new(false),
            }),
        }
    }

    pub fn set_hook(&self, h: Option<Hook>) {
        *self.sh.hook.lock().unwrap() = h;
    }

    pub fn set_ablate(&self, site: Option<SyncSite>) {
        *self.sh.ablate.lock().unwrap() = site;
    }

    /// With `true`, a direct (`O_DSYNC`) write that extends a file also makes the new size durable
    /// (what Linux does); the default is the pessimistic model described in the module docs.
    pub fn set_odsync_extends(&self, on: bool) {
        self.sh.odsync_extends.store(on, Ordering::SeqCst);
    }

    /// With `true`, syncs of files named `*.tmp` (files being created) are never ablated: only
    /// the site's other calls are (e.g. `DataGrow` growth, not the new data file's first sync).
    pub fn set_ablate_spare_new_files(&self, spare: bool) {
        self.sh.spare_new.store(spare, Ordering::SeqCst);
    }

    /// The power goes out: every later call fails and no hook runs (the engine still holding
    /// this storage can be dropped without changing anything).
    pub fn crash(&self) {
        self.sh.crashed.store(true, Ordering::SeqCst);
    }

    /// The live files (everything written so far).
    pub fn live(&self) -> MemStorage {
        self.sh.st.lock().unwrap().mem.clone()
    }

    /// Mutating calls so far.
    pub fn ops(&self) -> u64 {
        self.sh.st.lock().unwrap().seq
    }

    /// Pending (not durable) operations on named files and directories.
    pub fn pending(&self) -> usize {
        self.sh.st.lock().unwrap().pending()
    }

    /// Build the crash image `v` of the current state.
    pub fn build(&self, v: Variant) -> Image {
        let st = self.sh.st.lock().unwrap();
        let mut rng = match v {
            Variant::Random(s) => Some(Rng::new(s)),
            _ => None,
        };
        let keep8 = rng.as_mut().map_or(4, |r| *r.pick(&[2u64, 4, 4, 6]));
        let clip_direct = !self.sh.odsync_extends.load(Ordering::SeqCst);
        let mut ch = Chooser { v, clip_direct, rng: rng.as_mut(), keep8 };
        let mut img = Image { roots: st.roots.clone(), dirs: Vec::new(), files: BTreeMap::new() };
        let mut cache: HashMap<usize, Vec<u8>> = HashMap::new();
        let mut stack: Vec<PathBuf> = st.roots.iter().rev().cloned().collect();
        while let Some(d) = stack.pop() {
            let Some(dir) = st.dirs.get(&d) else { continue };
            let entries = st.entries(dir, &mut ch);
            let mut subdirs = Vec::new();
            for (name, e) in entries {
                let p = d.join(&name);
                match e {
                    Entry::Dir => {
                        img.dirs.push(p.clone());
                        subdirs.push(p);
                    }
                    Entry::File(i) => {
                        cache.entry(i).or_insert_with(|| st.content(i, &mut ch));
                        img.files.insert(p, cache[&i].clone());
                    }
                }
            }
            stack.extend(subdirs.into_iter().rev());
        }
        img
    }

    /// The model's `KeepAll` image must be the live state: compare them (a self-check of the
    /// simulator's bookkeeping).
    pub fn self_check(&self) -> Result<(), String> {
        let img = self.build(Variant::KeepAll);
        let st = self.sh.st.lock().unwrap();
        let mut live_names: Vec<&PathBuf> = st.names.keys().collect();
        live_names.sort();
        let img_names: Vec<&PathBuf> = img.files.keys().collect();
        if live_names != img_names {
            return Err(format!("names: live {live_names:?}, image {img_names:?}"));
        }
        // Replaying the log over the base must give the live bytes.
        for (p, &ino) in &st.names {
            let node = &st.inodes[ino];
            let mut buf = node.base.clone();
            for l in &node.log {
                match &l.op {
                    FOp::SetLen(n) => buf.resize(*n as usize, 0),
                    FOp::Write { off, data } => apply_write(&mut buf, *off, data, false, None),
                }
            }
            if buf != read_live(node.live.as_ref()) {
                return Err(format!("{}: log replay differs from the live file", p.display()));
            }
        }
        Ok(())
    }

    fn crashed(&self) -> io::Result<()> {
        if self.sh.crashed.load(Ordering::SeqCst) {
            return Err(eio("the device is gone"));
        }
        Ok(())
    }

    fn ablated(&self, site: SyncSite) -> bool {
        *self.sh.ablate.lock().unwrap() == Some(site)
    }

    /// Run the hook at a crash point (never while holding the state lock).
    fn point(&self, seq: u64, kind: OpKind) {
        if self.sh.crashed.load(Ordering::SeqCst) {
            return;
        }
        let h = self.sh.hook.lock().unwrap().take();
        if let Some(mut h) = h {
            h(self, &Point { seq, kind });
            let mut slot = self.sh.hook.lock().unwrap();
            if slot.is_none() {
                *slot = Some(h);
            }
        }
    }

    fn next_seq(st: &mut State) -> u64 {
        st.seq += 1;
        st.seq
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        self.crashed()?;
        let mut st = self.sh.st.lock().unwrap();
        if let Some(&ino) = st.names.get(path) {
            let live = st.inodes[ino].live.clone();
            return Ok(Arc::new(SimFile { sim: self.clone(), ino, path: path.to_path_buf(), live, direct: false }));
        }
        if mode == OpenMode::ReadWrite {
            return st.mem.open(path, mode);
        }
        let live = st.mem.open(path, OpenMode::CreateReadWrite)?;
        let ino = st.inodes.len();
        st.inodes.push(Inode { base: Vec::new(), log: Vec::new(), live: live.clone() });
        st.names.insert(path.to_path_buf(), ino);
        st.dir_log(path, DOp::Create(name_of(path), Entry::File(ino)));
        let seq = Self::next_seq(&mut st);
        drop(st);
        self.point(seq, OpKind::Create);
        Ok(Arc::new(SimFile { sim: self.clone(), ino, path: path.to_path_buf(), live, direct: false }))
    }

    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        self.crashed()?;
        let st = self.sh.st.lock().unwrap();
        let Some(&ino) = st.names.get(path) else {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{} not found", path.display())));
        };
        let live = st.inodes[ino].live.clone();
        let mk = |direct| -> Arc<dyn StorageFile> {
            Arc::new(SimFile { sim: self.clone(), ino, path: path.to_path_buf(), live: live.clone(), direct })
        };
        Ok(JournalHandles { direct: mk(true), buffered: mk(false), io: JournalIo::DirectSync })
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.crashed()?;
        let mut st = self.sh.st.lock().unwrap();
        let mut new_dirs = Vec::new();
        let mut p = path.to_path_buf();
        while !st.dirs.contains_key(&p) {
            new_dirs.push(p.clone());
            if !p.pop() || p.as_os_str().is_empty() {
                break;
            }
        }
        st.mem.create_dir_all(path)?;
        if new_dirs.is_empty() {
            return Ok(());
        }
        for d in new_dirs.iter().rev() {
            st.dirs.insert(d.clone(), Dir::default());
            if let Some(parent) = d.parent() {
                if let Some(pd) = st.dirs.get_mut(parent) {
                    pd.log.push(DOp::Create(name_of(d), Entry::Dir));
                }
            }
        }
        let seq = Self::next_seq(&mut st);
        drop(st);
        self.point(seq, OpKind::Mkdir);
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.crashed()?;
        let mem = self.sh.st.lock().unwrap().mem.clone();
        mem.list_dir(path)
    }

    fn exists(&self, path: &Path) -> bool {
        let mem = self.sh.st.lock().unwrap().mem.clone();
        mem.exists(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.crashed()?;
        let mut st = self.sh.st.lock().unwrap();
        assert_eq!(from.parent(), to.parent(), "renames stay in one directory");
        st.mem.rename(from, to)?;
        let ino = st.names.remove(from).expect("renamed file is known");
        st.names.insert(to.to_path_buf(), ino);
        st.dir_log(from, DOp::Rename(name_of(from), name_of(to)));
        let seq = Self::next_seq(&mut st);
        drop(st);
        self.point(seq, OpKind::Rename);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.crashed()?;
        let mut st = self.sh.st.lock().unwrap();
        st.mem.remove(path)?;
        st.names.remove(path);
        st.dir_log(path, DOp::Remove(name_of(path)));
        let seq = Self::next_seq(&mut st);
        drop(st);
        self.point(seq, OpKind::Remove);
        Ok(())
    }

    fn sync_dir(&self, path: &Path, site: SyncSite) -> io::Result<()> {
        self.crashed()?;
        let ablated = self.ablated(site);
        let mut st = self.sh.st.lock().unwrap();
        if !ablated {
            let mut ch = Chooser { v: Variant::KeepAll, clip_direct: true, rng: None, keep8: 8 };
            let d = st.dirs.get(path).unwrap_or_else(|| panic!("sync_dir of unknown {}", path.display()));
            let base = st.entries(d, &mut ch);
            let d = st.dirs.get_mut(path).unwrap();
            d.base = base;
            d.log.clear();
        }
        let seq = Self::next_seq(&mut st);
        drop(st);
        self.point(seq, OpKind::SyncDir(site, ablated));
        Ok(())
    }

    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        self.crashed()?;
        let mem = self.sh.st.lock().unwrap().mem.clone();
        mem.lock(path, target)
    }
}

struct SimFile {
    sim: SimStorage,
    ino: usize,
    path: PathBuf,
    live: Arc<dyn StorageFile>,
    direct: bool,
}

impl SimFile {
    fn write(&self, data: Vec<u8>, off: u64) -> io::Result<()> {
        self.sim.crashed()?;
        let mut st = self.sim.sh.st.lock().unwrap();
        self.live.write_all_at(&data, off)?;
        let seq = SimStorage::next_seq(&mut st);
        let cls = class(&self.path, self.direct, off, data.len());
        st.inodes[self.ino].log.push(LOp {
            op: FOp::Write { off, data: Arc::new(data) },
            durable: false,
            direct: self.direct,
            seq,
        });
        drop(st);
        self.sim.point(seq, OpKind::Write(cls));
        if self.direct {
            // O_DSYNC: durable once the call returns.
            let mut st = self.sim.sh.st.lock().unwrap();
            if let Some(l) = st.inodes[self.ino].log.iter_mut().find(|l| l.seq == seq) {
                l.durable = true;
            }
        }
        Ok(())
    }

    fn sync(&self, site: SyncSite) -> io::Result<()> {
        self.sim.crashed()?;
        let spared = self.sim.sh.spare_new.load(Ordering::SeqCst) && self.path.extension().is_some_and(|e| e == "tmp");
        let ablated = self.sim.ablated(site) && !spared;
        let mut st = self.sim.sh.st.lock().unwrap();
        if !ablated {
            let live = read_live(self.live.as_ref());
            let node = &mut st.inodes[self.ino];
            node.base = live;
            node.log.clear();
        }
        let seq = SimStorage::next_seq(&mut st);
        drop(st);
        self.sim.point(seq, OpKind::Sync(site, ablated));
        Ok(())
    }
}

impl StorageFile for SimFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.sim.crashed()?;
        self.live.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write(buf.to_vec(), offset)
    }
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()> {
        let mut v = Vec::with_capacity(bufs.iter().map(|b| b.len()).sum());
        for b in bufs {
            v.extend_from_slice(b);
        }
        self.write(v, offset)
    }
    fn len(&self) -> io::Result<u64> {
        self.sim.crashed()?;
        self.live.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.sim.crashed()?;
        let mut st = self.sim.sh.st.lock().unwrap();
        self.live.set_len(len)?;
        let seq = SimStorage::next_seq(&mut st);
        st.inodes[self.ino].log.push(LOp { op: FOp::SetLen(len), durable: false, direct: false, seq });
        drop(st);
        self.sim.point(seq, OpKind::SetLen);
        Ok(())
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.sim.crashed()?;
        let mut st = self.sim.sh.st.lock().unwrap();
        if len <= self.live.len()? {
            return Ok(());
        }
        self.live.allocate(len)?;
        let seq = SimStorage::next_seq(&mut st);
        st.inodes[self.ino].log.push(LOp { op: FOp::SetLen(len), durable: false, direct: false, seq });
        drop(st);
        self.sim.point(seq, OpKind::Allocate);
        Ok(())
    }
    fn sync_data(&self, site: SyncSite) -> io::Result<()> {
        self.sync(site)
    }
    fn sync_all(&self, site: SyncSite) -> io::Result<()> {
        self.sync(site)
    }
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
        self.sim.crashed()?;
        self.live.map(len)
    }
}
