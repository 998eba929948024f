//! B+trees over slotted pages: search, insert with splits, delete with merges, overflow values,
//! cursors, and the structural check. Generic over how pages are read and written, so the same
//! code serves read snapshots and the write transaction.

pub(crate) mod btree;
pub(crate) mod check;
pub(crate) mod cursor;
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub(crate) mod layout;
pub(crate) mod multi;
pub(crate) mod node;
pub(crate) mod overflow;

use crate::data::page::{PageKind, PAGE_HEADER};
use crate::txn::{PageRef, PageTxn, Snapshot};
use crate::{Error, Result};

/// Read access to pages.
pub(crate) trait PageRead {
    fn page(&self, pgno: u64) -> Result<PageRef<'_>>;
    /// `page`, with every cache line of the page starting to load (a leaf about to be searched
    /// or copied: its misses overlap instead of following one another). A page-table version is
    /// hinted as soon as it is found (`PageTable::lookup_in`).
    #[inline]
    fn page_whole(&self, pgno: u64) -> Result<PageRef<'_>> {
        let p = self.page(pgno)?;
        crate::data::page::prefetch_all(p);
        Ok(p)
    }
    fn page_size(&self) -> usize;
    /// Pages `[first, first + count)` read in one go, when this reader can (`Snapshot::read_run`):
    /// each page's first `head` bytes to `laid_out` (with the page's index in the run), the rest
    /// (`tail` of the last) appended to `out`, with room for `extra` bytes more reserved (what
    /// the caller appends next). `false`, `out` unchanged, when the reader cannot or `laid_out`
    /// refuses a head: the caller then reads page by page.
    fn read_run(
        &self,
        _pages: (u64, usize),
        _split: (usize, usize, usize),
        _out: &mut Vec<u8>,
        _laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        Ok(false)
    }
}

/// Write access to pages (the write transaction).
pub(crate) trait PageWrite: PageRead {
    fn page_mut(&mut self, pgno: u64) -> Result<&mut [u8]>;
    /// Change page `pgno` through `f`, which returns the byte ranges it wrote (a superset of the
    /// bytes it changed), so that commit diffs only those (`PageTxn::modify`), and its own result.
    fn modify<R>(&mut self, pgno: u64, f: impl FnOnce(&mut [u8]) -> Result<(node::Written, R)>) -> Result<R>;
    fn alloc(&mut self, kind: PageKind) -> Result<u64>;
    /// Allocate a page whose bytes past the header are `parts`, one after the other, then zeros
    /// (`PageTxn::alloc_page_with`).
    fn alloc_with(&mut self, kind: PageKind, parts: &[&[u8]]) -> Result<u64>;
    fn free(&mut self, pgno: u64) -> Result<()>;
    fn reserve(&mut self) -> Result<u64>;
    /// Let the next `pages` reservations take free pages where writing them in place is safe
    /// (`PageTxn::claim_free`); `release_claims` gives back the ones no reservation took.
    fn claim_free(&mut self, pages: u64) -> Result<()>;
    fn release_claims(&mut self) -> Result<()>;
    /// Seal and write the reserved consecutive pages in `bufs` (from `first` on) to the data
    /// file now (`PageTxn::write_once_run`).
    fn write_once_run(&mut self, first: u64, bufs: &mut [u8]) -> Result<()>;
    /// Whether a value of `pages` overflow pages is written straight to the data file as it is
    /// put (`overflow::write_direct`): at least `write_once_min_pages` (never when that is 0),
    /// so a commit that holds it would write its pages once anyway.
    fn writes_once(&self, pages: u64) -> bool;
}

impl PageRead for Snapshot {
    #[inline]
    fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
        Snapshot::page(self, crate::PageNo::new(pgno))
    }
    #[inline]
    fn page_whole(&self, pgno: u64) -> Result<PageRef<'_>> {
        Snapshot::page_whole(self, crate::PageNo::new(pgno))
    }
    fn page_size(&self) -> usize {
        self.core().page_size()
    }
    fn read_run(
        &self,
        pages: (u64, usize),
        split: (usize, usize, usize),
        out: &mut Vec<u8>,
        laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        Snapshot::read_run(self, (crate::PageNo::new(pages.0), pages.1), split, out, laid_out)
    }
}

impl PageRead for PageTxn {
    #[inline]
    fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
        PageTxn::page(self, pgno)
    }
    #[inline]
    fn page_whole(&self, pgno: u64) -> Result<PageRef<'_>> {
        PageTxn::page_whole(self, pgno)
    }
    fn page_size(&self) -> usize {
        PageTxn::page_size(self)
    }
}

