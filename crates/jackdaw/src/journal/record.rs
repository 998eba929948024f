//! The journal record codec: one record per committed transaction.
//!
//! ```text
//! record = header (80 B) | payload (stored_len B) | zero padding to a 4 KiB multiple, or to a
//!          64-byte multiple for a packed record (flag bit 1)
//!
//! header
//! offset size field
//!      0    8 magic       "JKDWJRNL"
//!      8    8 txid
//!     16    8 generation  the journal file's generation (so a stale record of a recycled file
//!                         never verifies in its new life)
//!     24    8 db_id       the data file's id (a journal of another database never verifies)
//!     32    8 next_page   the page high-water mark after this transaction
//!     40    4 page_count  entries in the payload
//!     44    4 flags       bit 0: payload is LZ4 (block format); bit 1: packed (the record
//!                         starts and ends on a 64-byte boundary, not a 4 KiB one)
//!     48    4 stored_len  payload bytes as stored
//!     52    4 raw_len     payload bytes after decompression
//!     56    8 synced_through  every record up to this transaction was durable when this one
//!                         was written (recovery tells a lost unsynced record from a missing one)
//!     64    8 reserved    zero
//!     72    8 checksum    xxh3-64 of header bytes [0, 72) followed by the stored payload
//!
//! payload (after decompression): page_count entries, each
//!      0    8 pgno
//!      8    1 kind        0 full image, 1 diff against the previous version,
//!                         2 diff against a zero page, 3 written once (data = page checksum)
//!      9    3 reserved
//!     12    4 data_len
//!     16    . data        full: page_size bytes; diff: runs of (offset u32, len u32, bytes);
//!                         written once: the page's checksum u64
//! ```
//! Diffs carry absolute byte ranges: replaying a record twice, or over a newer page the flusher
//! already wrote, yields the same page.

use crate::data::page::PAGE_HEADER;
use crate::{Error, Result};
use smallvec::SmallVec;

pub(crate) const MAGIC: &[u8; 8] = b"JKDWJRNL";
pub(crate) const HEADER_LEN: usize = 80;
const CHECKSUM_AT: usize = 72;
/// Records start and end on this boundary (the `O_DIRECT` unit), packed ones aside.
pub(crate) const BLOCK: usize = 4096;
/// A block of zeros: what a write through the page cache ends with (`to_block`).
pub(crate) static ZERO_BLOCK: [u8; BLOCK] = [0; BLOCK];

/// Bytes from file offset `end` to the next `BLOCK` boundary. A write through the page cache that
/// ends inside a page the cache does not hold (a recycled journal file after its pages were
/// evicted) makes the kernel read that page first; so every journal write through the page cache
/// ends on a block, with this many zeros after its records (which the next packed record
/// overwrites).
pub(crate) fn to_block(end: u64) -> usize {
    (end.next_multiple_of(BLOCK as u64) - end) as usize
}

/// Packed records (`FLAG_PACKED`) start and end on this boundary. Records written through the
/// page cache (`Buffered` and `None` commits) are packed: padding each to 4 KiB tripled the
/// journal bytes of a one-update commit (a ~1.2 KiB record), and with them the device bytes, the
/// rotations and the flushes the journal's volume sets off.
pub(crate) const PACK: usize = 64;
/// Payloads of at least this many bytes are never packed (the padding is then noise, and big
/// records keep the 4 KiB layout their streamed and chunked paths rely on).
pub(crate) const PACK_MAX: usize = 1 << 20;
pub(crate) const ENTRY_HEADER: usize = 16;
/// A diff run's header: offset u32 | length u32.
const RUN_HEADER: usize = 8;
const FLAG_LZ4: u32 = 1;
const FLAG_PACKED: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Full = 0,
    Diff = 1,
    DiffZero = 2,
    WrittenOnce = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub txid: u64,
    pub generation: u64,
    pub db_id: u64,
    pub next_page: u64,
    pub page_count: u32,
    pub flags: u32,
    pub stored_len: u32,
    pub raw_len: u32,
    pub synced_through: u64,
    pub checksum: u64,
}

fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn le64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

