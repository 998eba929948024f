//! What the bench directory sits on, and the counters measured at the block device.
//!
//! Bytes written are counted at the block device (`/sys/dev/block/MAJ:MIN/stat`, sectors written
//! and flush requests), not with `/proc/self/io` `write_bytes`, which on 6.x kernels with large
//! folios counts a whole folio per dirtied 4 KiB (see WORKLOADS.md); `write_bytes` is kept as a
//! secondary column. The counters are device-wide: anything else writing to the same disk during
//! a measurement is counted too.

use anyhow::{Context, Result};
use serde::Serialize;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The mount that holds a directory.
#[derive(Debug, Clone, Serialize)]
pub struct MountInfo {
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
}

fn unescape(s: &str) -> String {
    // /proc/mounts escapes space, tab, newline and backslash as \ooo.
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount (longest matching mount point in /proc/mounts) holding `dir`.
pub fn mount_of(dir: &Path) -> Result<MountInfo> {
    let dir = std::fs::canonicalize(dir).with_context(|| format!("canonicalize {}", dir.display()))?;
    let mounts = std::fs::read_to_string("/proc/mounts").context("read /proc/mounts")?;
    let mut best: Option<MountInfo> = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let mp = unescape(f[1]);
        if dir.starts_with(&mp) && best.as_ref().is_none_or(|b| mp.len() >= b.mount_point.len()) {
            best = Some(MountInfo { mount_point: mp, fs_type: f[2].to_string(), source: unescape(f[0]) });
        }
    }
    best.with_context(|| format!("no mount holds {}", dir.display()))
}

/// The block device behind a directory, found from `st_dev` through /sys/dev/block.
#[derive(Debug, Clone, Serialize)]
pub struct BlockDev {
    /// e.g. `vda` (or `nvme0n1p2`).
    pub name: String,
    pub major: u32,
    pub minor: u32,
    /// The `stat` file read for the counters.
    #[serde(skip)]
    pub stat: PathBuf,
}

pub fn block_dev_of(dir: &Path) -> Option<BlockDev> {
    let md = std::fs::metadata(dir).ok()?;
    let dev = md.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        // A virtual file system (overlay, tmpfs, btrfs subvolume...): no block device to ask.
        return None;
    }
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).ok()?;
    let stat = real.join("stat");
    if !stat.exists() {
        return None;
    }
    let name = real.file_name()?.to_string_lossy().into_owned();
    Some(BlockDev { name, major, minor, stat })
}

/// A reading of the device's counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct DevCounters {
    /// Sectors read (what a cold read really fetched from the device).
    pub sectors_read: u64,
    /// Read requests completed (after the block layer merged adjacent ones).
    pub read_ios: u64,
    /// Milliseconds read requests spent in the device (summed over requests in flight at once).
    pub read_ms: u64,
    pub sectors_written: u64,
    pub write_ios: u64,
    /// Flush requests completed (kernel ≥ 5.5 has the field).
    pub flushes: Option<u64>,
    /// Requests in flight now.
    pub in_flight: u64,
    /// Sectors discarded (kernel ≥ 4.18 has the field; 0 before).
    pub sectors_discarded: u64,
}

impl BlockDev {
    pub fn read(&self) -> Option<DevCounters> {
        let s = std::fs::read_to_string(&self.stat).ok()?;
        let f: Vec<u64> = s.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if f.len() < 11 {
            return None;
        }
        Some(DevCounters {
            sectors_read: f[2],
            read_ios: f[0],
            read_ms: f[3],
            sectors_written: f[6],
            write_ios: f[4],
            flushes: f.get(15).copied(),
            in_flight: f[8],
            sectors_discarded: f.get(13).copied().unwrap_or(0),
        })
    }
}

/// `/proc/self/io` `write_bytes` (the secondary, folio-inflated figure).
pub fn proc_write_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    s.lines().find_map(|l| l.strip_prefix("write_bytes:").and_then(|v| v.trim().parse().ok()))
}

/// Wait until the device is quiet: nothing in flight and no sector written or discarded over
/// the last 100 ms (a deleted database's blocks are discarded in the background on a file system
/// mounted with `discard`, and would otherwise slow whichever engine runs next). Gives up after
/// `limit`. Returns how long it waited.
pub fn settle(dev: Option<&BlockDev>, limit: std::time::Duration) -> std::time::Duration {
    let t0 = std::time::Instant::now();
    let Some(dev) = dev else { return std::time::Duration::ZERO };
    let Some(mut last) = dev.read() else { return t0.elapsed() };
    let mut quiet = 0;
    while quiet < 4 && t0.elapsed() < limit {
        std::thread::sleep(std::time::Duration::from_millis(25));
        let Some(now) = dev.read() else { break };
        let idle = now.in_flight == 0
            && now.sectors_written == last.sectors_written
            && now.sectors_discarded == last.sectors_discarded;
        quiet = if idle { quiet + 1 } else { 0 };
        last = now;
    }
    t0.elapsed()
}

