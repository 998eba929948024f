//! The crate's only `unsafe` code: the memory map, vectored positional reads and writes, page
//! versions read in place (`kept_for`, `ImageSlot`), bytes held with their snapshot (`Held`),
//! the shared buffers of the in-memory backend, cache hints and the coarse clock. Each block
//! states why it is sound.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;

/// A read-only shared mapping of the first `len` bytes of a file.
pub(crate) struct FileMap {
    map: Option<memmap2::Mmap>,
}

impl FileMap {
    pub(crate) fn new(file: &File, len: u64) -> io::Result<FileMap> {
        if len == 0 {
            return Ok(FileMap { map: None });
        }
        let len = usize::try_from(len).map_err(|_| io::Error::other("mapping too large"))?;
        // SAFETY: the mapping is read-only and shared. The engine never truncates the data file
        // while it is mapped, checks every access against `len` (which the caller took from the
        // file's real length), and writes pages with `pwrite` only when no reader can be reading
        // them (the flusher writes a page only when every live snapshot is served the same bytes,
        // see txn/flusher.rs). A file shortened by another program behind our back can still raise
        // SIGBUS; that is outside what a process can prevent with `mmap`.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        Ok(FileMap { map: Some(map) })
    }
    pub(crate) fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

/// `pwritev` of all slices at `offset`, looping over short writes.
pub(crate) fn pwritev_all(file: &File, bufs: &[IoSlice<'_>], mut offset: u64) -> io::Result<()> {
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let mut done = 0usize;
    // Positions in `bufs` after `done` bytes.
    while done < total {
        let mut skip = done;
        let mut iov: smallvec::SmallVec<[libc::iovec; 4]> = smallvec::SmallVec::with_capacity(bufs.len());
        for b in bufs {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            let s = &b[skip..];
            skip = 0;
            iov.push(libc::iovec { iov_base: s.as_ptr() as *mut libc::c_void, iov_len: s.len() });
            if iov.len() == 1024 {
                break;
            }
        }
        let off = libc::off_t::try_from(offset).map_err(|_| io::Error::other("offset too large"))?;
        // SAFETY: every iovec points into a live borrowed slice of `bufs` for the duration of the
        // call, and the kernel only reads from them; the fd is owned by `file`.
        let n = unsafe { libc::pwritev(file.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int, off) };
        let Some(n) = moved(n, io::ErrorKind::WriteZero, "pwritev wrote nothing")? else { continue };
        done += n;
        offset += n as u64;
    }
    Ok(())
}

/// What a vectored positional call returned: `Some(bytes)` (> 0), `None` to retry after `EINTR`,
/// the OS error, or `zero` when it moved nothing.
fn moved(n: isize, zero: io::ErrorKind, what: &'static str) -> io::Result<Option<usize>> {
    match n {
        0 => Err(io::Error::new(zero, what)),
        n if n > 0 => Ok(Some(n as usize)),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(None)
            } else {
                Err(e)
            }
        }
    }
}

/// `fallocate(0, 0, len)`: reserve blocks so that a full disk fails here.
pub(crate) fn fallocate(file: &File, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::other("length too large"))?;
    loop {
        // SAFETY: plain system call on an owned fd, no memory passed.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            // File systems without fallocate: fall back to extending the size.
            Some(libc::EOPNOTSUPP) => return file.set_len(len as u64),
            _ => return Err(e),
        }
    }
}

/// Bytes the file system holding `file` can still give an unprivileged writer (`fstatvfs`).
pub(crate) fn space_free(file: &File) -> io::Result<u64> {
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `st` is a valid place for the one struct the call fills; the fd is owned.
    let r = unsafe { libc::fstatvfs(file.as_raw_fd(), st.as_mut_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so it filled `st`.
    let st = unsafe { st.assume_init() };
    // The field types differ between targets (`u64` and `i64` here): casts, not conversions.
    #[allow(clippy::unnecessary_cast)]
    let (blocks, size) = (st.f_bavail as u64, st.f_frsize as u64);
    Ok(blocks.saturating_mul(size))
}

/// `image` (a page version in the page table), borrowed for as long as `keeper` lives.
///
/// Sound by the page table's invariant 5 (`txn/page_table.rs`), which the caller upholds:
/// `keeper` is the era the reading view took before it found `image`, and the table never frees
/// or reuses an image found through an era while that era (which holds every later one) lives:
/// images removed from the table go into the era current then, and are freed with it. Nothing
/// writes to an image once it is in the table (it is shared, behind an `Arc`).
pub(crate) fn kept_for<'a, K>(image: &[u8], keeper: &'a K) -> &'a [u8] {
    let _ = keeper;
    // SAFETY: the bytes stay allocated and unchanged for `'a` (see above); the pointer and length
    // come from a valid slice.
    unsafe { std::slice::from_raw_parts(image.as_ptr(), image.len()) }
}

