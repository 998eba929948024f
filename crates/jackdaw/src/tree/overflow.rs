//! Overflow values: values too large to stay inline live in a chain of overflow pages.
//!
//! ```text
//! overflow page (after the 32-byte page header)
//!     32    8 next      next page of the chain, 0 on the last
//!     40    4 len       value bytes on this page
//!     44    4 reserved
//!     48    . data
//! leaf value of an overflow entry: total_len u64 | first_page u64 | tail (0 or more bytes)
//! ```
//! Traversals are bounded by the length the leaf records, so a cycle or a wrong link is
//! `Corrupted`, never a hang.
//!
//! Invariant: the chain holds the value's first `total_len - tail.len()` bytes and the leaf its
//! last `tail.len()` (`tail_len`: the bytes past the last full page, kept in the leaf when they
//! are at most a quarter of a page; format version 3). A value of 64 KiB then takes 16 pages
//! and 768 bytes of a leaf instead of 17 pages, the last nearly empty.

use super::node::{self, OVERFLOW_REF};
use super::{PageRead, PageWrite};
use crate::data::page::{self, PageKind, PAGE_HEADER};
use crate::{Error, Result};
use std::io::Read;

pub(crate) const DATA_AT: usize = PAGE_HEADER + 16;

/// Largest value: 4 GiB - 1.
pub const MAX_VALUE_SIZE: u64 = u32::MAX as u64;

pub(crate) fn capacity(page_size: usize) -> usize {
    page_size - DATA_AT
}

pub(crate) fn pages_for(len: u64, page_size: usize) -> u64 {
    len.div_ceil(capacity(page_size) as u64).max(1)
}

/// How many of the last bytes of a value of `len` bytes, beside `key`, stay in
/// the leaf after its chain (the module's invariant): the bytes past the last full page when
/// there is at least one full page, they are at most a quarter of a page's capacity (so a leaf
/// still holds four such entries or more) and the entry fits a leaf; else 0 (the chain holds the
/// whole value, its last page partly filled).
pub(crate) fn tail_len(key: &[u8], len: u64, page_size: usize) -> usize {
    let cap = capacity(page_size) as u64;
    let tail = (len % cap) as usize;
    let fits = node::leaf_entry_size(key, OVERFLOW_REF + tail) <= node::max_entry(page_size);
    if len < cap || tail == 0 || tail > cap as usize / 4 || !fits {
        return 0;
    }
    tail
}

/// An overflow reference as a leaf stores it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ref<'a> {
    /// The value's length.
    pub len: u64,
    /// The chain's first page.
    pub first: u64,
    /// The value's last bytes, kept in the leaf.
    pub tail: &'a [u8],
}

impl Ref<'_> {
    /// Bytes of the value in the chain.
    pub(crate) fn chain_len(&self) -> u64 {
        self.len - self.tail.len() as u64
    }

    /// The chain's length and first page, owned.
    pub(crate) fn chain(&self) -> (u64, u64) {
        (self.chain_len(), self.first)
    }
}

pub(crate) fn encode_ref(len: u64, first: u64, tail: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(OVERFLOW_REF + tail.len());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&first.to_le_bytes());
    b.extend_from_slice(tail);
    b
}

pub(crate) fn decode_ref(v: &[u8]) -> Result<Ref<'_>> {
    let short = || Error::corrupted(None, "overflow reference of the wrong size");
    let (len, rest) = v.split_first_chunk::<8>().ok_or_else(short)?;
    let (first, tail) = rest.split_first_chunk::<8>().ok_or_else(short)?;
    let (len, first) = (u64::from_le_bytes(*len), u64::from_le_bytes(*first));
    // A tail follows at least one full page of chain (`tail_len`).
    if !tail.is_empty() && len <= tail.len() as u64 {
        return Err(Error::corrupted(None, "overflow reference's tail as long as its value"));
    }
    Ok(Ref { len, first, tail })
}

fn set_link(p: &mut [u8], next: u64, len: usize) {
    set_link_fields(&mut p[PAGE_HEADER..DATA_AT], next, len);
}

/// The link fields (next, len) into `f`, the bytes of a page from its header's end to `DATA_AT`.
fn set_link_fields(f: &mut [u8], next: u64, len: usize) {
    f[..8].copy_from_slice(&next.to_le_bytes());
    f[8..12].copy_from_slice(&(len as u32).to_le_bytes());
}

/// The link fields (next, len) of an overflow page or page head, unchecked; `None` when `p` is
/// too short to hold them.
fn link_fields(p: &[u8]) -> Option<(u64, usize)> {
    let next = p.get(PAGE_HEADER..PAGE_HEADER + 8)?.try_into().ok()?;
    let len = p.get(PAGE_HEADER + 8..PAGE_HEADER + 12)?.try_into().ok()?;
    Some((u64::from_le_bytes(next), u32::from_le_bytes(len) as usize))
}

