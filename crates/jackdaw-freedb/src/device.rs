//! Bytes written, counted at the block device (`/sys/dev/block/MAJ:MIN/stat`, sectors written),
//! as WORKLOADS.md says: `/proc/self/io` over-counts small buffered writes on this kernel. The
//! window is closed by an untimed `sync` so that writes left to the OS are counted. The counter is
//! device-wide: anything else writing to the same disk meanwhile is counted too.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The `stat` file of the block device holding a directory.
#[derive(Debug, Clone)]
pub struct Device {
    stat: PathBuf,
    /// The device's name (`vda`, ...).
    pub name: String,
}

impl Device {
    /// The device behind `dir`, if it is on one (not tmpfs or overlay).
    pub fn of(dir: &Path) -> Option<Device> {
        let dev = std::fs::metadata(dir).ok()?.dev();
        // Linux's dev_t layout (glibc's gnu_dev_major / gnu_dev_minor).
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
        if major == 0 {
            return None;
        }
        let real = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
        let stat = real.join("stat");
        stat.exists().then(|| Device {
            name: real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            stat,
        })
    }

    /// Bytes written to the device so far (sectors written × 512).
    pub fn bytes_written(&self) -> Option<u64> {
        let s = std::fs::read_to_string(&self.stat).ok()?;
        s.split_whitespace().nth(6)?.parse::<u64>().ok().map(|x| x * 512)
    }
}

/// Ask the OS to write everything back (the `sync` program: no unsafe code here).
pub fn sync_all() {
    let _ = std::process::Command::new("sync").status();
}

/// A measurement window over a device's bytes written.
pub struct Window {
    dev: Option<Device>,
    start: Option<u64>,
}

impl Window {
    /// Open a window: `sync` first so that earlier writes are not counted.
    pub fn open(dir: &Path) -> Window {
        let dev = Device::of(dir);
        sync_all();
        let start = dev.as_ref().and_then(|d| d.bytes_written());
        Window { dev, start }
    }

    /// Close it (after a `sync`): bytes written since `open`, if the device could be read.
    pub fn close(&self) -> Option<u64> {
        sync_all();
        let end = self.dev.as_ref()?.bytes_written()?;
        Some(end.saturating_sub(self.start?))
    }
}