impl RecordHeader {
    /// Total bytes the record occupies in the file.
    pub(crate) fn record_len(&self) -> u64 {
        record_len_for(self.stored_len as u64, self.packed())
    }
    /// Whether the record is packed (`PACK`-aligned, not `BLOCK`-aligned).
    pub(crate) fn packed(&self) -> bool {
        self.flags & FLAG_PACKED != 0
    }
    fn encode_prefix(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..16].copy_from_slice(&self.txid.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..32].copy_from_slice(&self.db_id.to_le_bytes());
        b[32..40].copy_from_slice(&self.next_page.to_le_bytes());
        b[40..44].copy_from_slice(&self.page_count.to_le_bytes());
        b[44..48].copy_from_slice(&self.flags.to_le_bytes());
        b[48..52].copy_from_slice(&self.stored_len.to_le_bytes());
        b[52..56].copy_from_slice(&self.raw_len.to_le_bytes());
        b[56..64].copy_from_slice(&self.synced_through.to_le_bytes());
        b
    }
    /// Parse a header; `None` unless the magic matches.
    pub(crate) fn decode(b: &[u8]) -> Option<RecordHeader> {
        if b.len() < HEADER_LEN || &b[0..8] != MAGIC || b[64..72] != [0u8; 8] {
            return None;
        }
        Some(RecordHeader {
            txid: le64(b, 8),
            generation: le64(b, 16),
            db_id: le64(b, 24),
            next_page: le64(b, 32),
            page_count: le32(b, 40),
            flags: le32(b, 44),
            stored_len: le32(b, 48),
            raw_len: le32(b, 52),
            synced_through: le64(b, 56),
            checksum: le64(b, CHECKSUM_AT),
        })
    }
    fn compute_checksum(&self, payload: &[u8]) -> u64 {
        let mut h = self.hasher();
        h.update(payload);
        h.digest()
    }
    /// The checksum's state after the header bytes: feed it the stored payload, in order, and
    /// compare its digest with `checksum` (recovery verifies a big record in chunks this way).
    pub(crate) fn hasher(&self) -> xxhash_rust::xxh3::Xxh3 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&self.encode_prefix()[..CHECKSUM_AT]);
        h
    }
}

/// A byte buffer whose data starts on a 4 KiB boundary (for `O_DIRECT`), built without `unsafe`
/// by over-allocating and offsetting. It holds one framed record at a time (`set`): the bytes
/// given, then zeros to the record's length.
///
/// Invariant: every byte from `zero_from` (relative to the aligned start) to the end of the
/// allocation is zero. So a record clears only what the one before it wrote past its own bytes:
/// a small record used to zero its whole padding to 4 KiB, ~3,000 instructions of a one-update
/// commit of ~23,000 (callgrind).
#[derive(Default)]
pub(crate) struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
    zero_from: usize,
}

