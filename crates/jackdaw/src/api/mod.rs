//! The public API over trees: tree handles, read and write transactions, iterators, returned
//! bytes.

pub(crate) mod catalog;
pub(crate) mod iter;
pub(crate) mod read;
pub(crate) mod write;

pub use iter::{
    Cursor, Iter, KeyIter, KeyRange, Keys, Range, ReadCursor, ReadValues, SnapSource, Source, TxSource, Values,
    WriteCursor, WriteKeys, WriteRange, WriteValues,
};
pub use read::{ReadTxn, ValueReader};
pub use write::WriteTxn;

use crate::storage::sys::Held;
use crate::tree::node::max_key_size;
use crate::tree::overflow::MAX_VALUE_SIZE;
use crate::txn::Snapshot;
use crate::{Error, Result};
use std::sync::Arc;

/// A handle to a named tree, bound to the tree's identity (not its name): it survives renames,
/// works in any later transaction of the same `Env` while the tree exists, and reads the tree
/// in snapshots taken before a delete. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Tree {
    pub(crate) id: u64,
    pub(crate) db_id: u64,
    pub(crate) name: Arc<str>,
    pub(crate) multi: bool,
}

impl Tree {
    /// The name the tree had when this handle was made.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether this is a multi-value tree.
    pub fn is_multi(&self) -> bool {
        self.multi
    }
}

/// Statistics of one tree, from its descriptor (kept up to date, not recomputed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeStats {
    /// Entries (in a multi-value tree: values).
    pub entries: u64,
    /// Levels from the root to the leaves (0 for an empty tree).
    pub depth: u32,
    /// Branch pages.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Pages of values stored outside the leaves.
    pub overflow_pages: u64,
}

impl From<&crate::tree::TreeDesc> for TreeStats {
    fn from(d: &crate::tree::TreeDesc) -> TreeStats {
        TreeStats {
            entries: d.entries,
            depth: d.depth,
            branch_pages: d.branch_pages,
            leaf_pages: d.leaf_pages,
            overflow_pages: d.overflow_pages,
        }
    }
}

/// Bytes returned by the engine: a key or a value. Zero-copy from the snapshot where possible
/// (inline values, and overflow values that fit on one page, in mapped or in-memory pages);
/// owned for longer overflow values and for reads inside a write transaction. Holds what it
/// points into alive, so it can outlive the transaction.
///
/// A `Bytes` read from a [`ReadTxn`] keeps that transaction's snapshot open until it is dropped,
/// as the transaction itself would: the page versions the snapshot sees stay in memory (they
/// count against `max_pinned_bytes`), `Stats::readers` lists it, and `Env::close` reports the
/// database still locked. To keep a value for long (a cache, a map), copy it out
/// (`to_vec()`, `ReadTxn::get_into`).
#[derive(Clone)]
pub struct Bytes(Repr);

#[derive(Clone)]
enum Repr {
    /// Bytes of a snapshot's pages, read in place: the data file's map, or a page-table version
    /// the snapshot's era keeps (`storage::sys::Held`).
    Mapped(Held<Snapshot>),
    Owned(Vec<u8>),
}

impl Bytes {
    pub(crate) fn owned(v: Vec<u8>) -> Bytes {
        Bytes(Repr::Owned(v))
    }
    /// `bytes` of one of `snap`'s pages (as `page` returned them), held with the snapshot.
    #[inline]
    pub(crate) fn mapped(snap: &Arc<Snapshot>, bytes: &[u8]) -> Bytes {
        Bytes(Repr::Mapped(Held::new(snap, bytes)))
    }
    /// The bytes `start..start + len` of these (clamped to them): held with the same snapshot,
    /// or copied when owned.
    pub(crate) fn sub(&self, start: usize, len: usize) -> Bytes {
        let all = self.as_ref();
        let part = all.get(start..).map_or(&[][..], |t| &t[..len.min(t.len())]);
        match &self.0 {
            // Inside the snapshot's pages, as `self` is.
            Repr::Mapped(h) => Bytes(Repr::Mapped(Held::new(h.owner(), part))),
            Repr::Owned(_) => Bytes::owned(part.to_vec()),
        }
    }
    /// Copy out.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_ref().to_vec()
    }
}

impl AsRef<[u8]> for Bytes {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        match &self.0 {
            Repr::Mapped(h) => h.bytes(),
            Repr::Owned(v) => v,
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.as_ref();
        match std::str::from_utf8(b) {
            Ok(s) if s.len() <= 64 => write!(f, "{s:?}"),
            _ => write!(f, "<{} bytes>", b.len()),
        }
    }
}

impl PartialEq<[u8]> for Bytes {
    fn eq(&self, o: &[u8]) -> bool {
        self.as_ref() == o
    }
}
impl PartialEq<&[u8]> for Bytes {
    fn eq(&self, o: &&[u8]) -> bool {
        self.as_ref() == *o
    }
}
impl<const N: usize> PartialEq<&[u8; N]> for Bytes {
    fn eq(&self, o: &&[u8; N]) -> bool {
        self.as_ref() == o.as_slice()
    }
}

pub(crate) fn check_key(key: &[u8], page_size: usize) -> Result<()> {
    let max = max_key_size(page_size);
    if key.len() > max {
        return Err(Error::KeyTooLarge { len: key.len(), max, limit: crate::error::Limit::Key });
    }
    Ok(())
}

pub(crate) fn check_value_len(len: u64) -> Result<()> {
    if len > MAX_VALUE_SIZE {
        return Err(Error::ValueTooLarge { len, max: MAX_VALUE_SIZE, limit: crate::error::Limit::Value });
    }
    Ok(())
}

/// Whether a value of `vlen` bytes stays inline beside `key`.
pub(crate) fn inline(key: &[u8], vlen: u64, page_size: usize) -> bool {
    crate::tree::node::leaf_entry_size(key, 0) as u64 + vlen <= crate::tree::node::max_entry(page_size) as u64
}

/// The layout of `tree` as of the snapshot `r` (feature `internals`: `jackdaw stat --trees` and
/// `jackdaw tree`).
#[cfg(feature = "internals")]
pub fn tree_layout(r: &ReadTxn, tree: &Tree) -> crate::Result<crate::tree::layout::TreeLayout> {
    let d = r.desc(tree)?;
    crate::tree::layout::layout(&*r.snap, &d, r.snap.core().page_size())
}
