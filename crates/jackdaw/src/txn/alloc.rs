//! The free-space map: one bit per page (1 = free) in bitmap pages, one per section of
//! `S = (page_size - 32) * 8` pages; section 0's bitmap is page 2, section k's is page `k * S`.
//! Bitmap pages are ordinary pages: the writer changes them through its dirty copies, so they are
//! journaled, versioned and recovered like any other page.
//!
//! Invariants (checked in full by `check()`):
//! 1. Bits of pages at or past `next_page` are 0; bitmap pages, the header slots and the meta page
//!    are never free.
//! 2. `AllocSummary::free[k]` equals the number of set bits of section k in the committed state.

pub(crate) use crate::data::file::Geometry;
use crate::data::page::PAGE_HEADER;

/// Committed per-section free counts (derived from the bitmap pages at open).
#[derive(Debug, Clone, Default)]
pub(crate) struct AllocSummary {
    pub free: Vec<u64>,
}

impl AllocSummary {
    pub(crate) fn total_free(&self) -> u64 {
        self.free.iter().sum()
    }
}

/// Index (within the section) of the first set bit of a bitmap page, below `limit`.
pub(crate) fn first_set_bit(page: &[u8], limit: u64) -> Option<u64> {
    let bits = &page[PAGE_HEADER..];
    for (wi, chunk) in bits.chunks(8).enumerate() {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        let v = u64::from_le_bytes(w);
        if v != 0 {
            let i = wi as u64 * 64 + v.trailing_zeros() as u64;
            return (i < limit).then_some(i);
        }
        if (wi as u64 + 1) * 64 >= limit {
            break;
        }
    }
    None
}

/// Number of set bits of a bitmap page among the first `limit`.
pub(crate) fn count_set_bits(page: &[u8], limit: u64) -> u64 {
    let bits = &page[PAGE_HEADER..];
    let full = (limit / 8) as usize;
    let mut n: u64 = bits[..full.min(bits.len())].iter().map(|b| b.count_ones() as u64).sum();
    if !limit.is_multiple_of(8) && full < bits.len() {
        n += (bits[full] & ((1u8 << (limit % 8)) - 1)).count_ones() as u64;
    }
    n
}

/// Whether any bit at or past `limit` is set (invariant 1).
pub(crate) fn any_set_from(page: &[u8], limit: u64) -> bool {
    let bits = &page[PAGE_HEADER..];
    let total = (bits.len() * 8) as u64;
    (limit..total).any(|i| bits[(i / 8) as usize] & (1 << (i % 8)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_helpers() {
        let g = Geometry::new(4096);
        assert_eq!(g.section, (4096 - 32) * 8);
        assert_eq!(g.bitmap_page(0), 2);
        assert_eq!(g.bitmap_page(1), g.section);
        assert!(g.is_bitmap_page(2) && g.is_bitmap_page(g.section) && !g.is_bitmap_page(3));
        let mut p = vec![0u8; 4096];
        assert_eq!(first_set_bit(&p, g.section), None);
        let (b, m) = g.bit(77);
        p[b] |= m;
        assert_eq!(first_set_bit(&p, g.section), Some(77));
        assert_eq!(first_set_bit(&p, 77), None);
        assert_eq!(count_set_bits(&p, 78), 1);
        assert_eq!(count_set_bits(&p, 77), 0);
        assert!(any_set_from(&p, 77) && !any_set_from(&p, 78));
    }
}