impl AlignedBuf {
    /// Make the buffer `len` bytes long: `parts` back to back, then zeros (reuses the allocation
    /// when it is large enough). The parts must fit in `len`.
    pub(crate) fn set(&mut self, len: usize, parts: &[&[u8]]) {
        // Room for the alignment, and for zeros to the next block past the record (`through_block`).
        if self.raw.len() < len + 2 * BLOCK {
            self.raw = vec![0u8; len + 2 * BLOCK];
            let addr = self.raw.as_ptr() as usize;
            self.start = (BLOCK - addr % BLOCK) % BLOCK;
            self.zero_from = 0;
        }
        let buf = &mut self.raw[self.start..];
        let mut at = 0;
        for p in parts {
            buf[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        assert!(at <= len, "a record's bytes overflow its length");
        if self.zero_from > at {
            buf[at..self.zero_from].fill(0);
        }
        self.zero_from = at;
        self.len = len;
    }
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
    /// The record, then zeros to the next 4 KiB boundary of the file when it is written at
    /// `offset` (`to_block`).
    pub(crate) fn through_block(&self, offset: u64) -> &[u8] {
        let end = self.len + to_block(offset + self.len as u64);
        &self.raw[self.start..self.start + end]
    }
}

/// Builds a record's payload, page by page.
#[derive(Default)]
pub(crate) struct PayloadBuilder {
    pub(crate) buf: Vec<u8>,
    pub(crate) count: u32,
    /// Bytes the payload would take with full page images (for stats).
    pub(crate) full_bytes: u64,
}

impl PayloadBuilder {
    /// A builder with room for `pages` entries of a typical diff (1,152 bytes each: a page whose
    /// 1,000-byte value changed, with the entry's, the runs' and the page header's bytes; at most
    /// 1 MiB in all): a small commit's payload then grows without reallocating (from empty it
    /// reallocated ~7 times, ~2,500 instructions a one-put commit under callgrind; with 512 bytes
    /// a page, a YCSB update's diff still grew it once).
    pub(crate) fn for_pages(pages: usize) -> PayloadBuilder {
        PayloadBuilder { buf: Vec::with_capacity(pages.saturating_mul(1152).clamp(256, 1 << 20)), ..Default::default() }
    }
    fn entry_header(&mut self, pgno: u64, kind: EntryKind, data_len: usize) {
        self.buf.extend_from_slice(&pgno.to_le_bytes());
        self.buf.extend_from_slice(&[kind as u8, 0, 0, 0]);
        self.buf.extend_from_slice(&(data_len as u32).to_le_bytes());
        self.count += 1;
    }

    /// Add a page: a diff against `old` (or against zeros when `old` is `None`) if that is
    /// smaller than the image, else the full image.
    pub(crate) fn add_page(&mut self, pgno: u64, new: &[u8], old: Option<&[u8]>) {
        self.full_bytes += (ENTRY_HEADER + new.len()) as u64;
        let at = self.buf.len();
        let kind = if old.is_some() { EntryKind::Diff } else { EntryKind::DiffZero };
        self.entry_header(pgno, kind, 0);
        let data_start = self.buf.len();
        let limit = diff_limit(new.len());
        let fits = diff_into(&mut self.buf, new, old, limit);
        if fits {
            let dl = (self.buf.len() - data_start) as u32;
            self.buf[at + 12..at + 16].copy_from_slice(&dl.to_le_bytes());
        } else {
            self.buf.truncate(at);
            self.count -= 1;
            self.add_full(pgno, new);
        }
    }

    /// The full image of a page whose diff would pass 7/8 of it (`full_bytes` counted by the caller).
    fn add_full(&mut self, pgno: u64, new: &[u8]) {
        self.entry_header(pgno, EntryKind::Full, new.len());
        self.buf.extend_from_slice(new);
    }

    /// Add a page that differs from its base version only inside `written` (byte ranges, a
    /// superset of the changed bytes) and in its page header (which commit stamps): those bytes
    /// are the diff, as they are, without reading the base version at all. Ranges are merged when
    /// they overlap or lie closer than a run header (8 bytes).
    pub(crate) fn add_page_ranges(&mut self, pgno: u64, new: &[u8], written: &[(usize, usize)]) {
        let n = new.len();
        let mut runs: SmallVec<[(usize, usize); 8]> = SmallVec::new();
        runs.push((0, PAGE_HEADER.min(n)));
        runs.extend(written.iter().map(|&(a, b)| (a.min(n), b.min(n))).filter(|(a, b)| a < b));
        runs.sort_unstable();
        let mut merged: SmallVec<[(usize, usize); 8]> = SmallVec::new();
        for (a, b) in runs {
            match merged.last_mut() {
                Some(last) if a <= last.1 + RUN_HEADER => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.full_bytes += (ENTRY_HEADER + n) as u64;
        let bytes: usize = merged.iter().map(|(a, b)| RUN_HEADER + b - a).sum();
        if bytes > diff_limit(n) {
            return self.add_full(pgno, new);
        }
        self.entry_header(pgno, EntryKind::Diff, bytes);
        for (a, b) in merged {
            push_run(&mut self.buf, new, a, b);
        }
    }

    /// Add a page that was written straight to the data file: only its checksum is journaled.
    pub(crate) fn add_written_once(&mut self, pgno: u64, checksum: u64, page_size: usize) {
        self.full_bytes += (ENTRY_HEADER + page_size) as u64;
        self.entry_header(pgno, EntryKind::WrittenOnce, 8);
        self.buf.extend_from_slice(&checksum.to_le_bytes());
    }
}

/// Most bytes a diff of a `page_size`-byte page may take (run headers included) before the full
/// image is stored instead: 7/8 of the page.
fn diff_limit(page_size: usize) -> usize {
    page_size - page_size / 8
}

/// Append the run `new[a..b]` at offset `a`: offset u32 | length u32 | bytes.
fn push_run(out: &mut Vec<u8>, new: &[u8], a: usize, b: usize) {
    out.extend_from_slice(&(a as u32).to_le_bytes());
    out.extend_from_slice(&((b - a) as u32).to_le_bytes());
    out.extend_from_slice(&new[a..b]);
}

/// Append the runs of bytes where `new` differs from `old` (zeros if `None`). Returns false as
/// soon as the encoding would pass `limit` bytes (the caller then stores the full image).
///
/// Equal regions are skipped 512 then 64 bytes at a time (one vectorised `memcmp` each); run edges
/// are refined to the byte with 8-byte XORs. A run ends at the first equal 64-byte block, so runs
/// are at least 64 bytes apart (a run header costs 8).
fn diff_into(out: &mut Vec<u8>, new: &[u8], old: Option<&[u8]>, limit: usize) -> bool {
    const B: usize = 64;
    const BIG: usize = 512;
    static ZEROS: [u8; BIG] = [0u8; BIG];
    let start_len = out.len();
    let n = new.len();
    let eq = |i: usize, len: usize| {
        let e = (i + len).min(n);
        match old {
            Some(o) => new[i..e] == o[i..e],
            None => new[i..e] == ZEROS[..e - i],
        }
    };
    let mut i = 0;
    while i < n {
        if i % BIG == 0 && eq(i, BIG) {
            i += BIG;
            continue;
        }
        if eq(i, B) {
            i += B;
            continue;
        }
        let a = first_diff(new, old, i);
        let mut j = i;
        while j < n && !eq(j, B) {
            j += B;
        }
        let j = j.min(n);
        let b = last_diff(new, old, j, a);
        push_run(out, new, a, b);
        if out.len() - start_len > limit {
            return false;
        }
        i = j;
    }
    true
}

/// The 8 bytes of `b` from `i` (zeros past its end) as a little-endian word.
#[inline]
fn word_at(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    let e = (i + 8).min(b.len());
    w[..e - i].copy_from_slice(&b[i..e]);
    u64::from_le_bytes(w)
}

/// The XOR of `new` and `old` (zeros if `None`) over the 8 bytes from `i`: non-zero where they
/// differ.
#[inline]
fn xor_at(new: &[u8], old: Option<&[u8]>, i: usize) -> u64 {
    word_at(new, i) ^ old.map_or(0, |o| word_at(o, i))
}

/// `diff_into`'s first differing byte at or after `i` (one is known to exist before the end).
#[inline]
fn first_diff(new: &[u8], old: Option<&[u8]>, mut i: usize) -> usize {
    loop {
        let x = xor_at(new, old, i);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
}

/// `diff_into`'s one past the last differing byte before `e` (one is known to exist after `lo`).
#[inline]
fn last_diff(new: &[u8], old: Option<&[u8]>, e: usize, lo: usize) -> usize {
    let mut i = (e - 1) & !7;
    loop {
        let mut x = xor_at(new, old, i);
        if i + 8 > e {
            x &= (1u64 << ((e - i) * 8)) - 1;
        }
        if x != 0 {
            return i + 8 - (x.leading_zeros() / 8) as usize;
        }
        if i <= lo {
            return lo + 1;
        }
        i -= 8;
    }
}

#[cfg(test)]
mod diff_tests {
    use super::*;

    /// Random sparse changes: the diff applied to the old page gives the new one, and the runs
    /// cover exactly the changed bytes' span.
    #[test]
    fn diff_roundtrips_random_changes() {
        let mut rnd = crate::test_rng(0x9e3779b97f4a7c15u64);
        for round in 0..2000 {
            let ps = 4096;
            let old: Vec<u8> = (0..ps).map(|_| rnd() as u8).collect();
            let mut new = old.clone();
            for _ in 0..(rnd() % 12) {
                let at = (rnd() % ps as u64) as usize;
                let len = ((rnd() % 40) as usize).min(ps - at);
                for b in &mut new[at..at + len] {
                    *b = b.wrapping_add(1 + (rnd() % 250) as u8);
                }
            }
            let base = if round % 3 == 0 { None } else { Some(old.as_slice()) };
            let mut out = Vec::new();
            assert!(diff_into(&mut out, &new, base, usize::MAX));
            let e =
                Entry { pgno: 1, kind: if base.is_some() { EntryKind::Diff } else { EntryKind::DiffZero }, data: &out };
            let mut page = old.clone();
            apply(&e, &mut page).unwrap();
            assert_eq!(page, new, "round {round}");
            if new == old && base.is_some() {
                assert!(out.is_empty());
            }
        }
    }

    /// A page changed only inside the ranges given (and in its header): the entry built from the
    /// new image alone, applied to the old page, gives the new page; ranges that cover most of
    /// the page give a full image instead.
    #[test]
    fn ranges_roundtrip_without_the_old_page() {
        let mut rnd = crate::test_rng(0x9e37_79b9_7f4a_7c15u64);
        let ps = 4096;
        let mut fulls = 0;
        for round in 0..2000 {
            let old: Vec<u8> = (0..ps).map(|_| rnd() as u8).collect();
            let mut new = old.clone();
            for b in &mut new[..PAGE_HEADER] {
                *b = rnd() as u8;
            }
            let mut written = Vec::new();
            for _ in 0..(rnd() % (if round % 10 == 0 { 40 } else { 6 })) {
                let a = (rnd() % ps as u64) as usize;
                let b = (a + (rnd() % 300) as usize).min(ps);
                for v in &mut new[a..b] {
                    *v = rnd() as u8;
                }
                written.push((a, b));
            }
            let mut pb = PayloadBuilder::default();
            pb.add_page_ranges(7, &new, &written);
            let kind = if pb.buf[8] == EntryKind::Full as u8 { EntryKind::Full } else { EntryKind::Diff };
            fulls += (kind == EntryKind::Full) as u32;
            let e = Entry { pgno: 7, kind, data: &pb.buf[ENTRY_HEADER..] };
            let mut page = old.clone();
            apply(&e, &mut page).unwrap();
            assert_eq!(page, new, "round {round}");
            assert!(pb.buf.len() <= ENTRY_HEADER + ps, "round {round}: larger than a full image");
        }
        assert!(fulls > 0 && fulls < 2000, "both encodings must occur ({fulls} full images)");
    }
}

/// A payload ready to be framed: compressed with LZ4 when that saves at least 1/8.
pub(crate) struct Compressed {
    pub stored: Vec<u8>,
    pub flags: u32,
    pub raw_len: u32,
    pub page_count: u32,
    /// Bytes the payload would take with full page images (for stats).
    pub full_bytes: u64,
}

/// Payloads smaller than this are stored as they are: compressing a few KiB saves little (rarely
/// a 4 KiB block; a packed record's few 64-byte units) and costs CPU on the commit path.
pub(crate) const COMPRESS_MIN: usize = 64 << 10;

/// Whether a large payload is worth compressing whole: eight 64 KiB samples spread over it must
/// save at least 1/8 together. Compressing a big incompressible payload only to throw the result
/// away cost time and, for a moment, as much memory again as the payload (faults issue §5: a
/// 262 MiB record). Payloads up to 1 MiB are simply tried.
fn sample_compresses(raw: &[u8]) -> bool {
    const SAMPLE: usize = 64 << 10;
    if raw.len() <= 1 << 20 {
        return true;
    }
    let step = (raw.len() - SAMPLE) / 7;
    let (mut inn, mut out) = (0usize, 0usize);
    for i in 0..8 {
        let part = &raw[i * step..i * step + SAMPLE];
        inn += part.len();
        out += lz4_flex::block::compress(part).len();
    }
    out < inn - inn / 8
}

/// Compress a payload (done before the record's place in the journal is known).
pub(crate) fn compress(payload: PayloadBuilder, max: u64) -> Result<Compressed> {
    let raw = payload.buf;
    let raw_len = u32::try_from(raw.len())
        .ok()
        .filter(|l| u64::from(*l) <= max)
        .ok_or(Error::TransactionTooLarge { bytes: raw.len() as u64, max: max.min(u32::MAX as u64) })?;
    let (stored, flags) = if raw.len() >= COMPRESS_MIN && sample_compresses(&raw) {
        let c = lz4_flex::block::compress(&raw);
        if c.len() < raw.len() - raw.len() / 8 {
            (c, FLAG_LZ4)
        } else {
            (raw, 0)
        }
    } else {
        (raw, 0)
    };
    Ok(Compressed { stored, flags, raw_len, page_count: payload.count, full_bytes: payload.full_bytes })
}

/// Whether the record of `c` is packed when written through the page cache.
pub(crate) fn packs(c: &Compressed, through_page_cache: bool) -> bool {
    through_page_cache && c.stored.len() < PACK_MAX
}

/// Length of the record `frame` makes of `c` (header, payload, padding to a block or, `packed`,
/// to `PACK`).
pub(crate) fn record_len(c: &Compressed, packed: bool) -> u64 {
    record_len_for(c.stored.len() as u64, packed)
}

/// The header of the record `frame` makes of `c`, and its encoded bytes.
pub(crate) fn header(
    txid: u64,
    generation: u64,
    db_id: u64,
    next_page: u64,
    synced_through: u64,
    c: &Compressed,
    packed: bool,
) -> (RecordHeader, [u8; HEADER_LEN]) {
    let mut h = RecordHeader {
        txid,
        generation,
        db_id,
        next_page,
        page_count: c.page_count,
        flags: c.flags | if packed { FLAG_PACKED } else { 0 },
        stored_len: c.stored.len() as u32,
        raw_len: c.raw_len,
        synced_through,
        checksum: 0,
    };
    h.checksum = h.compute_checksum(&c.stored);
    let mut b = [0u8; HEADER_LEN];
    b[..CHECKSUM_AT].copy_from_slice(&h.encode_prefix()[..CHECKSUM_AT]);
    b[CHECKSUM_AT..HEADER_LEN].copy_from_slice(&h.checksum.to_le_bytes());
    (h, b)
}

/// Frame a compressed payload as a record of `generation` into `out` (4 KiB aligned, padded to
/// 4 KiB or, `packed`, to `PACK`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn frame(
    out: &mut AlignedBuf,
    txid: u64,
    generation: u64,
    db_id: u64,
    next_page: u64,
    synced_through: u64,
    c: &Compressed,
    packed: bool,
) -> RecordHeader {
    let (h, head) = header(txid, generation, db_id, next_page, synced_through, c, packed);
    out.set(h.record_len() as usize, &[&head, &c.stored]);
    h
}

/// Length of a record whose stored payload is `stored_len` bytes (header, payload, padding).
pub(crate) fn record_len_for(stored_len: u64, packed: bool) -> u64 {
    let unit = if packed { PACK } else { BLOCK } as u64;
    (HEADER_LEN as u64 + stored_len).div_ceil(unit) * unit
}

/// Commits that journal at least this many bytes of pages stream their record
/// (`Options::stream_record_bytes`): below it the payload is built whole (and compressed), which
/// costs at most about twice this much memory for a moment.
pub(crate) const STREAM_RECORD_MIN: u64 = 16 << 20;

/// A streamed record's payload goes to the file in writes of about this many bytes.
pub(crate) const STREAM_CHUNK: usize = 4 << 20;

/// A record written while its payload is encoded (`txn/write.rs`, faults issue §5): the payload
/// goes to the file in chunks after the header's place, hashed on the way, and the header last.
/// Its length is known before the first byte is hashed (a sizing pass), and it is stored
/// uncompressed (`flags` 0), so the checksum is the ordinary one and the record is an ordinary
/// record (FORMAT.md §6.1).
pub(crate) struct StreamedRecord {
    header: RecordHeader,
    hasher: xxhash_rust::xxh3::Xxh3,
    hashed: u64,
}

impl StreamedRecord {
    /// Begin a record of `raw_len` payload bytes in `page_count` entries.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn begin(
        txid: u64,
        generation: u64,
        db_id: u64,
        next_page: u64,
        synced_through: u64,
        page_count: u32,
        raw_len: u32,
    ) -> StreamedRecord {
        let header = RecordHeader {
            txid,
            generation,
            db_id,
            next_page,
            page_count,
            flags: 0,
            stored_len: raw_len,
            raw_len,
            synced_through,
            checksum: 0,
        };
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&header.encode_prefix()[..CHECKSUM_AT]);
        StreamedRecord { header, hasher, hashed: 0 }
    }

    /// Hash the next payload bytes (in order).
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.hashed += bytes.len() as u64;
    }

    /// The header bytes, once exactly `raw_len` payload bytes were hashed (else `None`: the two
    /// encoding passes disagreed, a bug reported by the caller).
    pub(crate) fn finish(mut self) -> Option<(RecordHeader, [u8; HEADER_LEN])> {
        if self.hashed != self.header.raw_len as u64 {
            return None;
        }
        self.header.checksum = self.hasher.digest();
        let mut b = [0u8; HEADER_LEN];
        b[..CHECKSUM_AT].copy_from_slice(&self.header.encode_prefix()[..CHECKSUM_AT]);
        b[CHECKSUM_AT..].copy_from_slice(&self.header.checksum.to_le_bytes());
        Some((self.header, b))
    }
}

/// Check a record read from a file of `generation` (bytes start at the header; at least
/// `record_len` bytes must be present) and return its payload, decompressed.
#[cfg(test)]
pub(crate) fn verify_and_decode(h: &RecordHeader, bytes: &[u8], generation: u64, db_id: u64) -> Option<Vec<u8>> {
    verify_and_decode_owned(h, bytes.to_vec(), generation, db_id)
}

/// `verify_and_decode` of a record read into `bytes`, which it consumes: an uncompressed payload
/// is returned in the same buffer (moved down over the header, not copied), so a record of
/// 1 GiB costs 1 GiB at recovery, not 2 (faults issue §5).
pub(crate) fn verify_and_decode_owned(
    h: &RecordHeader,
    mut bytes: Vec<u8>,
    generation: u64,
    db_id: u64,
) -> Option<Vec<u8>> {
    if h.generation != generation || h.db_id != db_id {
        return None;
    }
    let end = HEADER_LEN.checked_add(h.stored_len as usize)?;
    let stored = bytes.get(HEADER_LEN..end)?;
    if h.compute_checksum(stored) != h.checksum {
        return None;
    }
    let flags = h.flags & !FLAG_PACKED;
    if flags & FLAG_LZ4 != 0 {
        // Bound the allocation by what a valid record can hold, and by LZ4's maximum ratio.
        if h.raw_len as u64 > (h.page_count as u64 + 1) * (ENTRY_HEADER as u64 + 65536)
            || h.raw_len as u64 > (h.stored_len as u64 + 16) * 255
        {
            return None;
        }
        lz4_flex::block::decompress(stored, h.raw_len as usize).ok().filter(|v| v.len() == h.raw_len as usize)
    } else if flags == 0 && h.raw_len == h.stored_len {
        bytes.truncate(end);
        bytes.drain(..HEADER_LEN);
        Some(bytes)
    } else {
        None
    }
}

/// One decoded payload entry.
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    pub pgno: u64,
    pub kind: EntryKind,
    pub data: &'a [u8],
}