/// The link of an overflow page: (next, len), checked.
pub(crate) fn link(p: &[u8], pgno: u64) -> Result<(u64, usize)> {
    if page::page_kind(p) != Some(PageKind::Overflow) {
        return Err(Error::corrupted(Some(pgno), "expected an overflow page"));
    }
    let (next, len) = link_fields(p).ok_or_else(|| Error::corrupted(Some(pgno), "overflow page too short"))?;
    if len > p.len() - DATA_AT {
        return Err(Error::corrupted(Some(pgno), "overflow page length past the page"));
    }
    Ok((next, len))
}

/// Write `value` as a chain of overflow pages; returns the first page and the page count. A
/// value of `write_once_min_pages` pages or more goes straight to the data file
/// (`write_direct`), a smaller one into dirty pages (`write_dirty`).
pub(crate) fn write<W: PageWrite + ?Sized>(w: &mut W, value: &[u8]) -> Result<(u64, u64)> {
    if w.writes_once(pages_for(value.len() as u64, w.page_size())) {
        write_direct(w, value)
    } else {
        write_dirty(w, value)
    }
}

/// Write `value` as a chain of dirty pages; returns the first page and the page count.
/// Each page is filled as soon as it is allocated and linked from the one before when the next
/// is allocated, so a transaction that spills (see `txn/write.rs`) writes full pages, once.
pub(crate) fn write_dirty<W: PageWrite + ?Sized>(w: &mut W, value: &[u8]) -> Result<(u64, u64)> {
    let cap = capacity(w.page_size());
    let chunks: Vec<&[u8]> = if value.is_empty() { vec![&[][..]] } else { value.chunks(cap).collect() };
    let mut first = 0;
    let mut prev: Option<(u64, usize)> = None;
    for c in &chunks {
        // The link (no next page yet, this page's length) and the bytes, written into the new
        // page as it is made (no zeroing pass first).
        let mut link = [0u8; DATA_AT - PAGE_HEADER];
        set_link_fields(&mut link, 0, c.len());
        let pg = w.alloc_with(PageKind::Overflow, &[&link, c])?;
        match prev {
            Some((pp, len)) => set_link(w.page_mut(pp)?, pg, len),
            None => first = pg,
        }
        prev = Some((pg, c.len()));
    }
    Ok((first, chunks.len() as u64))
}

/// Bytes `write_direct` fills before writing them (2 MiB: 512 pages of 4 KiB), and the file
/// boundaries its writes break at. The size and the alignment of a write set the page-cache folios
/// that hold it, and a first read through the map is mapped a folio at a time: 8 MiB values
/// written in 2 MiB batches are read back with a quarter of the page faults of 256 KiB batches
/// (256 against 976 for ten values) and ~19% faster (`examples/largeread` round 0), for the same
/// write speed (`examples/bigput 30 8`; 4 MiB batches made writes 2.3× slower: the buffer no
/// longer stays in the CPU's cache). Batches that start at a multiple of 2 MiB in the file fill a
/// whole 2 MiB folio, which the kernel maps with one huge-page entry (the map itself starts
/// 2 MiB-aligned): the first read of such an extent takes one page fault instead of ~40, and
/// reads of it miss the TLB 512 times less.
const DIRECT_BATCH_BYTES: usize = 2 << 20;

/// Write `value` (at least one full page of it) as a chain of pages written straight to the
/// data file (`PageWrite::write_once_run`): each batch of consecutive pages is built in one
/// reused buffer (header, link, the value's bytes, zeroed tail) and written with one `pwrite`,
/// so the value is read once from the caller's slice and nothing of it stays in memory. Returns
/// the first page and the page count.
pub(crate) fn write_direct<W: PageWrite + ?Sized>(w: &mut W, value: &[u8]) -> Result<(u64, u64)> {
    if value.is_empty() {
        return Err(Error::Invalid("internal: an empty value is never written directly".into()));
    }
    let ps = w.page_size();
    let mut chunks = value.chunks(capacity(ps)).peekable();
    let batch = (DIRECT_BATCH_BYTES / ps).max(1);
    // No bigger than the value: a 256 KiB value zeroes and fills 256 KiB, not 2 MiB.
    let pages = value.len().div_ceil(capacity(ps));
    let mut buf = vec![0u8; batch.min(pages) * ps];
    // Free pages nothing reads first (a value overwritten again and again reuses its space).
    w.claim_free(pages as u64)?;
    let first = w.reserve()?;
    let (mut start, mut cur, mut filled, mut n) = (first, first, 0usize, 0u64);
    while let Some(c) = chunks.next() {
        let next = if chunks.peek().is_some() { w.reserve()? } else { 0 };
        let p = &mut buf[filled * ps..(filled + 1) * ps];
        page::init(p, cur, PageKind::Overflow);
        p[PAGE_HEADER..DATA_AT].fill(0);
        set_link(p, next, c.len());
        p[DATA_AT..DATA_AT + c.len()].copy_from_slice(c);
        p[DATA_AT + c.len()..].fill(0);
        filled += 1;
        n += 1;
        // A batch ends where the pages stop being consecutive (a bitmap page was appended
        // between two reservations), where the next page starts a 2 MiB extent of the file, or
        // where the buffer is full (only when the batch began at such an extent).
        if next != cur + 1 || next.is_multiple_of(batch as u64) || filled == batch {
            w.write_once_run(start, &mut buf[..filled * ps])?;
            (start, filled) = (next, 0);
        }
        cur = next;
    }
    w.release_claims()?;
    Ok((first, n))
}

