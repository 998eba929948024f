//! The page header shared by every page, page checksums, and the page numbers with a fixed role.
//!
//! ```text
//! offset size field
//!      0    8 checksum  xxh3-64 of bytes [8, page_size) seeded with the page number
//!      8    8 pgno      the page's own number (a page written at the wrong place is caught)
//!     16    8 txid      the transaction that last wrote the page
//!     24    1 kind      PageKind
//!     25    7 reserved  zero; owned by the layer that owns the kind
//! ```
//! Invariant: a committed page (in the data file, in the page table, or rebuilt from the journal)
//! has a valid checksum and its own number: commit seals every page it writes, so recovery can
//! verify each page it rebuilds (damage in a base page outside the replayed ranges is caught).

use crate::{Error, PageNo, Result, TxId};

/// Bytes of the page header; the layer above owns `[PAGE_HEADER, page_size)`.
pub const PAGE_HEADER: usize = 32;
const OFF_CHECKSUM: usize = 0;
const OFF_PGNO: usize = 8;
const OFF_TXID: usize = 16;
const OFF_KIND: usize = 24;

/// What a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PageKind {
    /// The meta page (page 3): owned by the layer above.
    Meta = 1,
    /// A free-space bitmap page.
    FreeMap = 2,
    /// B+tree branch.
    Branch = 3,
    /// B+tree leaf.
    Leaf = 4,
    /// Overflow (large value) page.
    Overflow = 5,
    /// Raw page of a test or tool.
    Raw = 6,
}

impl PageKind {
    pub fn from_u8(b: u8) -> Option<PageKind> {
        Some(match b {
            1 => PageKind::Meta,
            2 => PageKind::FreeMap,
            3 => PageKind::Branch,
            4 => PageKind::Leaf,
            5 => PageKind::Overflow,
            6 => PageKind::Raw,
            _ => return None,
        })
    }
}

/// Page of the free-space bitmap of section 0 (section k >= 1 has its bitmap at page `k * S`,
/// the first page of the section; `file.rs`).
pub(crate) const FIRST_BITMAP_PAGE: u64 = 2;
/// The meta page, owned by the layer above.
pub const META_PAGE: u64 = 3;
/// First page the allocator may hand out in a new database.
pub(crate) const FIRST_FREE_PAGE: u64 = 4;

fn le64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

/// Start loading the cache line that holds `page[at]` into the CPU's cache (a hint: nothing
/// happens when `at` is past the end). The tree's searches use it to overlap their misses.
#[inline(always)]
pub(crate) fn prefetch(page: &[u8], at: usize) {
    crate::storage::sys::prefetch(page, at);
}

/// Start loading every cache line of `page` past the first (which the caller is reading).
#[inline(always)]
pub(crate) fn prefetch_all(page: &[u8]) {
    crate::storage::sys::prefetch_lines(page);
}

/// XXH3-64 of bytes `[8, page_size)` seeded with the page number. Computed with the `xxh3` crate,
/// which picks AVX2 at run time (1.5-1.8x xxhash-rust's SSE2 build on 4 KiB pages here; the same
/// function, so the same values: see `checksum_is_xxh3_64`).
pub(crate) fn compute_checksum(page: &[u8], pgno: PageNo) -> u64 {
    xxh3::hash64_with_seed(&page[8..], pgno.get())
}

/// The page number written in a page's header.
pub fn page_no(page: &[u8]) -> u64 {
    le64(page, OFF_PGNO)
}
/// The transaction that last wrote the page.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn page_txid(page: &[u8]) -> u64 {
    le64(page, OFF_TXID)
}
/// The raw kind byte.
pub fn page_kind(page: &[u8]) -> Option<PageKind> {
    PageKind::from_u8(page[OFF_KIND])
}
pub(crate) fn stored_checksum(page: &[u8]) -> u64 {
    le64(page, OFF_CHECKSUM)
}
/// The page number written in a page's header, typed (`page_no` is the `internals` form).
#[inline]
pub(crate) fn header_pgno(page: &[u8]) -> PageNo {
    PageNo::new(page_no(page))
}