/// Parse every entry of a payload, checking bounds.
pub(crate) fn entries(payload: &[u8], count: u32, page_size: usize) -> Result<Vec<Entry<'_>>> {
    let bad = |why: &str| Error::corrupted(None, format!("journal record payload: {why}"));
    // The count comes from disk: never reserve more than the payload can hold.
    let mut out = Vec::with_capacity((count as usize).min(payload.len() / ENTRY_HEADER));
    let mut pos = 0usize;
    for _ in 0..count {
        let h = payload.get(pos..pos + ENTRY_HEADER).ok_or_else(|| bad("entry header past the end"))?;
        let (pgno, kind, len) = entry_header(h, page_size)?;
        pos += ENTRY_HEADER;
        let data = payload
            .get(pos..pos.checked_add(len).ok_or_else(|| bad("length overflow"))?)
            .ok_or_else(|| bad("entry data past the end"))?;
        pos += len;
        out.push(Entry { pgno, kind, data });
    }
    if pos != payload.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

/// Decode an entry header (`ENTRY_HEADER` bytes): page number, kind and data length, the length
/// checked against the kind.
pub(crate) fn entry_header(h: &[u8], page_size: usize) -> Result<(u64, EntryKind, usize)> {
    let bad = |why: &str| Error::corrupted(None, format!("journal record payload: {why}"));
    if h.len() < ENTRY_HEADER {
        return Err(bad("entry header past the end"));
    }
    let kind = match h[8] {
        0 => EntryKind::Full,
        1 => EntryKind::Diff,
        2 => EntryKind::DiffZero,
        3 => EntryKind::WrittenOnce,
        k => return Err(bad(&format!("entry kind {k}"))),
    };
    let len = le32(h, 12) as usize;
    match kind {
        EntryKind::Full if len != page_size => return Err(bad("full image of the wrong size")),
        EntryKind::WrittenOnce if len != 8 => return Err(bad("written-once entry size")),
        _ => {}
    }
    Ok((le64(h, 0), kind, len))
}