/// Stream `len` bytes from `r` into pages written straight to the data file (never more than one
/// page in memory). Returns the first page and the page count.
pub(crate) fn write_stream<W: PageWrite + ?Sized>(w: &mut W, len: u64, r: &mut dyn Read) -> Result<(u64, u64)> {
    let ps = w.page_size();
    let cap = capacity(ps);
    let mut buf = vec![0u8; ps];
    let mut left = len;
    w.claim_free(len.div_ceil(cap as u64).max(1))?;
    let first = w.reserve()?;
    let mut cur = first;
    let mut n = 0u64;
    loop {
        let take = left.min(cap as u64) as usize;
        buf.fill(0);
        page::init(&mut buf, cur, PageKind::Overflow);
        r.read_exact(&mut buf[DATA_AT..DATA_AT + take]).map_err(|e| Error::io("read value from caller's reader", e))?;
        left -= take as u64;
        let next = if left > 0 { w.reserve()? } else { 0 };
        set_link(&mut buf, next, take);
        w.write_once_run(cur, &mut buf)?;
        n += 1;
        if next == 0 {
            w.release_claims()?;
            return Ok((first, n));
        }
        cur = next;
    }
}

/// Visit the chain's pages in order, checking links against the recorded length. With `whole`
/// (a visit that reads each page's data, not only its link), every line of the next page starts
/// loading before this one is visited, as a run read does (`MapState::copy_run`).
pub(crate) fn walk<P: PageRead + ?Sized>(
    p: &P,
    (first, total): (u64, u64),
    whole: bool,
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let ps = p.page_size();
    let expect = pages_for(total, ps);
    let look = |pg: u64| if whole { p.page_whole(pg) } else { p.page(pg) };
    let mut cur = first;
    let mut seen = 0u64;
    let mut bytes = 0u64;
    let mut page = if cur != 0 { Some(look(cur)?) } else { None };
    while let Some(this) = page.take() {
        seen += 1;
        if seen > expect {
            return Err(Error::corrupted(Some(cur), "overflow chain longer than its value"));
        }
        let (next, len) = link(this, cur)?;
        // Look the next page up before visiting this one, and start loading its link, so that the
        // cache miss on it overlaps the visit (a copy of this page) instead of following it.
        if next != 0 {
            let n = look(next)?;
            page::prefetch(n, 0);
            page = Some(n);
        }
        f(cur, &this[DATA_AT..DATA_AT + len])?;
        bytes += len as u64;
        cur = next;
    }
    if bytes != total {
        return Err(Error::corrupted(
            Some(first),
            format!("overflow chain holds {bytes} bytes, the leaf says {total}"),
        ));
    }
    Ok(seen)
}

/// Read the whole value (its chain, then its tail).
pub(crate) fn read<P: PageRead + ?Sized>(p: &P, r: &Ref<'_>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    read_into(p, r, &mut out)?;
    Ok(out)
}

/// Append the whole value to `out`: its chain (`read_chain_into`), then its tail.
pub(crate) fn read_into<P: PageRead + ?Sized>(p: &P, r: &Ref<'_>, out: &mut Vec<u8>) -> Result<()> {
    read_chain_into(p, r.first, r.chain_len(), r.tail.len(), out)?;
    out.extend_from_slice(r.tail);
    Ok(())
}

/// Most bytes `read_into` reserves up front, whatever the reference says (1 MiB).
const RESERVE_MAX: usize = 1 << 20;

/// Chains of at least this many pages are first tried as one run of consecutive pages (see
/// `read_run`).
const RUN_MIN_PAGES: u64 = 8;

