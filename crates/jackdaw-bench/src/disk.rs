//! The physical limits of the disk under the bench directory, measured in the same run as the
//! engines: 4 KiB write + `fdatasync`, 4, 16, 32 and 64 KiB through `O_DIRECT|O_DSYNC`, 400 KiB
//! vectored write + `fdatasync`, and sequential write bandwidth.

use crate::measure::Window;
use crate::report::{Latency, Row};
use anyhow::{Context, Result};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

const FILE_BYTES: u64 = 16 << 20;

/// Sizes (KiB) of the `O_DIRECT|O_DSYNC` rows.
pub const DIRECT_KIB: [u64; 4] = [4, 16, 32, 64];

/// The name of the `O_DIRECT|O_DSYNC` row of `kib` KiB.
pub fn direct_row_name(kib: u64) -> String {
    format!("{kib}k-O_DIRECT|O_DSYNC")
}

/// The p50 latency (µs) of a raw `O_DIRECT|O_DSYNC` write of `bytes` (rounded up to 4 KiB), from
/// this run's disk rows: interpolated linearly between the two sizes around it (extrapolated
/// from the last two past 64 KiB). `None` without the disk rows.
pub fn raw_direct_p50_us(rows: &[Row], bytes: f64) -> Option<f64> {
    let pts: Vec<(f64, f64)> = DIRECT_KIB
        .iter()
        .filter_map(|k| {
            let r = rows.iter().find(|r| r.workload == "disk" && r.engine == direct_row_name(*k))?;
            Some((*k as f64 * 1024.0, r.latency.as_ref()?.p50_us))
        })
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let x = (bytes / 4096.0).ceil().max(1.0) * 4096.0;
    let i = pts.iter().position(|(s, _)| *s >= x).unwrap_or(pts.len() - 1).max(1);
    let ((x0, y0), (x1, y1)) = (pts[i - 1], pts[i]);
    Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
}

/// A 4 KiB-aligned heap buffer (O_DIRECT needs alignment).
struct Aligned {
    ptr: *mut u8,
    layout: Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = Layout::from_size_align(len, 4096).expect("layout");
        // SAFETY: non-zero size, valid alignment; freed in Drop with the same layout.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation failed");
        Aligned { ptr, layout }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr points to layout.size() initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

fn prealloc(path: &Path, rng: &mut crate::gen::Rng) -> Result<std::fs::File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    let mut chunk = vec![0u8; 1 << 20];
    rng.fill(&mut chunk);
    let mut off = 0;
    while off < FILE_BYTES {
        f.write_all_at(&chunk, off)?;
        off += chunk.len() as u64;
    }
    f.sync_all()?;
    Ok(f)
}