/// Apply a `Full`, `Diff` or `DiffZero` entry to `page` (which holds the previous version for
/// `Diff`). Bounds-checked: a bad run is `Corrupted`.
pub(crate) fn apply(e: &Entry<'_>, page: &mut [u8]) -> Result<()> {
    match e.kind {
        EntryKind::Full => page.copy_from_slice(e.data),
        EntryKind::Diff | EntryKind::DiffZero => {
            if e.kind == EntryKind::DiffZero {
                page.fill(0);
            }
            let mut pos = 0usize;
            let d = e.data;
            while pos < d.len() {
                let h = d.get(pos..pos + 8).ok_or_else(|| Error::corrupted(Some(e.pgno), "diff run header cut"))?;
                let (off, len) = (le32(h, 0) as usize, le32(h, 4) as usize);
                pos += 8;
                let src = d.get(pos..pos + len).ok_or_else(|| Error::corrupted(Some(e.pgno), "diff run cut"))?;
                let dst = page
                    .get_mut(off..off.saturating_add(len))
                    .ok_or_else(|| Error::corrupted(Some(e.pgno), "diff run past the page"))?;
                dst.copy_from_slice(src);
                pos += len;
            }
        }
        EntryKind::WrittenOnce => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(seed: u8, ps: usize) -> Vec<u8> {
        (0..ps).map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed)).collect()
    }

    fn roundtrip(p: &PayloadBuilder) -> (RecordHeader, Vec<u8>) {
        let mut out = AlignedBuf::default();
        let c =
            compress(PayloadBuilder { buf: p.buf.clone(), count: p.count, full_bytes: p.full_bytes }, u32::MAX as u64)
                .unwrap();
        let h = frame(&mut out, 5, 2, 99, 1000, 4, &c, false);
        assert_eq!(out.as_slice().len() % BLOCK, 0);
        assert_eq!(out.as_slice().as_ptr() as usize % BLOCK, 0);
        let h2 = RecordHeader::decode(out.as_slice()).unwrap();
        assert_eq!(h, h2);
        let payload = verify_and_decode(&h2, out.as_slice(), 2, 99).expect("valid");
        // The same payload packed: a multiple of `PACK` no longer than the block-padded record,
        // the same payload back, and the flag is covered by the checksum.
        let mut packed = AlignedBuf::default();
        let hp = frame(&mut packed, 5, 2, 99, 1000, 4, &c, true);
        assert!(hp.packed() && !h.packed());
        assert_eq!(packed.as_slice().len() as u64, record_len(&c, true));
        assert_eq!(packed.as_slice().len() % PACK, 0);
        assert!(packed.as_slice().len() <= out.as_slice().len());
        assert_eq!(verify_and_decode(&hp, packed.as_slice(), 2, 99).as_deref(), Some(&payload[..]));
        let mut flipped = packed.as_slice().to_vec();
        flipped[44] ^= FLAG_PACKED as u8;
        let hf = RecordHeader::decode(&flipped).unwrap();
        assert!(verify_and_decode(&hf, &flipped, 2, 99).is_none(), "the packed flag is checksummed");
        // Written at any offset, the packed record then zeros end on a block of the file.
        for off in [0u64, 64, 4032, 4096 + 128] {
            let w = packed.through_block(off);
            assert_eq!((off + w.len() as u64) % BLOCK as u64, 0);
            assert_eq!(&w[..packed.as_slice().len()], packed.as_slice());
            assert!(w[packed.as_slice().len()..].iter().all(|b| *b == 0));
        }
        (h2, payload)
    }

    #[test]
    fn diff_full_and_zero_entries_roundtrip() {
        let ps = 4096;
        let old = page(3, ps);
        let mut new = old.clone();
        new[10] ^= 1;
        new[4000..4010].fill(7);
        let fresh = {
            let mut z = vec![0u8; ps];
            z[100..120].fill(9);
            z
        };
        let random = page(7, ps);
        let mut p = PayloadBuilder::default();
        p.add_page(4, &new, Some(&old));
        p.add_page(5, &fresh, None);
        p.add_page(6, &random, Some(&old));
        p.add_written_once(7, 0xabcd, ps);
        let (h, payload) = roundtrip(&p);
        assert_eq!(h.page_count, 4);
        let es = entries(&payload, h.page_count, ps).unwrap();
        assert_eq!(es[0].kind, EntryKind::Diff);
        assert!(es[0].data.len() < 64, "small diff expected, got {}", es[0].data.len());
        assert_eq!(es[1].kind, EntryKind::DiffZero);
        assert_eq!(es[2].kind, EntryKind::Full);
        assert_eq!(es[3].kind, EntryKind::WrittenOnce);
        let mut pg = old.clone();
        apply(&es[0], &mut pg).unwrap();
        assert_eq!(pg, new);
        // Idempotent: applying again, or over the new page, gives the new page.
        apply(&es[0], &mut pg).unwrap();
        assert_eq!(pg, new);
        let mut pg = random.clone();
        apply(&es[1], &mut pg).unwrap();
        assert_eq!(pg, fresh);
        apply(&es[2], &mut pg).unwrap();
        assert_eq!(pg, random);
    }

    /// A record streamed in chunks (header hashed first, then the payload piece by piece) is an
    /// ordinary record: it decodes and verifies like the framed record of the same payload, and
    /// a wrong length is refused rather than framed.
    #[test]
    fn a_streamed_record_is_an_ordinary_record() {
        let ps = 4096;
        let mut p = PayloadBuilder::default();
        for i in 0..20u64 {
            p.add_page(i + 2, &page(i as u8 + 1, ps), None);
        }
        let raw = p.buf.clone();
        let mut s = StreamedRecord::begin(5, 2, 99, 1000, 4, p.count, raw.len() as u32);
        for part in raw.chunks(1000) {
            s.update(part);
        }
        let (h, head) = s.finish().expect("every byte hashed");
        assert_eq!(h.flags, 0);
        assert_eq!(h.record_len(), record_len_for(raw.len() as u64, false));
        let mut bytes = head.to_vec();
        bytes.extend_from_slice(&raw);
        bytes.resize(h.record_len() as usize, 0);
        let h2 = RecordHeader::decode(&bytes).unwrap();
        assert_eq!(h, h2);
        assert_eq!(verify_and_decode(&h2, &bytes, 2, 99).expect("valid"), raw);
        // One payload byte changed: not a record.
        bytes[HEADER_LEN + 500] ^= 1;
        assert!(verify_and_decode(&h2, &bytes, 2, 99).is_none());
        // Fewer bytes hashed than announced: no header.
        let mut s = StreamedRecord::begin(5, 2, 99, 1000, 4, p.count, raw.len() as u32);
        s.update(&raw[..raw.len() - 1]);
        assert!(s.finish().is_none());
    }

    #[test]
    fn compressible_payload_is_compressed() {
        let ps = 4096;
        let mut p = PayloadBuilder::default();
        for i in 0..40 {
            let mut pg = vec![0u8; ps];
            for (j, b) in pg.iter_mut().enumerate() {
                *b = (j % 16) as u8 + 1;
            }
            p.add_page(i, &pg, None);
        }
        let (h, payload) = roundtrip(&p);
        assert_eq!(h.flags & FLAG_LZ4, FLAG_LZ4);
        assert!(h.stored_len < h.raw_len / 4);
        assert_eq!(entries(&payload, h.page_count, ps).unwrap().len(), 40);
    }

    /// `AlignedBuf` clears only what the previous record wrote past the new one's bytes: every
    /// record, after longer and shorter ones, is its bytes then zeros, 4 KiB aligned.
    #[test]
    fn aligned_buffer_pads_with_zeros_after_longer_records() {
        let mut out = AlignedBuf::default();
        // (record length, bytes written, fill byte): longer, shorter, longer again, reallocated.
        let steps = [(8192, 6000, 0xaa), (4096, 100, 0xbb), (8192, 10, 0xcc), (4096, 4096, 0xdd), (65536, 3, 0xee)];
        for (len, used, b) in steps {
            let bytes = vec![b; used];
            out.set(len, &[&bytes[..used / 2], &bytes[used / 2..]]);
            let s = out.as_slice();
            assert_eq!(s.len(), len);
            assert_eq!(s.as_ptr() as usize % BLOCK, 0);
            assert!(s[..used].iter().all(|x| *x == b), "record bytes");
            assert!(s[used..].iter().all(|x| *x == 0), "padding after a record of {used} bytes");
        }
    }

    #[test]
    fn corrupt_records_are_rejected() {
        let ps = 4096;
        let mut p = PayloadBuilder::default();
        p.add_page(9, &page(5, ps), None);
        let mut out = AlignedBuf::default();
        let h = frame(&mut out, 1, 1, 1, 10, 0, &compress(p, u32::MAX as u64).unwrap(), false);
        let bytes = out.as_slice().to_vec();
        // Wrong generation or database: not a live record.
        assert!(verify_and_decode(&h, &bytes, 2, 1).is_none());
        assert!(verify_and_decode(&h, &bytes, 1, 2).is_none());
        // Every flip in header or payload is caught.
        let end = HEADER_LEN + h.stored_len as usize;
        for i in (0..end).step_by(7) {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let ok = RecordHeader::decode(&b).and_then(|h2| verify_and_decode(&h2, &b, 1, 1));
            assert!(ok.is_none(), "flip at {i} accepted");
        }
        // Truncated record.
        assert!(verify_and_decode(&h, &bytes[..HEADER_LEN + 10], 1, 1).is_none());
        // Malformed payloads are errors, not panics.
        assert!(entries(&[1, 2, 3], 1, ps).is_err());
        let mut bad = Vec::new();
        bad.extend_from_slice(&5u64.to_le_bytes());
        bad.extend_from_slice(&[1, 0, 0, 0]);
        bad.extend_from_slice(&8u32.to_le_bytes());
        bad.extend_from_slice(&4090u32.to_le_bytes());
        bad.extend_from_slice(&100u32.to_le_bytes());
        let es = entries(&bad, 1, ps).unwrap();
        assert!(apply(&es[0], &mut vec![0u8; ps]).is_err());
        assert!(entries(&bad, 2, ps).is_err());
    }
}