/// Append the `total` bytes of the chain from `first` to `out`, copying each page's bytes once
/// (no intermediate buffer), with room for `extra` bytes more (the value's tail, a leaf entry's
/// worth at most) reserved.
fn read_chain_into<P: PageRead + ?Sized>(p: &P, first: u64, total: u64, extra: usize, out: &mut Vec<u8>) -> Result<()> {
    let cap = usize::try_from(total).map_err(|_| Error::corrupted(Some(first), "overflow value too large"))?;
    let n = pages_for(total, p.page_size());
    if n >= RUN_MIN_PAGES && read_run(p, (first, n), cap, extra, out)? {
        return Ok(());
    }
    // The length comes from a page: reserve only what a short chain holds and let the walk
    // (bounded by the pages it really reads) grow `out`; a damaged reference's length, up to
    // u64::MAX, used to reserve 1 GiB before the first link was checked.
    if total > MAX_VALUE_SIZE {
        return Err(Error::corrupted(Some(first), format!("overflow value of {total} bytes, over the maximum")));
    }
    out.reserve(cap.min(RESERVE_MAX) + extra);
    walk(p, (first, total), true, |_, d| {
        out.extend_from_slice(d);
        Ok(())
    })?;
    Ok(())
}

/// The chain laid out as a chain is written (`write`, `write_stream`): `n` consecutive pages from
/// `first`, each full but the last. Copies them out of the map in one go (page headers aside,
/// data straight into `out`: one `memcpy` per page, no lookup or pointer chase per page), then
/// checks every header as `walk` would. Returns `false`, with `out` as
/// it was, when the chain is laid out otherwise: the caller then walks it.
fn read_run<P: PageRead + ?Sized>(
    p: &P,
    (first, n): (u64, u64),
    total: usize,
    extra: usize,
    out: &mut Vec<u8>,
) -> Result<bool> {
    let cap = capacity(p.page_size());
    let count = usize::try_from(n).map_err(|_| Error::corrupted(Some(first), "overflow value too large"))?;
    let last_len = total - (count - 1) * cap;
    p.read_run((first, count), (DATA_AT, last_len, extra), out, &|i, h| {
        let pgno = first + i as u64;
        let last = i + 1 == count;
        page::page_no(h) == pgno
            && page::page_kind(h) == Some(PageKind::Overflow)
            && link_fields(h) == Some(if last { (0, last_len) } else { (pgno + 1, cap) })
    })
}

/// Free every page of the chain; returns how many.
pub(crate) fn free<W: PageWrite + ?Sized>(w: &mut W, first: u64, total: u64) -> Result<u64> {
    let mut pages = Vec::new();
    walk(w, (first, total), false, |pg, _| {
        pages.push(pg);
        Ok(())
    })?;
    for pg in &pages {
        w.free(*pg)?;
    }
    Ok(pages.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail rule at 4 KiB and 64 KiB pages: a remainder past at least one full page, of at
    /// most a quarter page's capacity, in an entry that fits.
    #[test]
    fn tails_are_short_remainders_after_full_pages() {
        for ps in [4096usize, 65536] {
            let cap = capacity(ps) as u64;
            let q = cap / 4;
            let k = b"key";
            for (len, want) in [
                (cap - 1, 0),         // no full page
                (cap, 0),             // no remainder
                (cap + 1, 1),         // a one-byte tail
                (3 * cap + q, q),     // the largest
                (3 * cap + q + 1, 0), // too long
                (u32::MAX as u64, if (u32::MAX as u64 % cap) <= q { u32::MAX as u64 % cap } else { 0 }),
            ] {
                assert_eq!(tail_len(k, len, ps) as u64, want, "page size {ps}, value of {len} bytes");
            }
            // An entry that would not fit a leaf keeps no tail.
            let big_key = vec![0u8; node::max_key_size(ps)];
            assert_eq!(tail_len(&big_key, cap + 1, ps), 0, "page size {ps}");
        }
    }

    #[test]
    fn references_round_trip_and_damaged_ones_are_corrupted() {
        let r = encode_ref(5000, 77, b"tail");
        let d = decode_ref(&r).unwrap();
        assert_eq!((d.len, d.first, d.tail, d.chain_len(), d.chain()), (5000, 77, &b"tail"[..], 4996, (4996, 77)));
        let plain = encode_ref(5000, 77, b"");
        assert_eq!(plain.len(), OVERFLOW_REF, "a reference without a tail is version 2's");
        let d = decode_ref(&plain).unwrap();
        assert_eq!((d.len, d.first, d.tail.len()), (5000, 77, 0));
        // Too short, or a tail as long as the value (no byte left for the chain).
        assert!(matches!(decode_ref(&r[..15]), Err(Error::Corrupted { .. })));
        assert!(matches!(decode_ref(&encode_ref(4, 77, b"tail")), Err(Error::Corrupted { .. })));
        assert!(matches!(decode_ref(&encode_ref(2, 77, b"tail")), Err(Error::Corrupted { .. })));
    }
}