/// The newest version of one page of the page table, read without the table's lock (page_table
/// invariant 6): a sequence lock whose sequence number is the version's transaction id. Only the
/// table's writer (holding its write lock) calls `set` and `clear`, so writes never race each
/// other; a page's versions only ever get newer, so a reader that reads the same id before and
/// after the image's address read an address that belongs to that id (ids never come back).
#[derive(Default)]
pub(crate) struct ImageSlot {
    txid: crate::sync::AtomicU64,
    image: crate::sync::AtomicPtr<u8>,
}

/// What a reader learns from an `ImageSlot`.
pub(crate) enum SlotRead<'a> {
    /// The table holds no version of the page: the data file serves it.
    Absent,
    /// The newest version, committed at or before the reader's snapshot.
    Found(&'a [u8]),
    /// Ask the table under its lock: the newest version is too new for the snapshot (an older
    /// one may be wanted), or it is being replaced right now.
    Locked,
}

impl ImageSlot {
    const EMPTY: u64 = 0;
    const BUSY: u64 = u64::MAX;

    /// Make `image` (a version owned by the table) the newest, of transaction `txid`. An image
    /// of another length than `len`, which readers take on trust, leaves the slot busy: its
    /// page is always looked up under the lock.
    pub(crate) fn set(&self, txid: u64, image: &[u8], len: usize) {
        use std::sync::atomic::{fence, Ordering};
        self.txid.store(Self::BUSY, Ordering::Relaxed);
        fence(Ordering::Release);
        if image.len() != len || txid == Self::EMPTY || txid == Self::BUSY {
            return;
        }
        self.image.store(image.as_ptr().cast_mut(), Ordering::Relaxed);
        self.txid.store(txid, Ordering::Release);
    }

    /// What the slot holds, for `Env::check`: `None` when empty, `Some(None)` when busy, else
    /// the transaction id and the image's address (not read).
    pub(crate) fn peek(&self) -> Option<Option<(u64, *const u8)>> {
        use std::sync::atomic::Ordering;
        match self.txid.load(Ordering::Acquire) {
            Self::EMPTY => None,
            Self::BUSY => Some(None),
            t => Some(Some((t, self.image.load(Ordering::Relaxed).cast_const()))),
        }
    }

    /// The table holds no version of the page any more.
    pub(crate) fn clear(&self) {
        self.txid.store(Self::EMPTY, std::sync::atomic::Ordering::Release);
    }

    /// The newest version if it was committed at or before `at_most`, borrowed for as long as
    /// `keeper` lives. Sound by page_table invariants 5 and 6, which the caller upholds: `keeper`
    /// is the era the reading view took before this call, and `len` the length every image `set`
    /// accepted has (the table's page size).
    #[inline(always)]
    pub(crate) fn read<'a, K>(&self, at_most: u64, len: usize, keeper: &'a K) -> SlotRead<'a> {
        use std::sync::atomic::{fence, Ordering};
        let _ = keeper;
        let t = self.txid.load(Ordering::Acquire);
        if t == Self::EMPTY {
            return SlotRead::Absent;
        }
        if t > at_most {
            return SlotRead::Locked;
        }
        let p = self.image.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if self.txid.load(Ordering::Relaxed) != t {
            return SlotRead::Locked;
        }
        // SAFETY: `t` read before and after `p`, with the fences of a sequence lock, so `p` is
        // the address `set` stored with `t`: an image of exactly `len` bytes the table held as
        // version `t` of the page. The table frees or reuses no image a view found through its
        // era while that era lives (invariant 5), and nothing writes to an image in the table.
        SlotRead::Found(unsafe { std::slice::from_raw_parts(p, len) })
    }
}

/// A fixed-size, zero-initialised heap buffer that several threads read and one writes, with the
/// same contract as a shared file mapping: the engine never reads a range while it writes it.
pub(crate) struct SharedChunk {
    cell: Box<[UnsafeCell<u8>]>,
}

