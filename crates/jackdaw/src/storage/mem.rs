//! The in-memory storage backend: files in RAM, shared by every `Env` opened on the same
//! `MemStorage` value (so a test can "reopen" a database). Mapped reads are served from the same
//! memory the writes go to, in fixed chunks that never move, like a file's page cache.

use super::sys::SharedChunk;
use super::{
    JournalHandles, JournalIo, LockAttempt, LockGuard, LockTarget, Mapping, OpenMode, Storage, StorageFile, SyncSite,
};
use crate::sync::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, IoSlice};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Chunk size of in-memory files: a multiple of every page size (64 KiB at most).
const CHUNK: usize = 1 << 20;

/// An in-memory file system. Cloning gives another handle to the same files.
#[derive(Clone, Default)]
pub struct MemStorage {
    inner: Arc<Mutex<MemFs>>,
}

impl std::fmt::Debug for MemStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemStorage")
    }
}

#[derive(Default)]
struct MemFs {
    files: BTreeMap<PathBuf, Arc<MemFile>>,
    dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
}

/// One in-memory file.
pub(crate) struct MemFile {
    state: Mutex<MemFileState>,
}

struct MemFileState {
    len: u64,
    chunks: Vec<Arc<SharedChunk>>,
}

impl MemStorage {
    pub fn new() -> MemStorage {
        MemStorage::default()
    }
    /// A deep copy of every file (a crash image with everything written kept).
    pub fn deep_clone(&self) -> MemStorage {
        let fs = self.inner.lock();
        let mut files = BTreeMap::new();
        for (p, f) in &fs.files {
            let st = f.state.lock();
            let copy = MemFile::new();
            {
                let mut c = copy.state.lock();
                c.len = st.len;
                for ch in &st.chunks {
                    let n = SharedChunk::new(CHUNK);
                    n.write(0, ch.bytes());
                    c.chunks.push(Arc::new(n));
                }
            }
            files.insert(p.clone(), Arc::new(copy));
        }
        MemStorage { inner: Arc::new(Mutex::new(MemFs { files, dirs: fs.dirs.clone(), locks: BTreeSet::new() })) }
    }
    /// The bytes of a file, for tests.
    pub fn read_file(&self, path: &Path) -> Option<Vec<u8>> {
        let f = self.inner.lock().files.get(path)?.clone();
        let len = f.state.lock().len as usize;
        let mut v = vec![0u8; len];
        f.read_exact_at(&mut v, 0).ok()?;
        Some(v)
    }
    /// Replace a file's bytes, for corruption tests.
    pub fn write_file(&self, path: &Path, data: &[u8]) {
        let f = MemFile::new();
        let _ = f.write_all_at(data, 0);
        self.inner.lock().files.insert(path.to_path_buf(), Arc::new(f));
    }
}

impl MemFile {
    fn new() -> MemFile {
        MemFile { state: Mutex::new(MemFileState { len: 0, chunks: Vec::new() }) }
    }
}

impl MemFileState {
    fn ensure(&mut self, len: u64) {
        let need = (len as usize).div_ceil(CHUNK);
        while self.chunks.len() < need {
            self.chunks.push(Arc::new(SharedChunk::new(CHUNK)));
        }
    }
    fn zero_range(&mut self, from: u64, to: u64) {
        let mut pos = from;
        while pos < to {
            let ci = (pos as usize) / CHUNK;
            let off = (pos as usize) % CHUNK;
            let n = (CHUNK - off).min((to - pos) as usize);
            if let Some(c) = self.chunks.get(ci) {
                c.write(off, &vec![0u8; n]);
            }
            pos += n as u64;
        }
    }
}

struct MemLock {
    fs: Arc<Mutex<MemFs>>,
    path: PathBuf,
}
impl LockGuard for MemLock {}
impl Drop for MemLock {
    fn drop(&mut self) {
        self.fs.lock().locks.remove(&self.path);
    }
}

fn not_found(p: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} not found", p.display()))
}

