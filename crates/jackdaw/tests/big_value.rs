//! Large values written with bounded heap: a 256 MiB value streamed in and out, a 136 MiB value
//! put from a slice (their own test binary, so that no other test's allocations count; the two
//! tests take `SERIAL` so that neither counts the other's).
mod common;
use common::*;
use jackdaw::{Env, FlusherMode};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts live heap bytes and their peak.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A reader producing `n` bytes of a pattern without holding them.
struct Pattern {
    left: u64,
    pos: u64,
}
impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.left) as usize;
        for b in &mut buf[..n] {
            *b = (self.pos % 251) as u8;
            self.pos += 1;
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[test]
fn a_256_mib_value_streams_in_and_out_with_little_heap() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const LEN: u64 = 256 << 20;
    let dir = TestDb::dir("bigvalue");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("blobs").unwrap();
    tx.put(&t, b"small", b"x").unwrap();
    tx.commit().unwrap();
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut tx = env.write().unwrap();
    tx.put_reader(&t, b"big", LEN, Pattern { left: LEN, pos: 0 }).unwrap();
    println!("after put_reader: peak {} MiB", (PEAK.load(Ordering::Relaxed) - base) >> 20);
    let st = tx.commit().unwrap();
    println!("after commit: peak {} MiB", (PEAK.load(Ordering::Relaxed) - base) >> 20);
    assert!(st.written_once_pages as u64 >= LEN / 4096, "{st:?}");
    assert!(st.journal_bytes_written < 16 << 20, "the value itself is not journaled: {st:?}");
    let r = env.read().unwrap();
    let mut rd = r.get_reader(&t, b"big").unwrap().unwrap();
    assert_eq!(rd.remaining(), LEN);
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    loop {
        let n = rd.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        for b in &buf[..n] {
            assert_eq!(*b, (pos % 251) as u8, "byte {pos}");
            pos += 1;
        }
    }
    assert_eq!(pos, LEN);
    drop(rd);
    let peak = PEAK.load(Ordering::Relaxed) - base;
    println!("peak heap above baseline while writing and reading {} MiB: {} MiB", LEN >> 20, peak >> 20);
    assert!(peak < 32 << 20, "peak heap {peak} bytes");
    // 66,313 full pages; the last 432 bytes stay in the leaf (`overflow::tail_len`).
    assert_eq!(LEN % (4096 - 48), 432);
    assert_eq!(r.tree_stats(&t).unwrap().overflow_pages, LEN / (4096 - 48));
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    // Deleting it frees every page.
    let mut tx = env.write().unwrap();
    assert!(tx.delete(&t, b"big").unwrap());
    tx.commit().unwrap();
    let s = env.stats();
    assert!(s.free_pages >= LEN / 4096, "{s:?}");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A value put from a slice of `write_once_min_pages` pages or more goes straight to the data
/// file as it is put (`overflow::write_direct`, batches of 512 pages): the heap holds the caller's
/// slice and little else (the dirty-page path would hold a copy, or spill it past
/// `max_dirty_pages`, 32 MiB). 136 MiB crosses the bitmap page at the start of section 1 (page
/// 32,768), where a batch ends early. An aborted put leaves nothing behind; the committed value
/// reads back whole, before and after a reopen, and `check()` passes.
#[test]
fn a_136_mib_value_put_from_a_slice_is_written_once_as_it_is_put() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const LEN: usize = 136 << 20;
    let dir = TestDb::dir("bigslice");
    let v: Vec<u8> = (0..LEN).map(|i| (i % 253) as u8 ^ (i >> 20) as u8).collect();
    {
        let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("blobs").unwrap();
        tx.commit().unwrap();
        let mut tx = env.write().unwrap();
        tx.put(&t, b"gone", &v[..4 << 20]).unwrap();
        tx.abort();
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let mut tx = env.write().unwrap();
        tx.put(&t, b"big", &v).unwrap();
        let st = tx.commit().unwrap();
        let peak = PEAK.load(Ordering::Relaxed) - base;
        assert!(peak < 16 << 20, "peak heap {peak} bytes above the caller's value while putting it");
        assert!(st.written_once_pages >= LEN / 4096, "{st:?}");
        assert_eq!(st.spilled_pages, 0, "{st:?}");
        let r = env.read().unwrap();
        assert!(r.get(&t, b"gone").unwrap().is_none());
        assert!(*r.get(&t, b"big").unwrap().unwrap() == v[..], "value read back differs");
        assert_eq!(r.tree_stats(&t).unwrap().overflow_pages, (LEN as u64).div_ceil(4096 - 48));
        drop(r);
        env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
        env.close().unwrap();
    }
    let env = Env::open(&dir, test_opts()).unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("blobs").unwrap().unwrap();
    let mut out = Vec::new();
    assert!(r.get_into(&t, b"big", &mut out).unwrap());
    assert!(out == v, "value read back after reopen differs");
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// Values written straight to the data file break their writes at every 2 MiB boundary of the
/// file (so whole 2 MiB extents fill whole page-cache folios), whatever the page size and
/// wherever the value starts: values of several extents, started at shifted pages (a small value
/// put before each) and two in one transaction, at 4, 16 and 64 KiB pages, read back exactly
/// with `get` and `get_into` (as one run of pages), after a reopen too, and `check()` passes.
#[test]
fn large_values_written_across_2_mib_boundaries_read_back_at_every_page_size() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lens = [(4 << 20) + 12_345, (5 << 20) + 777, (9 << 20) + 3 * 65_536 + 1];
    let value =
        |n: usize, len: usize| -> Vec<u8> { (0..len).map(|i| (i % 251) as u8 ^ (n * 37 + (i >> 16)) as u8).collect() };
    for ps in [4096u32, 16_384, 65_536] {
        let dir = TestDb::dir(&format!("bigaligned-{ps}"));
        {
            let env = Env::open(&dir, test_opts().page_size(ps).flusher(FlusherMode::Manual)).unwrap();
            let mut tx = env.write().unwrap();
            let t = tx.create_tree("blobs").unwrap();
            tx.commit().unwrap();
            for (n, &len) in lens.iter().enumerate() {
                let mut tx = env.write().unwrap();
                // A value of a page or so first, so that each large value starts elsewhere.
                tx.put(&t, format!("small{n}"), value(100 + n, ps as usize * (n + 1) / 2)).unwrap();
                tx.put(&t, format!("big{n}"), value(n, len)).unwrap();
                if n == 1 {
                    tx.put(&t, "big-also", value(9, lens[0])).unwrap();
                }
                let st = tx.commit().unwrap();
                assert!(st.written_once_pages as usize >= len / ps as usize, "page size {ps}: {st:?}");
            }
            let runs = env.stats().overflow_run_reads;
            let r = env.read().unwrap();
            let mut out = Vec::new();
            for (n, &len) in lens.iter().enumerate() {
                let want = value(n, len);
                assert!(*r.get(&t, format!("big{n}")).unwrap().unwrap() == want[..], "page size {ps}, value {n}");
                assert!(r.get_into(&t, format!("big{n}"), &mut out).unwrap());
                assert!(out == want, "page size {ps}, value {n} by get_into");
            }
            assert!(*r.get(&t, "big-also").unwrap().unwrap() == value(9, lens[0])[..], "page size {ps}");
            assert!(env.stats().overflow_run_reads >= runs + 7, "page size {ps}: values not read as runs");
            drop(r);
            env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
            env.close().unwrap();
        }
        let env = Env::open(&dir, test_opts().page_size(ps)).unwrap();
        let r = env.read().unwrap();
        let t = r.open_tree("blobs").unwrap().unwrap();
        let mut out = Vec::new();
        for (n, &len) in lens.iter().enumerate() {
            assert!(r.get_into(&t, format!("big{n}"), &mut out).unwrap());
            assert!(out == value(n, len), "page size {ps}, value {n} after reopen");
            assert!(*r.get(&t, format!("small{n}")).unwrap().unwrap() == value(100 + n, ps as usize * (n + 1) / 2)[..]);
        }
        drop(r);
        env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    }
}