// SAFETY: access is coordinated by the engine as for an mmap (see the type's doc): writes to a
// range never overlap reads of that range; the memory backend takes its own lock around writes.
unsafe impl Sync for SharedChunk {}
// SAFETY: owns plain bytes.
unsafe impl Send for SharedChunk {}

impl SharedChunk {
    pub(crate) fn new(len: usize) -> SharedChunk {
        let v: Vec<UnsafeCell<u8>> = (0..len).map(|_| UnsafeCell::new(0)).collect();
        SharedChunk { cell: v.into_boxed_slice() }
    }
    pub(crate) fn len(&self) -> usize {
        self.cell.len()
    }
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: UnsafeCell<u8> has the layout of u8; see the type's doc for the aliasing rule.
        unsafe { std::slice::from_raw_parts(self.cell.as_ptr() as *const u8, self.cell.len()) }
    }
    /// Copy `src` in at `offset` (caller checks bounds; panics on a bad range are bugs).
    pub(crate) fn write(&self, offset: usize, src: &[u8]) {
        let dst = &self.cell[offset..offset + src.len()];
        // SAFETY: `dst` is in bounds; UnsafeCell permits writes through a shared reference; no
        // reader reads this range concurrently (type doc).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), UnsafeCell::raw_get(dst.as_ptr()), src.len()) }
    }
}

/// Bytes inside memory that an `Arc`'d owner keeps alive and unchanged, held together with a
/// reference to that owner, so that they can be read again without finding them again (the
/// engine's `Bytes`: a key or value in a snapshot's pages).
///
/// Sound by the caller's contract on `Held::new`: `bytes` lie in memory that `owner` keeps
/// allocated and unchanged for as long as it lives. For a snapshot that is its mapped data file
/// (the view's `Arc<MapState>`; no page a live snapshot reads is written over or cut off:
/// `txn/read.rs`) and the page-table versions its era keeps (page_table invariant 5). The owner
/// sits at a fixed address inside the `Arc`, and the clone held here keeps it from being dropped.
pub(crate) struct Held<O> {
    owner: std::sync::Arc<O>,
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: a `Held` is a shared reference to immutable bytes plus an `Arc<O>`: sending or sharing
// it is sending or sharing those two, which is sound when `O` may be shared.
unsafe impl<O: Send + Sync> Send for Held<O> {}
// SAFETY: as above.
unsafe impl<O: Send + Sync> Sync for Held<O> {}

impl<O> Clone for Held<O> {
    fn clone(&self) -> Self {
        Held { owner: self.owner.clone(), ptr: self.ptr, len: self.len }
    }
}

impl<O> Held<O> {
    /// `bytes`, held with `owner` (see the type's doc for what the caller guarantees).
    #[inline]
    pub(crate) fn new(owner: &std::sync::Arc<O>, bytes: &[u8]) -> Held<O> {
        Held { owner: owner.clone(), ptr: std::ptr::NonNull::from(bytes).cast(), len: bytes.len() }
    }