impl Storage for MemStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        let mut fs = self.inner.lock();
        if let Some(f) = fs.files.get(path) {
            return Ok(f.clone());
        }
        if mode != OpenMode::CreateReadWrite {
            return Err(not_found(path));
        }
        let f = Arc::new(MemFile::new());
        fs.files.insert(path.to_path_buf(), f.clone());
        Ok(f)
    }
    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        let f = self.open(path, OpenMode::ReadWrite)?;
        Ok(JournalHandles { direct: f.clone(), buffered: f, io: JournalIo::Memory })
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.inner.lock();
        let mut p = path.to_path_buf();
        loop {
            fs.dirs.insert(p.clone());
            if !p.pop() || p.as_os_str().is_empty() {
                break;
            }
        }
        Ok(())
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let fs = self.inner.lock();
        if !fs.dirs.contains(path) {
            return Err(not_found(path));
        }
        let mut out: Vec<String> = fs
            .files
            .keys()
            .chain(fs.dirs.iter())
            .filter(|p| p.parent() == Some(path))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
    fn exists(&self, path: &Path) -> bool {
        let fs = self.inner.lock();
        fs.files.contains_key(path) || fs.dirs.contains(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut fs = self.inner.lock();
        if let Some(f) = fs.files.remove(from) {
            fs.files.insert(to.to_path_buf(), f);
            return Ok(());
        }
        if !fs.dirs.contains(from) {
            return Err(not_found(from));
        }
        // A directory (a backup's temporary one): everything under it moves.
        let moved = |p: &Path| to.join(p.strip_prefix(from).unwrap_or(p));
        let files: Vec<PathBuf> = fs.files.keys().filter(|p| p.starts_with(from)).cloned().collect();
        for p in files {
            if let Some(f) = fs.files.remove(&p) {
                fs.files.insert(moved(&p), f);
            }
        }
        let dirs: Vec<PathBuf> = fs.dirs.iter().filter(|p| p.starts_with(from)).cloned().collect();
        for p in dirs {
            fs.dirs.remove(&p);
            fs.dirs.insert(moved(&p));
        }
        Ok(())
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.inner.lock();
        if fs.files.keys().chain(fs.dirs.iter()).any(|p| p != path && p.starts_with(path)) {
            return Err(io::Error::new(io::ErrorKind::DirectoryNotEmpty, format!("{} is not empty", path.display())));
        }
        fs.dirs.remove(path).then_some(()).ok_or_else(|| not_found(path))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.lock().files.remove(path).map(|_| ()).ok_or_else(|| not_found(path))
    }
    fn sync_dir(&self, _path: &Path, _site: SyncSite) -> io::Result<()> {
        Ok(())
    }
    /// Locks by path, held by this process (the lock file is not created: it holds nothing here).
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        let mut fs = self.inner.lock();
        if target == LockTarget::Existing && !fs.files.contains_key(path) {
            return Err(not_found(path));
        }
        if !fs.locks.insert(path.to_path_buf()) {
            return Ok(LockAttempt::Held { pid: Some(std::process::id()) });
        }
        Ok(LockAttempt::Acquired(Box::new(MemLock { fs: self.inner.clone(), path: path.to_path_buf() })))
    }
}

impl StorageFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let st = self.state.lock();
        let end = offset.checked_add(buf.len() as u64).ok_or_else(|| io::Error::other("offset overflow"))?;
        if end > st.len {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"));
        }
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset as usize + done;
            let (ci, off) = (pos / CHUNK, pos % CHUNK);
            let n = (CHUNK - off).min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&st.chunks[ci].bytes()[off..off + n]);
            done += n;
        }
        Ok(())
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        let end = offset.checked_add(buf.len() as u64).ok_or_else(|| io::Error::other("offset overflow"))?;
        st.ensure(end);
        let mut done = 0usize;
        while done < buf.len() {
            let pos = offset as usize + done;
            let (ci, off) = (pos / CHUNK, pos % CHUNK);
            let n = (CHUNK - off).min(buf.len() - done);
            st.chunks[ci].write(off, &buf[done..done + n]);
            done += n;
        }
        st.len = st.len.max(end);
        Ok(())
    }
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], mut offset: u64) -> io::Result<()> {
        for b in bufs {
            self.write_all_at(b, offset)?;
            offset += b.len() as u64;
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.state.lock().len)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        if len < st.len {
            let old = st.len;
            st.zero_range(len, old);
            st.chunks.truncate((len as usize).div_ceil(CHUNK));
        } else {
            st.ensure(len);
        }
        st.len = len;
        Ok(())
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        if len > self.len()? {
            self.set_len(len)?;
        }
        Ok(())
    }
    fn sync_data(&self, _site: SyncSite) -> io::Result<()> {
        Ok(())
    }
    fn sync_all(&self, _site: SyncSite) -> io::Result<()> {
        Ok(())
    }
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
        let st = self.state.lock();
        let len = len.min(st.len) as usize;
        Ok(Arc::new(MemMap { len, chunks: st.chunks[..len.div_ceil(CHUNK)].to_vec() }))
    }
}

struct MemMap {
    len: usize,
    chunks: Vec<Arc<SharedChunk>>,
}

impl Mapping for MemMap {
    fn len(&self) -> usize {
        self.len
    }
    fn slice(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        let (ci, off) = (offset / CHUNK, offset % CHUNK);
        if off + len > CHUNK {
            return None;
        }
        let c = self.chunks.get(ci)?;
        debug_assert!(c.len() == CHUNK);
        c.bytes().get(off..off + len)
    }
}