/// Write a fresh header (checksum left for `seal`).
pub(crate) fn init(page: &mut [u8], pgno: u64, kind: PageKind) {
    page[..PAGE_HEADER].fill(0);
    page[OFF_PGNO..OFF_PGNO + 8].copy_from_slice(&pgno.to_le_bytes());
    page[OFF_KIND] = kind as u8;
}

/// Stamp the page number and transaction id and compute the checksum (at commit).
pub(crate) fn seal(page: &mut [u8], pgno: PageNo, txid: TxId) {
    page[OFF_PGNO..OFF_PGNO + 8].copy_from_slice(&pgno.get().to_le_bytes());
    page[OFF_TXID..OFF_TXID + 8].copy_from_slice(&txid.get().to_le_bytes());
    let c = compute_checksum(page, pgno);
    page[OFF_CHECKSUM..OFF_CHECKSUM + 8].copy_from_slice(&c.to_le_bytes());
}

/// Check a page read from the data file.
pub(crate) fn verify(page: &[u8], pgno: PageNo) -> Result<()> {
    if page.len() < PAGE_HEADER {
        return Err(Error::corrupted_at(pgno, "short page"));
    }
    let stored = stored_checksum(page);
    let actual = compute_checksum(page, pgno);
    if stored != actual {
        return Err(Error::corrupted_at(
            pgno,
            format!("page checksum mismatch (stored {stored:#018x}, computed {actual:#018x})"),
        ));
    }
    if header_pgno(page) != pgno {
        return Err(Error::corrupted_at(pgno, format!("page header says page {}", page_no(page))));
    }
    if page_kind(page).is_none() {
        return Err(Error::corrupted_at(pgno, format!("unknown page kind {}", page[OFF_KIND])));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page checksum is XXH3-64 as FORMAT.md says: the `xxh3` crate agrees with xxhash-rust
    /// (the other implementation the engine uses, for records) on every length class of the
    /// algorithm (0, 1-3, 4-8, 9-16, 17-128, 129-240, > 240 bytes) and on whole pages.
    #[test]
    fn checksum_is_xxh3_64() {
        for len in [0usize, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1000, 4088, 16376, 65528] {
            let d: Vec<u8> = (0..len).map(|j| (j * 13 % 251) as u8).collect();
            for seed in [0u64, 1, 7, 0x1234_5678_9abc, u64::MAX] {
                assert_eq!(
                    xxh3::hash64_with_seed(&d, seed),
                    xxhash_rust::xxh3::xxh3_64_with_seed(&d, seed),
                    "length {len}, seed {seed}"
                );
            }
        }
        let mut p = vec![0u8; 4096];
        init(&mut p, 9, PageKind::Raw);
        p[500] = 1;
        assert_eq!(compute_checksum(&p, PageNo::new(9)), xxhash_rust::xxh3::xxh3_64_with_seed(&p[8..], 9));
    }

    #[test]
    fn seal_then_verify_and_detect_flips() {
        let mut p = vec![0u8; 4096];
        init(&mut p, 7, PageKind::Raw);
        p[100] = 42;
        seal(&mut p, PageNo::new(7), TxId::new(3));
        verify(&p, PageNo::new(7)).unwrap();
        assert_eq!(page_no(&p), 7);
        assert_eq!(page_txid(&p), 3);
        assert_eq!(page_kind(&p), Some(PageKind::Raw));
        // Wrong place.
        assert!(matches!(verify(&p, PageNo::new(8)), Err(Error::Corrupted { page: Some(p), .. }) if p == 8));
        // Every single-byte flip is caught.
        for i in 0..p.len() {
            let mut q = p.clone();
            q[i] ^= 0x5a;
            assert!(verify(&q, PageNo::new(7)).is_err(), "flip at {i} not detected");
        }
        // An all-zero page is not a valid page.
        assert!(verify(&vec![0u8; 4096], PageNo::new(5)).is_err());
        // Unknown kind with a valid checksum.
        let mut r = p.clone();
        r[OFF_KIND] = 99;
        seal(&mut r, PageNo::new(7), TxId::new(3));
        assert!(verify(&r, PageNo::new(7)).is_err());
    }
}
