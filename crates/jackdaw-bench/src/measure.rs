//! Measurement windows (device counters closed by an untimed `sync()`), a pausable stopwatch,
//! and the progress bar.

use crate::device::{proc_write_bytes, sync_all, BlockDev, DevCounters};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// A device-counter window: `begin` syncs (so earlier dirty data is not counted) and reads the
/// counters; `end` syncs (untimed: the caller has stopped its clock) so that whatever the engine
/// left to the OS is counted, and reads them again.
pub struct Window {
    dev: Option<BlockDev>,
    start: Option<DevCounters>,
    start_io: Option<u64>,
}

/// What a window saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measured {
    pub dev_bytes: Option<u64>,
    /// Bytes read from the device in the window.
    pub dev_read_bytes: Option<u64>,
    /// Read requests the device completed in the window, and the milliseconds they spent in it.
    pub dev_read_ios: Option<u64>,
    pub dev_read_ms: Option<u64>,
    pub dev_flushes: Option<u64>,
    pub dev_write_ios: Option<u64>,
    pub proc_write_bytes: Option<u64>,
}

impl Window {
    pub fn begin(dev: Option<&BlockDev>) -> Window {
        sync_all();
        let dev = dev.cloned();
        let start = dev.as_ref().and_then(|d| d.read());
        Window { dev, start, start_io: proc_write_bytes() }
    }

    pub fn end(self) -> Measured {
        sync_all();
        let end = self.dev.as_ref().and_then(|d| d.read());
        let (mut m, io) = (Measured::default(), proc_write_bytes());
        if let (Some(a), Some(b)) = (self.start, end) {
            m.dev_bytes = Some(b.sectors_written.saturating_sub(a.sectors_written) * 512);
            m.dev_read_bytes = Some(b.sectors_read.saturating_sub(a.sectors_read) * 512);
            m.dev_read_ios = Some(b.read_ios.saturating_sub(a.read_ios));
            m.dev_read_ms = Some(b.read_ms.saturating_sub(a.read_ms));
            m.dev_write_ios = Some(b.write_ios.saturating_sub(a.write_ios));
            m.dev_flushes = match (a.flushes, b.flushes) {
                (Some(x), Some(y)) => Some(y.saturating_sub(x)),
                _ => None,
            };
        }
        if let (Some(a), Some(b)) = (self.start_io, io) {
            m.proc_write_bytes = Some(b.saturating_sub(a));
        }
        m
    }
}

/// A stopwatch that can leave untimed work (verification) out of a timed span.
pub struct Stopwatch {
    acc: Duration,
    since: Option<Instant>,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch { acc: Duration::ZERO, since: Some(Instant::now()) }
    }
    pub fn pause(&mut self) {
        if let Some(s) = self.since.take() {
            self.acc += s.elapsed();
        }
    }
    pub fn resume(&mut self) {
        if self.since.is_none() {
            self.since = Some(Instant::now());
        }
    }
    pub fn elapsed(&self) -> Duration {
        self.acc + self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal or progress is off).
#[derive(Clone)]
pub struct Progress(ProgressBar);

impl Progress {
    pub fn new(show: bool, len: u64, label: String) -> Progress {
        let target = if show { ProgressDrawTarget::stderr_with_hz(4) } else { ProgressDrawTarget::hidden() };
        let pb = ProgressBar::with_draw_target(Some(len), target);
        pb.set_style(
            ProgressStyle::with_template("{prefix:>34} [{bar:30}] {percent:>3}% {per_sec:>12} eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        pb.set_prefix(label);
        Progress(pb)
    }
    #[inline]
    pub fn inc(&self, n: u64) {
        self.0.inc(n);
    }
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// The process's page faults so far: (major, minor) (`getrusage`, every thread).
pub fn page_faults() -> (u64, u64) {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `rusage`.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return (0, 0);
    }
    (u.ru_majflt as u64, u.ru_minflt as u64)
}