fn fdatasync(f: &std::fs::File) -> Result<()> {
    // SAFETY: a valid descriptor.
    let rc = unsafe { libc::fdatasync(f.as_raw_fd()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("fdatasync");
    }
    Ok(())
}

fn row(name: &str, ops: u64, elapsed: Duration, lat: &mut [Duration], w: crate::measure::Measured, notes: &str) -> Row {
    let secs = elapsed.as_secs_f64();
    Row {
        workload: "disk".into(),
        engine: name.into(),
        ops,
        txs: ops,
        secs,
        ops_per_sec: ops as f64 / secs,
        device_bytes_per_op: w.dev_bytes.map(|b| b as f64 / ops as f64),
        device_flushes_per_tx: w.dev_flushes.map(|f| f as f64 / ops as f64),
        latency: Latency::of(lat),
        notes: notes.into(),
        ..Row::default()
    }
}

/// Run the four measurements in `dir` with `iters` repetitions each (latency rows) and
/// `seq_bytes` for the bandwidth row.
pub fn measure(
    dir: &Path,
    dev: Option<&crate::device::BlockDev>,
    iters: u64,
    seq_bytes: u64,
    seed: u64,
) -> Result<Vec<Row>> {
    std::fs::create_dir_all(dir)?;
    let mut rng = crate::gen::Rng::stream(seed, "disk");
    let path = dir.join("disk-probe");
    let mut rows = Vec::new();
    let blocks = FILE_BYTES / 4096;

    // 4 KiB pwrite + fdatasync, overwriting blocks of a preallocated file.
    {
        let f = prealloc(&path, &mut rng)?;
        let mut buf = vec![0u8; 4096];
        let mut lat = Vec::with_capacity(iters as usize);
        let w = Window::begin(dev);
        let t0 = Instant::now();
        for i in 0..iters {
            rng.fill(&mut buf[..64]);
            let t = Instant::now();
            f.write_all_at(&buf, (i % blocks) * 4096)?;
            fdatasync(&f)?;
            lat.push(t.elapsed());
        }
        let el = t0.elapsed();
        rows.push(row(
            "4k-write+fdatasync",
            iters,
            el,
            &mut lat,
            w.end(),
            "pwrite 4 KiB over a preallocated file, then fdatasync",
        ));
    }

    // Aligned writes through O_DIRECT | O_DSYNC, at the sizes of journal records: 4 KiB (the
    // smallest) up to 64 KiB, so that a commit can be set against the raw write of its own
    // record's size (`raw_direct_p50_us` interpolates between these rows).
    for kib in DIRECT_KIB {
        let len = kib as usize * 1024;
        let f = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_DSYNC)
            .open(&path)
            .context("open O_DIRECT|O_DSYNC")?;
        let mut buf = Aligned::new(len);
        let slots = FILE_BYTES / len as u64;
        let n = if kib == 4 { iters } else { iters.div_ceil(2).max(1) };
        let mut lat = Vec::with_capacity(n as usize);
        let w = Window::begin(dev);
        let t0 = Instant::now();
        for i in 0..n {
            rng.fill(&mut buf.as_mut()[..64]);
            let t = Instant::now();
            f.write_all_at(buf.as_mut(), (i % slots) * len as u64)?;
            lat.push(t.elapsed());
        }
        let el = t0.elapsed();
        let name = direct_row_name(kib);
        let mut r = row(&name, n, el, &mut lat, w.end(), &format!("pwrite of an aligned {kib} KiB buffer"));
        r.mb_per_sec = Some(n as f64 * len as f64 / el.as_secs_f64() / 1e6);
        rows.push(r);
    }

    // 400 KiB vectored write (100 × 4 KiB iovecs) + fdatasync.
    {
        let f = OpenOptions::new().write(true).open(&path)?;
        let mut bufs: Vec<Vec<u8>> = (0..100).map(|_| vec![0u8; 4096]).collect();
        for b in &mut bufs {
            rng.fill(b);
        }
        let slots = FILE_BYTES / (400 * 1024);
        let n = iters.div_ceil(2).max(1);
        let mut lat = Vec::with_capacity(n as usize);
        let w = Window::begin(dev);
        let t0 = Instant::now();
        for i in 0..n {
            rng.fill(&mut bufs[0][..64]);
            let iov: Vec<libc::iovec> = bufs
                .iter()
                .map(|b| libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() })
                .collect();
            let off = ((i % slots) * 400 * 1024) as libc::off_t;
            let t = Instant::now();
            // SAFETY: iov points to 100 live buffers of their stated lengths.
            let wrote = unsafe { libc::pwritev(f.as_raw_fd(), iov.as_ptr(), iov.len() as i32, off) };
            if wrote != 400 * 1024 {
                return Err(std::io::Error::last_os_error()).context("pwritev (short or failed)");
            }
            fdatasync(&f)?;
            lat.push(t.elapsed());
        }
        let el = t0.elapsed();
        let mut r = row("400k-pwritev+fdatasync", n, el, &mut lat, w.end(), "100 × 4 KiB iovecs");
        r.mb_per_sec = Some(n as f64 * 400.0 * 1024.0 / el.as_secs_f64() / 1e6);
        rows.push(r);
    }
    std::fs::remove_file(&path).ok();

    // Sequential bandwidth: 1 MiB writes to a new file, then one fdatasync, timed together.
    {
        let p = dir.join("disk-seq");
        let f = OpenOptions::new().write(true).create(true).truncate(true).open(&p)?;
        let mut chunk = vec![0u8; 1 << 20];
        rng.fill(&mut chunk);
        let n = (seq_bytes >> 20).max(1);
        let w = Window::begin(dev);
        let t0 = Instant::now();
        for i in 0..n {
            chunk[0] = i as u8;
            f.write_all_at(&chunk, i << 20)?;
        }
        fdatasync(&f)?;
        let el = t0.elapsed();
        let m = w.end();
        let mut r = row("seq-write", n, el, &mut [], m, "1 MiB pwrites to a new file, one fdatasync; ops = MiB");
        r.mb_per_sec = Some((n << 20) as f64 / el.as_secs_f64() / 1e6);
        rows.push(r);
        drop(f);
        std::fs::remove_file(&p).ok();
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk_row(kib: u64, p50: f64) -> Row {
        Row {
            workload: "disk".into(),
            engine: direct_row_name(kib),
            latency: Some(Latency { p50_us: p50, p99_us: p50, max_us: p50 }),
            ..Row::default()
        }
    }

    #[test]
    fn raw_write_latency_is_interpolated_by_record_size() {
        let rows: Vec<Row> =
            DIRECT_KIB.iter().zip([100.0, 120.0, 150.0, 200.0]).map(|(k, p)| disk_row(*k, p)).collect();
        assert_eq!(raw_direct_p50_us(&rows, 4096.0), Some(100.0));
        // Rounded up to whole 4 KiB blocks: 5,000 B is 8 KiB, a third of the way from 4 to 16 KiB.
        let at8 = raw_direct_p50_us(&rows, 5000.0).unwrap();
        assert!((at8 - (100.0 + 20.0 / 3.0)).abs() < 1e-9, "{at8}");
        assert_eq!(raw_direct_p50_us(&rows, 32.0 * 1024.0), Some(150.0));
        assert_eq!(raw_direct_p50_us(&rows, 48.0 * 1024.0), Some(175.0));
        // Past the largest size: the last segment's slope.
        assert_eq!(raw_direct_p50_us(&rows, 96.0 * 1024.0), Some(250.0));
        assert_eq!(raw_direct_p50_us(&rows[..1], 4096.0), None, "one size is not enough");
        assert_eq!(raw_direct_p50_us(&[], 4096.0), None);
    }
}