/// `sync(2)`: every dirty page of every file system to the device.
pub fn sync_all() {
    // SAFETY: sync() takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// [`disk_usage`] split in two: (data, journal) bytes, a file counting as journal when
/// `is_journal` says so of its path relative to `dir`. The two add up to `disk_usage(dir)`.
pub fn disk_usage_split(dir: &Path, is_journal: &dyn Fn(&Path) -> bool) -> (u64, u64) {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    let (mut data, mut journal) = (0, 0);
    for f in files {
        let Ok(md) = std::fs::metadata(&f) else { continue };
        let b = md.blocks() * 512;
        match f.strip_prefix(dir) {
            Ok(rel) if is_journal(rel) => journal += b,
            _ => data += b,
        }
    }
    (data, journal)
}

/// Space taken on disk by every file under `dir` (allocated blocks, so sparse files count what
/// they hold).
pub fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    for e in rd.flatten() {
        let Ok(md) = e.metadata() else { continue };
        if md.is_dir() {
            total += disk_usage(&e.path());
        } else {
            total += md.blocks() * 512;
        }
    }
    total
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => files_under(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// Read every file under `dir` from start to end with plain `read`s of 1 MiB, in MB/s: the
/// control beside a cold read through an engine (run right after a drop of the same files). On
/// this shared VM the same file reads at very different speeds depending on whether the host
/// still caches its blocks (a file written a minute ago: ~1.7 GB/s after a drop; one written
/// months ago: 0.5-0.8 GB/s), so a slow cold round is the engine's only if its control is fast.
pub fn read_files_mb_per_sec(dir: &Path) -> Result<f64> {
    let (bytes, took) = read_files(dir)?;
    Ok(bytes as f64 / took.as_secs_f64().max(1e-9) / 1e6)
}

/// Read every file under `dir` to its end: the bytes read and the time taken.
fn read_files(dir: &Path) -> Result<(u64, std::time::Duration)> {
    use std::io::Read;
    let mut files = Vec::new();
    files_under(dir, &mut files);
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let t = std::time::Instant::now();
    for p in files {
        let mut f = std::fs::File::open(&p).with_context(|| format!("open {}", p.display()))?;
        loop {
            let n = f.read(&mut buf).with_context(|| format!("read {}", p.display()))?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    Ok((total, t.elapsed()))
}

/// How the page cache was dropped for a cold read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DropMethod {
    /// `echo 3 > /proc/sys/vm/drop_caches` (the whole machine's page cache).
    DropCaches,
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` on every file of the database directory.
    Fadvise,
}

impl DropMethod {
    pub fn describe(self) -> &'static str {
        match self {
            DropMethod::DropCaches => "/proc/sys/vm/drop_caches (3)",
            DropMethod::Fadvise => "posix_fadvise(DONTNEED) on every file of the database dir",
        }
    }
}

/// Sync, then drop the page cache of the database in `dir` (the engine must be closed).
pub fn drop_cache(dir: &Path) -> Result<DropMethod> {
    sync_all();
    if std::fs::write("/proc/sys/vm/drop_caches", b"3\n").is_ok() {
        return Ok(DropMethod::DropCaches);
    }
    drop_cache_fadvise(dir)?;
    Ok(DropMethod::Fadvise)
}

/// `posix_fadvise(DONTNEED)` on every file under `dir` (after `fdatasync`ing it: only clean
/// pages can be dropped).
pub fn drop_cache_fadvise(dir: &Path) -> Result<()> {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    for p in files {
        let f = std::fs::File::open(&p).with_context(|| format!("open {}", p.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; fdatasync and fadvise only take integers.
        let rc = unsafe {
            libc::fdatasync(f.as_raw_fd());
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
        };
        if rc != 0 {
            anyhow::bail!("posix_fadvise({}) failed: {}", p.display(), std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each engine's files split between data and journal as its adapter says, and the two parts
    /// add up to the directory's size.
    /// The cold reads' control reads every byte of every file under the directory.
    #[test]
    fn the_control_reads_every_file_whole() {
        let dir = std::env::temp_dir().join(format!("jackdaw-bench-control-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("journal")).unwrap();
        std::fs::write(dir.join("data"), vec![1u8; (3 << 20) + 5]).unwrap();
        std::fs::write(dir.join("journal").join("a"), vec![2u8; 4096]).unwrap();
        std::fs::write(dir.join("empty"), b"").unwrap();
        let (bytes, _) = read_files(&dir).unwrap();
        assert_eq!(bytes, (3 << 20) + 5 + 4096);
        assert!(read_files_mb_per_sec(&dir).unwrap() > 0.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn size_splits_into_data_and_journal() {
        use crate::engines::Kind;
        let dir = std::env::temp_dir().join(format!("jackdaw-bench-split-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let write = |rel: &str, kib: usize| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, vec![7u8; kib << 10]).unwrap();
        };
        // One directory holding every engine's file names: data files of 64 KiB, logs of 16 KiB.
        for f in ["data.jdb", "data.mdb", "lock.mdb", "data.redb", "data.sqlite", "000007.sst", "MANIFEST-000005"] {
            write(f, 64);
        }
        for f in ["journal/00000001.jnl", "data.sqlite-wal", "data.sqlite-shm", "000009.log"] {
            write(f, 16);
        }
        let total = disk_usage(&dir);
        let kib = |(d, j): (u64, u64)| (d >> 10, j >> 10);
        for (kind, journal_kib) in
            [(Kind::Jackdaw, 16), (Kind::Lmdb, 0), (Kind::Redb, 0), (Kind::Sqlite, 32), (Kind::Rocksdb, 16)]
        {
            let split = disk_usage_split(&dir, &|rel| kind.is_journal_file(rel));
            assert_eq!(split.0 + split.1, total, "{kind:?}");
            // Blocks are allocated in whole file-system blocks: 16 KiB files take 16 KiB.
            assert_eq!(kib(split).1, journal_kib, "{kind:?}: journal part of {split:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unescapes_mount_points() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