    /// What keeps the bytes alive (for a part of them, held anew: `Held::new(h.owner(), part)`).
    #[inline]
    pub(crate) fn owner(&self) -> &std::sync::Arc<O> {
        &self.owner
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` and `len` came from a valid slice that stays allocated and unchanged while
        // `owner`, held by `self`, lives (the type's doc).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

/// `sync_file_range(WAIT_BEFORE | WRITE)`: wait for earlier writeback of the range, then start
/// writing it back, without waiting for that to finish and without flushing the device cache.
pub(crate) fn sync_file_range_write(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let off = libc::off64_t::try_from(offset).map_err(|_| io::Error::other("offset too large"))?;
    let n = libc::off64_t::try_from(len).map_err(|_| io::Error::other("length too large"))?;
    // SAFETY: plain system call on an owned fd, no memory passed.
    let r = unsafe {
        libc::sync_file_range(file.as_raw_fd(), off, n, libc::SYNC_FILE_RANGE_WAIT_BEFORE | libc::SYNC_FILE_RANGE_WRITE)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Hint the CPU to bring every 64-byte line of `bytes` from offset 64 on into cache (no effect
/// on other architectures). A pointer walk of four lines a step: `btree::descend` calls it on
/// every leaf it reaches, and the bounds-checked loop of `prefetch` per line cost ~330
/// instructions a get.
#[inline(always)]
pub(crate) fn prefetch_lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let mut at = 64;
        while at + 192 < bytes.len() {
            // SAFETY: a prefetch is only a hint: it never faults and reads nothing the program
            // sees; `at + 192 < bytes.len()`, so all four addresses lie inside `bytes`. SSE is
            // part of the x86_64 baseline.
            unsafe {
                let b = bytes.as_ptr().add(at) as *const i8;
                _mm_prefetch::<_MM_HINT_T0>(b);
                _mm_prefetch::<_MM_HINT_T0>(b.add(64));
                _mm_prefetch::<_MM_HINT_T0>(b.add(128));
                _mm_prefetch::<_MM_HINT_T0>(b.add(192));
            }
            at += 256;
        }
        while at < bytes.len() {
            prefetch(bytes, at);
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Hint the CPU to bring the cache line holding `bytes[at]` into cache (no effect when `at` is
/// out of bounds or on other architectures). Used by the binary search of a page to overlap the
/// cache misses of its next two probes.
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < bytes.len() {
        // SAFETY: a prefetch is only a hint: it never faults and reads nothing the program sees;
        // the address lies inside `bytes` anyway. SSE is part of the x86_64 baseline.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(bytes.as_ptr().add(at) as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// Time since boot on the coarse monotonic clock (`CLOCK_MONOTONIC_COARSE`: the time of the last
/// scheduler tick, read from the vDSO without touching the clock source; a few milliseconds of
/// resolution). `None` if the kernel refuses it.
pub(crate) fn monotonic_coarse() -> Option<std::time::Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if r != 0 {
        return None;
    }
    Some(std::time::Duration::new(u64::try_from(ts.tv_sec).ok()?, u32::try_from(ts.tv_nsec).ok()?))
}

/// Bytes of one slab of page images: a 2 MiB-aligned anonymous mapping, the size of a huge page.
const SLAB: usize = 2 << 20;

/// Page images in memory (the page table's versions, the writer's copies), all `len` bytes, cut
/// from slabs of `SLAB` bytes that the kernel is asked to back with huge pages (`MADV_HUGEPAGE`,
/// a hint: without transparent huge pages they are ordinary memory). A page read from the page
/// table then costs about what one read through the data file's map does: from `malloc`, every
/// image was an allocation of its own, a page and 16 bytes straddling two base pages, and a read
/// of one a TLB miss or two more (`examples/rndread 1000000 1000000 into hot`, reads served by
/// the page table: ~1,135–1,243 ns a get; from the slabs ~1,010–1,080, as `hot flushed`).
///
/// The first slab stays on base pages (a small database does not take 2 MiB for a few pages).
/// Slabs whose images are all free are kept for the next allocations, up to `EMPTY_KEPT` of them
/// (a burst of commits after a flush takes them again: mapping a slab anew costs a fault and the
/// zeroing of a huge page), the others unmapped; `trim` unmaps all but one (the writer is idle).
pub(crate) struct Images {
    len: usize,
    per_slab: usize,
    slabs: parking_lot::Mutex<Slabs>,
}

#[derive(Default)]
struct Slabs {
    /// Each slab by its base address.
    by_base: std::collections::HashMap<usize, Slab>,
    /// Bases of slabs that have (or had, when pushed) a free image; entries of slabs since filled
    /// are skipped and dropped by `alloc`, those of unmapped slabs by `Slabs::forget`.
    with_room: Vec<usize>,
    /// Slabs with no image in use, kept for the next allocations (at most `EMPTY_KEPT`).
    empty: Vec<usize>,
}

/// Empty slabs kept at most (64 MiB): about what the page table's pool holds at most by default.
const EMPTY_KEPT: usize = 32;

impl Slabs {
    /// Drop empty slabs about to be unmapped from every list. Their `with_room` entries go too:
    /// left there, a slab mapped later at the same address would be listed twice, and entries
    /// would pile up over bursts.
    fn forget(&mut self, bases: &[usize]) {
        for b in bases {
            self.by_base.remove(b);
        }
        self.with_room.retain(|b| !bases.contains(b));
    }
}

struct Slab {
    /// Indexes of the free images.
    free: Vec<u32>,
    live: usize,
    /// Whether `with_room` lists the slab.
    listed: bool,
}

impl Images {
    /// Images of `len` bytes (1 to `SLAB`).
    pub(crate) fn new(len: usize) -> std::sync::Arc<Images> {
        assert!(len > 0 && len <= SLAB, "page images of {len} bytes");
        std::sync::Arc::new(Images { len, per_slab: SLAB / len, slabs: parking_lot::Mutex::default() })
    }

    /// A new image, unshared; its bytes are whatever the last image there held (zero in a new
    /// slab): the caller writes it whole.
    pub(crate) fn take(self: &std::sync::Arc<Images>) -> PageBuf {
        let ptr = self.alloc();
        PageBuf(std::sync::Arc::new(Image { ptr, len: self.len, from: self.clone() }))
    }

    fn alloc(&self) -> std::ptr::NonNull<u8> {
        let mut s = self.slabs.lock();
        let s = &mut *s;
        while let Some(&base) = s.with_room.last() {
            let Some(slab) = s.by_base.get_mut(&base) else {
                s.with_room.pop();
                continue;
            };
            let Some(i) = slab.free.pop() else {
                slab.listed = false;
                s.with_room.pop();
                continue;
            };
            if slab.live == 0 {
                s.empty.retain(|b| *b != base);
            }
            slab.live += 1;
            if slab.free.is_empty() {
                slab.listed = false;
                s.with_room.pop();
            }
            // SAFETY: `i < per_slab`, so the image lies inside the slab's mapping.
            return unsafe { std::ptr::NonNull::new_unchecked((base as *mut u8).add(i as usize * self.len)) };
        }
        // The first slab on base pages: an environment that holds a few pages in memory (a small
        // database, a read-only one) does not take a whole huge page for them.
        let base = map_slab(!s.by_base.is_empty());
        let free: Vec<u32> = (1..self.per_slab as u32).rev().collect();
        let listed = !free.is_empty();
        s.by_base.insert(base as usize, Slab { free, live: 1, listed });
        if listed {
            s.with_room.push(base as usize);
        }
        // SAFETY: `map_slab` returns a non-null mapping; image 0 starts at its base.
        unsafe { std::ptr::NonNull::new_unchecked(base) }
    }

    /// Image `ptr` is free again (its `Image` is being dropped: nothing refers to it).
    fn give_back(&self, ptr: std::ptr::NonNull<u8>) {
        let addr = ptr.as_ptr() as usize;
        let base = addr & !(SLAB - 1);
        let mut unmap = None;
        {
            let mut s = self.slabs.lock();
            let s = &mut *s;
            let Some(slab) = s.by_base.get_mut(&base) else { return };
            slab.free.push(((addr - base) / self.len) as u32);
            slab.live -= 1;
            if !slab.listed {
                slab.listed = true;
                s.with_room.push(base);
            }
            if slab.live == 0 {
                if s.empty.len() < EMPTY_KEPT {
                    s.empty.push(base);
                } else {
                    s.forget(&[base]);
                    unmap = Some(base);
                }
            }
        }
        if let Some(base) = unmap {
            unmap_slab(base);
        }
    }

    /// Unmap the empty slabs but one.
    pub(crate) fn trim(&self) {
        let gone: Vec<usize> = {
            let mut s = self.slabs.lock();
            let s = &mut *s;
            let keep = s.empty.len().min(1);
            let gone = s.empty.split_off(keep);
            s.forget(&gone);
            gone
        };
        for base in gone {
            unmap_slab(base);
        }
    }
}

impl Drop for Images {
    fn drop(&mut self) {
        // Every image holds its `Images`: none is alive now.
        for base in self.slabs.get_mut().by_base.keys() {
            unmap_slab(*base);
        }
    }
}

/// Unmap a slab of `map_slab` that no image is in use in and that `Images` no longer lists (no
/// image of it is handed out again: `Slabs::forget` took it off every list).
fn unmap_slab(base: usize) {
    // SAFETY: `base` is a mapping of `SLAB` bytes made by `map_slab`, and no reference into it
    // exists: every image of it was given back (`live` 0) and none will be handed out.
    unsafe { libc::munmap(base as *mut libc::c_void, SLAB) };
}

/// A new slab: `SLAB` bytes of zeroed anonymous memory aligned to `SLAB`, marked for huge pages
/// if `huge`. Out of memory ends the process, as a failed `malloc` does.
fn map_slab(huge: bool) -> *mut u8 {
    let len = 2 * SLAB;
    // SAFETY: a fresh private anonymous mapping (no file, no fixed address); checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        std::alloc::handle_alloc_error(
            std::alloc::Layout::from_size_align(SLAB, SLAB).unwrap_or(std::alloc::Layout::new::<u8>()),
        );
    }
    let start = p as usize;
    let base = (start + SLAB - 1) & !(SLAB - 1);
    // SAFETY: both ranges lie inside the mapping just made and outside `[base, base + SLAB)`;
    // nothing else knows of them.
    unsafe {
        if base > start {
            libc::munmap(p, base - start);
        }
        let end = start + len;
        if end > base + SLAB {
            libc::munmap((base + SLAB) as *mut libc::c_void, end - base - SLAB);
        }
        #[cfg(target_os = "linux")]
        if huge {
            libc::madvise(base as *mut libc::c_void, SLAB, libc::MADV_HUGEPAGE);
        }
    }
    base as *mut u8
}

/// One page image of `Images`, shared by reference count (as an `Arc<[u8]>`) and writable while
/// unshared (`get_mut`).
#[derive(Clone)]
pub(crate) struct PageBuf(std::sync::Arc<Image>);

struct Image {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    from: std::sync::Arc<Images>,
}

// SAFETY: an `Image` owns its `len` bytes at `ptr` (`Images` hands each out once until it is
// given back by the image's drop); it is read through `&` and written only through `&mut`
// (`PageBuf::get_mut`, when the `Arc` is unique), as a `Box<[u8]>` would be.
unsafe impl Send for Image {}
// SAFETY: as above.
unsafe impl Sync for Image {}

impl Drop for Image {
    fn drop(&mut self) {
        self.from.give_back(self.ptr);
    }
}

impl std::ops::Deref for PageBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the image's bytes are allocated and owned by it while it lives (see `Image`),
        // and no `&mut` to them exists while `self` is shared.
        unsafe { std::slice::from_raw_parts(self.0.ptr.as_ptr(), self.0.len) }
    }
}

impl PageBuf {
    /// The bytes, writable, if no other `PageBuf` shares the image.
    #[inline]
    pub(crate) fn get_mut(&mut self) -> Option<&mut [u8]> {
        let img = std::sync::Arc::get_mut(&mut self.0)?;
        // SAFETY: the `Arc` is unique and borrowed mutably for the result's lifetime: no other
        // reference to the bytes exists.
        Some(unsafe { std::slice::from_raw_parts_mut(img.ptr.as_ptr(), img.len) })
    }

    /// Whether no other `PageBuf` shares the image.
    #[inline]
    pub(crate) fn is_unique(&mut self) -> bool {
        std::sync::Arc::get_mut(&mut self.0).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Images {
        fn slabs(&self) -> usize {
            self.slabs.lock().by_base.len()
        }
    }

    /// Images are distinct, writable only while unshared, and their slabs go back when every
    /// image of them is dropped (but one kept for the next allocations).
    #[test]
    fn images_come_from_slabs_and_go_back() {
        let images = Images::new(4096);
        let per_slab = SLAB / 4096;
        let mut bufs: Vec<PageBuf> = (0..per_slab + 10).map(|_| images.take()).collect();
        assert_eq!(images.slabs(), 2);
        for (i, b) in bufs.iter_mut().enumerate() {
            b.get_mut().unwrap().fill(i as u8);
        }
        for (i, b) in bufs.iter().enumerate() {
            assert!(b.iter().all(|x| *x == i as u8), "image {i} was written by another");
            assert_eq!(b.len(), 4096);
        }
        let mut shared = bufs[3].clone();
        assert!(shared.get_mut().is_none(), "a shared image is not writable");
        assert!(!shared.is_unique());
        drop(shared);
        assert!(bufs[3].is_unique());
        bufs.truncate(1);
        assert_eq!(images.slabs(), 2, "a slab with an image in use stays");
        bufs.clear();
        assert_eq!(images.slabs(), 2, "empty slabs are kept for the next images");
        let again: Vec<PageBuf> = (0..per_slab + 1).map(|_| images.take()).collect();
        assert_eq!(images.slabs(), 2, "the kept slabs serve the next images");
        drop(again);
        images.trim();
        assert_eq!(images.slabs(), 1, "a trim unmaps the empty slabs but one");
        let many: Vec<PageBuf> = (0..per_slab * (EMPTY_KEPT + 3)).map(|_| images.take()).collect();
        assert_eq!(images.slabs(), EMPTY_KEPT + 3);
        drop(many);
        assert_eq!(images.slabs(), EMPTY_KEPT, "no more empty slabs are kept than EMPTY_KEPT");
    }
}
