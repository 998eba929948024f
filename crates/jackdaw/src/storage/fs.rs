//! The real storage backend: files on a file system.

use super::sys;
use super::{JournalHandles, JournalIo, LockGuard, Mapping, OpenMode, Split, Storage, StorageFile, SyncSite};
use std::fs::{self, File, OpenOptions};
use std::io::{self, IoSlice};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

/// Files on the local file system.
#[derive(Debug, Default, Clone)]
pub struct FsStorage;

struct FsFile {
    file: File,
}

struct FsMap(sys::FileMap);

struct FsLock {
    _file: File,
}
impl LockGuard for FsLock {}

impl Storage for FsStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if mode == OpenMode::CreateReadWrite {
            o.create(true);
        }
        Ok(Arc::new(FsFile { file: o.open(path)? }))
    }

    fn open_journal(&self, path: &Path) -> io::Result<JournalHandles> {
        let buffered: Arc<dyn StorageFile> =
            Arc::new(FsFile { file: OpenOptions::new().read(true).write(true).open(path)? });
        let direct = OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT | libc::O_DSYNC).open(path);
        match direct {
            Ok(file) => Ok(JournalHandles { direct: Arc::new(FsFile { file }), buffered, io: JournalIo::DirectSync }),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                Ok(JournalHandles { direct: buffered.clone(), buffered, io: JournalIo::BufferedFsync })
            }
            Err(e) => Err(e),
        }
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        fs::create_dir_all(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for e in fs::read_dir(path)? {
            out.push(e?.file_name().to_string_lossy().into_owned());
        }
        out.sort();
        Ok(out)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn sync_dir(&self, path: &Path, _site: SyncSite) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        // std's try_lock is flock(LOCK_EX | LOCK_NB) on Linux: an open-file-description lock.
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(FsLock { _file: file }))),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

impl StorageFile for FsFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
    fn read_split_at(&self, offset: u64, split: Split, heads: &mut [u8], out: &mut Vec<u8>) -> io::Result<()> {
        sys::preadv_split(&self.file, offset, split, heads, out)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }
    fn write_vectored_at(&self, bufs: &[IoSlice<'_>], offset: u64) -> io::Result<()> {
        sys::pwritev_all(&self.file, bufs, offset)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        sys::fallocate(&self.file, len)
    }
    fn sync_data(&self, _site: SyncSite) -> io::Result<()> {
        self.file.sync_data()
    }
    fn sync_all(&self, _site: SyncSite) -> io::Result<()> {
        self.file.sync_all()
    }
    fn map(&self, len: u64) -> io::Result<Arc<dyn Mapping>> {
        Ok(Arc::new(FsMap(sys::FileMap::new(&self.file, len)?)))
    }
    fn write_back(&self, offset: u64, len: u64) -> io::Result<()> {
        // Unsupported here (EINVAL/ENOSYS): pacing is only a hint.
        let _ = sys::sync_file_range_write(&self.file, offset, len);
        Ok(())
    }
}

impl Mapping for FsMap {
    fn len(&self) -> usize {
        self.0.bytes().len()
    }
    fn slice(&self, offset: usize, len: usize) -> Option<&[u8]> {
        self.0.bytes().get(offset..offset.checked_add(len)?)
    }
}