impl PageWrite for PageTxn {
    fn page_mut(&mut self, pgno: u64) -> Result<&mut [u8]> {
        PageTxn::page_mut(self, pgno)
    }
    fn modify<R>(&mut self, pgno: u64, f: impl FnOnce(&mut [u8]) -> Result<(node::Written, R)>) -> Result<R> {
        PageTxn::modify(self, pgno, f)
    }
    fn alloc(&mut self, kind: PageKind) -> Result<u64> {
        self.alloc_page(kind)
    }
    fn alloc_with(&mut self, kind: PageKind, parts: &[&[u8]]) -> Result<u64> {
        self.alloc_page_with(kind, parts)
    }
    fn free(&mut self, pgno: u64) -> Result<()> {
        self.free_page(pgno)
    }
    fn reserve(&mut self) -> Result<u64> {
        self.reserve_page()
    }
    fn claim_free(&mut self, pages: u64) -> Result<()> {
        PageTxn::claim_free(self, pages)
    }
    fn release_claims(&mut self) -> Result<()> {
        PageTxn::release_claims(self)
    }
    fn write_once_run(&mut self, first: u64, bufs: &mut [u8]) -> Result<()> {
        PageTxn::write_once_run(self, first, bufs)
    }
    fn writes_once(&self, pages: u64) -> bool {
        PageTxn::writes_once(self, pages)
    }
}

/// Kind of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TreeKind {
    Plain = 0,
    Multi = 1,
}

/// A tree's descriptor: where its root is and what it holds. Kept up to date by every change.
///
/// ```text
/// offset size field
///      0    8 id              unique, never reused (0 is the root tree)
///      8    8 root            root page, 0 when empty
///     16    8 entries
///     24    4 depth           0 when empty, 1 when the root is a leaf
///     28    4 kind            0 plain, 1 multi-value
///     32    8 branch_pages
///     40    8 leaf_pages
///     48    8 overflow_pages
///     56    8 reserved
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TreeDesc {
    pub id: u64,
    pub root: u64,
    pub entries: u64,
    pub depth: u32,
    pub kind: u32,
    pub branch_pages: u64,
    pub leaf_pages: u64,
    pub overflow_pages: u64,
}

pub(crate) const DESC_LEN: usize = 64;

impl TreeDesc {
    /// A page was added to the tree: a leaf, or a branch.
    #[inline]
    pub(crate) fn count_new_page(&mut self, leaf: bool) {
        if leaf {
            self.leaf_pages += 1;
        } else {
            self.branch_pages += 1;
        }
    }

    pub(crate) fn encode(&self) -> [u8; DESC_LEN] {
        let mut b = [0u8; DESC_LEN];
        b[0..8].copy_from_slice(&self.id.to_le_bytes());
        b[8..16].copy_from_slice(&self.root.to_le_bytes());
        b[16..24].copy_from_slice(&self.entries.to_le_bytes());
        b[24..28].copy_from_slice(&self.depth.to_le_bytes());
        b[28..32].copy_from_slice(&self.kind.to_le_bytes());
        b[32..40].copy_from_slice(&self.branch_pages.to_le_bytes());
        b[40..48].copy_from_slice(&self.leaf_pages.to_le_bytes());
        b[48..56].copy_from_slice(&self.overflow_pages.to_le_bytes());
        b
    }
    pub(crate) fn decode(b: &[u8]) -> Result<TreeDesc> {
        if b.len() != DESC_LEN {
            return Err(Error::corrupted(None, format!("tree descriptor of {} bytes", b.len())));
        }
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8"));
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        let d = TreeDesc {
            id: u64_at(0),
            root: u64_at(8),
            entries: u64_at(16),
            depth: u32_at(24),
            kind: u32_at(28),
            branch_pages: u64_at(32),
            leaf_pages: u64_at(40),
            overflow_pages: u64_at(48),
        };
        if d.depth > 64 || (d.root == 0) != (d.depth == 0) || d.kind > 1 {
            return Err(Error::corrupted(None, format!("tree descriptor is inconsistent: {d:?}")));
        }
        Ok(d)
    }
    pub(crate) fn kind(&self) -> TreeKind {
        if self.kind == 1 {
            TreeKind::Multi
        } else {
            TreeKind::Plain
        }
    }
}

/// The meta page (page 3) body: the root tree's descriptor and the next tree id.
///
/// ```text
/// offset size field
///     32    8 magic        "JKDWTREE" (all zero in a database no tree was ever created in)
///     40    8 next_tree_id
///     48   64 root tree descriptor
/// ```
pub(crate) struct Meta {
    pub next_tree_id: u64,
    pub root: TreeDesc,
}

const META_MAGIC: &[u8; 8] = b"JKDWTREE";
const META_AT: usize = PAGE_HEADER;

impl Meta {
    pub(crate) fn decode(p: &[u8]) -> Result<Meta> {
        let b = &p[META_AT..META_AT + 16 + DESC_LEN];
        if b[..8] == [0u8; 8] {
            return Ok(Meta { next_tree_id: 1, root: TreeDesc::default() });
        }
        if &b[..8] != META_MAGIC {
            return Err(Error::corrupted(Some(crate::data::file::META_PAGE), "meta page magic"));
        }
        let next_tree_id = u64::from_le_bytes(b[8..16].try_into().expect("8"));
        Ok(Meta { next_tree_id, root: TreeDesc::decode(&b[16..16 + DESC_LEN])? })
    }
    pub(crate) fn encode(&self, p: &mut [u8]) {
        let b = &mut p[META_AT..META_AT + 16 + DESC_LEN];
        b[..8].copy_from_slice(META_MAGIC);
        b[8..16].copy_from_slice(&self.next_tree_id.to_le_bytes());
        b[16..].copy_from_slice(&self.root.encode());
    }
}
