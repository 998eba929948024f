//! The real storage backend: files on a file system.

use super::sys;
use super::{
    JournalHandles, JournalIo, LockAttempt, LockGuard, LockTarget, Mapping, OpenMode, Storage, StorageFile, SyncSite,
};
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

/// A held `flock`, registered in [`HELD`] while it lives.
struct FsLock {
    _file: File,
    id: FileId,
}
impl LockGuard for FsLock {}

impl FsLock {
    fn new(file: File) -> io::Result<FsLock> {
        let id = file_id(&file)?;
        HELD.lock().unwrap_or_else(|p| p.into_inner()).push(id);
        Ok(FsLock { _file: file, id })
    }
}

impl Drop for FsLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = held.iter().position(|h| *h == self.id) {
            held.swap_remove(i);
        }
    }
}

/// A file's identity: device and inode.
type FileId = (u64, u64);

fn file_id(file: &File) -> io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// The files this process holds a lock on through a live [`FsLock`] (one entry per lock).
///
/// It tells the two reasons a lock can be held *by this process's pid* apart: a lock this
/// process holds now (an open `Env`: a real conflict, refused at once), and a lock an `Env`
/// already dropped whose descriptor lives on for a moment in a child another thread is
/// spawning: between `fork` and `exec` the child holds copies of every descriptor, `O_CLOEXEC`
/// ones included, and a `flock` is released only when the last copy closes. That one is waited
/// out for up to [`FORK_GRACE`].
static HELD: std::sync::Mutex<Vec<FileId>> = std::sync::Mutex::new(Vec::new());

/// How long a lock held under this process's pid but by no live `Env` of it is waited for (a
/// spawned child execs within microseconds; a forked child that never execs keeps it for good,
/// and the open then fails with `Locked`).
const FORK_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Try `flock` (shared or exclusive, never blocking), waiting out only a lock that a child
/// being spawned holds for a moment (see [`HELD`]). `Ok(false)`: held by someone else.
fn try_flock(file: &File, shared: bool) -> io::Result<bool> {
    let give_up = std::time::Instant::now() + FORK_GRACE;
    // A lock released between the failed attempt and the look at `/proc/locks` shows no holder:
    // try again at once, a few times (no holder is also what a system without `/proc` says).
    let mut vanished = 0;
    loop {
        let r = if shared { file.try_lock_shared() } else { file.try_lock() };
        match r {
            Ok(()) => return Ok(true),
            Err(fs::TryLockError::WouldBlock) => match flock_holder(file) {
                None if vanished < 3 => vanished += 1,
                Some(pid) if pid == std::process::id() && std::time::Instant::now() < give_up => {
                    if HELD.lock().unwrap_or_else(|p| p.into_inner()).contains(&file_id(file)?) {
                        return Ok(false);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                _ => return Ok(false),
            },
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

impl Storage for FsStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StorageFile>> {
        let mut o = OpenOptions::new();
        o.read(true).write(mode != OpenMode::ReadOnly);
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

    fn lock_shared(&self, path: &Path) -> io::Result<LockAttempt> {
        FsStorage::lock_shared_file(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn sync_dir(&self, path: &Path, _site: SyncSite) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    /// `flock(LOCK_EX | LOCK_NB)` (std's `try_lock` on Linux) on a descriptor of its own.
    ///
    /// Why `flock` and not `fcntl` (POSIX record) locks: a POSIX lock belongs to the process, so
    /// a second `Env` opening the same database in this process would get it too, and it is
    /// dropped as soon as the process closes *any* descriptor of the file, and an open database
    /// has two descriptors of its data file (the one `DataFile` reads and writes through and the
    /// lock's own, opened here), whose closing order nothing ties. A `flock` belongs to the open
    /// file description (shared only with `dup`s and forked children of this one): a
    /// second open in the same process conflicts, and closing other descriptors of the file
    /// leaves it held. Both are advisory; `flock` is unreliable on some network file systems
    /// (DURABILITY.md §9). (Linux OFD `fcntl` locks would do as well, but cannot name a holder.)
    fn lock(&self, path: &Path, target: LockTarget) -> io::Result<LockAttempt> {
        let file = match target {
            LockTarget::LockFile => {
                OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?
            }
            LockTarget::Existing => File::open(path)?,
        };
        if try_flock(&file, false)? {
            if target == LockTarget::LockFile {
                file.set_len(0)?;
                file.write_all_at(format!("{}\n", std::process::id()).as_bytes(), 0)?;
            }
            return Ok(LockAttempt::Acquired(Box::new(FsLock::new(file)?)));
        }
        let pid = flock_holder(&file).or_else(|| match target {
            // The holder wrote its pid after locking (empty if it has not yet).
            LockTarget::LockFile => fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok()),
            LockTarget::Existing => None,
        });
        Ok(LockAttempt::Held { pid })
    }
}

impl FsStorage {
    /// `flock(LOCK_SH | LOCK_NB)` (see `lock`).
    fn lock_shared_file(path: &Path) -> io::Result<LockAttempt> {
        let file = File::open(path)?;
        if try_flock(&file, true)? {
            return Ok(LockAttempt::Acquired(Box::new(FsLock::new(file)?)));
        }
        Ok(LockAttempt::Held { pid: flock_holder(&file) })
    }
}

/// The process holding a `flock` on `file`, from `/proc/locks` (Linux; `None` elsewhere or when
/// not found). Lines read `1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF`, the
/// device numbers in hex; a blocked waiter's line has `->` after the number and is skipped.
fn flock_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    let dev = m.dev();
    let (major, minor) = (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff), (dev & 0xff) | ((dev >> 12) & !0xff));
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let mut same_inode = Vec::new();
    for line in locks.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != "FLOCK" {
            continue;
        }
        let Ok(pid) = f[4].parse::<u32>() else { continue };
        let mut id = f[5].split(':');
        let (Some(ma), Some(mi), Some(ino)) = (id.next(), id.next(), id.next()) else { continue };
        if ino.parse::<u64>().ok() != Some(m.ino()) {
            continue;
        }
        if u64::from_str_radix(ma, 16).ok() == Some(major) && u64::from_str_radix(mi, 16).ok() == Some(minor) {
            return Some(pid);
        }
        same_inode.push(pid);
    }
    // Some file systems (overlays) report another device in `stat` than in `/proc/locks`.
    match same_inode[..] {
        [pid] => Some(pid),
        _ => None,
    }
}

impl StorageFile for FsFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
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
    fn space_free(&self) -> io::Result<Option<u64>> {
        sys::space_free(&self.file).map(Some)
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
