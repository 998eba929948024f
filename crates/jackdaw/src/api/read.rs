//! Read transactions over trees.

use super::catalog::{self, ROOT_ID};
use super::iter::{
    count_range, prefix_bounds, Cursor, KeyIter, KeyRange, Keys, Range, ReadCursor, ReadValues, SnapSource, Values,
};
use super::{Bytes, Tree, TreeStats};
use crate::data::file::META_PAGE;
use crate::ids::TxId;
use crate::tree::btree::{self, LeafCache};
use crate::tree::node::FLAG_OVERFLOW;
use crate::tree::{multi, overflow, Meta, TreeDesc, TreeKind};
use crate::txn::core::{Core, Memo};
use crate::txn::{PageRef, Snapshot};
use crate::{Error, Result};
use std::cell::RefCell;
use std::sync::Arc;

/// The descriptors resolved at one committed state, shared by the read transactions of that
/// state through the snapshot's memo (`txn::core::Readers::memo`): the first transaction at a
/// txid looks a tree up in the catalog, the next ones copy its descriptor (a point read in a
/// read transaction of its own skips the meta page and the catalog descent).
/// On cache lines of its own: every reading thread reads it, and an allocation beside it could
/// be one a thread writes at each transaction.
#[derive(Default, Clone)]
#[repr(align(128))]
struct SharedDescs {
    root: Option<TreeDesc>,
    trees: Vec<(u64, TreeDesc)>,
}

/// The memo of the state a commit made from the memo's state when the commit changed only the
/// descriptors in `changed` (no tree created, deleted or renamed, no raw page): the same
/// descriptors with those replaced, and the catalog's own descriptor `root` (its entries may
/// have moved); `old` itself when nothing changed (the catalog was not rewritten). `None` if
/// `old` is not a memo of this module's.
pub(crate) fn memo_after(old: &Memo, root: TreeDesc, changed: &[TreeDesc]) -> Option<Memo> {
    if changed.is_empty() {
        return Some(old.clone());
    }
    let old = old.clone().downcast::<SharedDescs>().ok()?;
    let mut next = (*old).clone();
    if next.root.is_some() {
        next.root = Some(root);
    }
    for (id, d) in next.trees.iter_mut() {
        if let Some(c) = changed.iter().find(|c| c.id == *id) {
            *d = *c;
        }
    }
    Some(Arc::new(next))
}

/// The descriptors this transaction may reuse: those it published, else its snapshot's memo.
fn shared<'a>(snap: &'a Snapshot, st: &'a ReadState) -> Option<&'a SharedDescs> {
    st.shared.as_deref().or_else(|| snap.memo().and_then(|m| m.downcast_ref::<SharedDescs>()))
}

struct ReadState {
    cache: LeafCache,
    root: Option<TreeDesc>,
    /// The descriptor of the tree of the last `desc` call (a run of operations on one tree, the
    /// common case, finds it here).
    last: Option<(u64, TreeDesc)>,
    /// The descriptors of the other trees this transaction used (few: a linear search; empty,
    /// so not allocated, while one tree is used). Kept out of line: a `ReadTxn` is moved on its
    /// way to the caller, and ~500 bytes of inline slots cost ~140 instructions of copying a
    /// transaction.
    others: Vec<(u64, TreeDesc)>,
    /// What this transaction resolved and published (see `SharedDescs`); until it publishes,
    /// what earlier transactions of its state did is read from the snapshot's memo in place
    /// (`shared`), not cloned: an `Arc` clone and drop per transaction are two atomic writes to
    /// a line every reading thread shares.
    shared: Option<Arc<SharedDescs>>,
    touched: u64,
}

impl ReadState {
    /// Make `(id, d)` the last descriptor used, keeping the one it replaces.
    fn remember(&mut self, id: u64, d: TreeDesc) {
        if let Some(prev) = self.last.replace((id, d)) {
            self.others.push(prev);
        }
    }
}

/// A read transaction: an owned snapshot (`Send`, `'static`) of the last committed state. It
/// sees exactly the transactions committed before it began, whatever the writer and the flusher
/// do meanwhile, and never blocks them.
pub struct ReadTxn {
    pub(crate) snap: Arc<Snapshot>,
    state: RefCell<ReadState>,
}

impl ReadTxn {
    /// `begin`, or `Closed` once the environment is closed.
    pub(crate) fn try_begin(core: &Arc<Core>) -> crate::Result<ReadTxn> {
        Ok(ReadTxn::from_snapshot(Snapshot::try_begin(core)?))
    }

    pub(crate) fn from_snapshot(snap: Arc<Snapshot>) -> ReadTxn {
        ReadTxn {
            snap,
            state: RefCell::new(ReadState {
                cache: LeafCache::new(8),
                root: None,
                last: None,
                others: Vec::new(),
                shared: None,
                touched: 0,
            }),
        }
    }

    /// The id of the last transaction this snapshot sees.
    pub fn txid(&self) -> TxId {
        self.snap.txid()
    }

    internals_pub! {
        /// The page high-water mark of the snapshot (feature `internals`).
        fn next_page(&self) -> u64 {
            self.snap.next_page().get()
        }
    }

    internals_pub! {
        /// Raw page access (feature `internals`): page `pgno` as of this snapshot.
        fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
            self.snap.page(crate::PageNo::new(pgno))
        }
    }

    /// Pages read by tree operations of this transaction so far (cache hits skip the descent).
    pub fn pages_touched(&self) -> u64 {
        self.state.borrow().touched
    }

    fn db_id(&self) -> u64 {
        self.snap.core().db_id()
    }

    fn root(&self) -> Result<TreeDesc> {
        let mut st = self.state.borrow_mut();
        if let Some(r) = st.root {
            return Ok(r);
        }
        if let Some(r) = shared(&self.snap, &st).and_then(|s| s.root) {
            st.root = Some(r);
            return Ok(r);
        }
        let r = Meta::decode(self.snap.page(crate::PageNo::new(META_PAGE))?)?.root;
        st.root = Some(r);
        Ok(r)
    }

    /// The descriptor of `tree` in this snapshot: the last one used without a call (a run of
    /// operations on one tree), else `desc_lookup`.
    #[inline]
    pub(crate) fn desc(&self, tree: &Tree) -> Result<TreeDesc> {
        if let Some((id, d)) = self.state.borrow().last {
            if id == tree.id {
                return Ok(d);
            }
        }
        self.desc_lookup(tree)
    }

    fn desc_lookup(&self, tree: &Tree) -> Result<TreeDesc> {
        {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            if let Some(i) = st.others.iter().position(|(id, _)| *id == tree.id) {
                let found = st.others[i];
                match st.last.replace(found) {
                    Some(prev) => st.others[i] = prev,
                    None => {
                        st.others.swap_remove(i);
                    }
                }
                return Ok(found.1);
            }
        }
        if tree.db_id != self.snap.core().db_id() {
            return Err(Error::Invalid("tree handle of another environment".into()));
        }
        let mut st = self.state.borrow_mut();
        if let Some(d) =
            shared(&self.snap, &st).and_then(|s| s.trees.iter().find(|(id, _)| *id == tree.id)).map(|(_, d)| *d)
        {
            st.remember(tree.id, d);
            return Ok(d);
        }
        drop(st);
        let root = self.root()?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let d = catalog::resolve(&*self.snap, &root, tree, self.snap.core().db_id(), &mut st.touched)?;
        st.remember(tree.id, d);
        // Share it with the transactions that begin at this state after this one.
        let mut next = shared(&self.snap, st).cloned().unwrap_or_default();
        if next.trees.len() < 64 {
            next.root = Some(root);
            next.trees.push((tree.id, d));
            let next = Arc::new(next);
            st.shared = Some(next.clone());
            self.snap.publish_memo(next);
        }
        Ok(d)
    }

    #[inline]
    fn plain(&self, tree: &Tree) -> Result<TreeDesc> {
        let d = self.desc(tree)?;
        if d.kind() != TreeKind::Plain {
            return Err(Error::WrongTreeKind(tree.name.to_string()));
        }
        Ok(d)
    }

    /// The tree named `name`, if it exists in this snapshot.
    pub fn open_tree(&self, name: &str) -> Result<Option<Tree>> {
        let root = self.root()?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let _ = ROOT_ID;
        Ok(catalog::lookup(&*self.snap, &root, name, &mut st.touched)?.map(|d| catalog::handle(name, &d, self.db_id())))
    }

    /// Names of all trees, in order.
    pub fn list_trees(&self) -> Result<Vec<String>> {
        Ok(catalog::list(&*self.snap, &self.root()?)?.into_iter().map(|(n, _)| n).collect())
    }

    /// Statistics of `tree`.
    pub fn tree_stats(&self, tree: &Tree) -> Result<TreeStats> {
        Ok(TreeStats::from(&self.desc(tree)?))
    }

    /// The value of `key`, if present (zero-copy for inline values and for overflow values that
    /// fit on one page).
    pub fn get(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let desc = self.plain(tree)?;
        let key = key.as_ref();
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let Some(f) = btree::get(&*self.snap, &desc, &mut st.cache, key, &mut st.touched)? else {
            return Ok(None);
        };
        let (flags, v) = f.value()?;
        if flags == FLAG_OVERFLOW {
            let r = overflow::decode_ref(v)?;
            return Ok(Some(super::iter::overflow_bytes(&SnapSource(self.snap.clone()), &r)?));
        }
        Ok(Some(Bytes::mapped(&self.snap, v)))
    }

    /// Copy the value of `key` into `out` (cleared first); false (and `out` empty) when absent.
    ///
    /// The cheapest way to copy values out: the bytes are copied once, straight from the
    /// snapshot's pages (overflow values page by page into `out`, with no intermediate buffer),
    /// and no handle is made, so reusing one `out` across calls allocates only when a value is
    /// larger than any before. Use [`get`](Self::get) to borrow inline values without a copy.
    pub fn get_into(&self, tree: &Tree, key: impl AsRef<[u8]>, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        let desc = self.plain(tree)?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let Some(f) = btree::get(&*self.snap, &desc, &mut st.cache, key.as_ref(), &mut st.touched)? else {
            return Ok(false);
        };
        let (flags, v) = f.value()?;
        if flags == FLAG_OVERFLOW {
            overflow::read_into(&*self.snap, &overflow::decode_ref(v)?, out)?;
        } else {
            out.extend_from_slice(v);
        }
        Ok(true)
    }

    /// A streaming reader over the value of `key` (no full copy in memory).
    pub fn get_reader(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<ValueReader>> {
        let desc = self.plain(tree)?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let Some(f) = btree::get(&*self.snap, &desc, &mut st.cache, key.as_ref(), &mut st.touched)? else {
            return Ok(None);
        };
        let (flags, v) = f.value()?;
        Ok(Some(if flags == FLAG_OVERFLOW {
            let r = overflow::decode_ref(v)?;
            let (left, next, tail) = (r.chain_len(), r.first, r.tail.to_vec());
            ValueReader { snap: self.snap.clone(), inline: Vec::new(), pos: 0, next, left, tail, buf: Vec::new() }
        } else {
            let (inline, tail) = (v.to_vec(), Vec::new());
            ValueReader { snap: self.snap.clone(), inline, pos: 0, next: 0, left: 0, tail, buf: Vec::new() }
        }))
    }

    fn multi(&self, tree: &Tree) -> Result<TreeDesc> {
        let d = self.desc(tree)?;
        if d.kind() != TreeKind::Multi {
            return Err(Error::WrongTreeKind(tree.name.to_string()));
        }
        Ok(d)
    }

    /// Number of values of `key` in a multi-value tree, in O(1).
    pub fn multi_count(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<u64> {
        let desc = self.multi(tree)?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        multi::count(&*self.snap, &desc, &mut st.cache, key.as_ref(), &mut st.touched)
    }

    /// The values of `key` in a multi-value tree, in order (double-ended, seekable).
    pub fn multi_get(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<ReadValues> {
        let desc = self.multi(tree)?;
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let src = SnapSource(self.snap.clone());
        let Some(f) = btree::get(&*self.snap, &desc, &mut st.cache, key.as_ref(), &mut st.touched)? else {
            return Ok(Values::empty());
        };
        let (flags, v) = f.value()?;
        Values::from_stored(&src, crate::data::page::page_no(f.page), flags, v)
    }

    /// Entries with keys in `range`, in order (double-ended); one item per value in a
    /// multi-value tree, in (key, value) order.
    pub fn range<K: ?Sized, R: KeyRange<K>>(&self, tree: &Tree, range: R) -> Result<Range> {
        let desc = self.desc(tree)?;
        let (lo, hi) = range.key_bounds();
        Ok(Range::new(SnapSource(self.snap.clone()), desc, lo, hi))
    }

    /// The distinct keys in `range`, in order (double-ended): one item per key, also in a
    /// multi-value tree (read its values with [`multi_get`](Self::multi_get)); each key once in a
    /// plain tree.
    pub fn keys<K: ?Sized, R: KeyRange<K>>(&self, tree: &Tree, range: R) -> Result<Keys> {
        let desc = self.desc(tree)?;
        let (lo, hi) = range.key_bounds();
        Ok(KeyIter::new(SnapSource(self.snap.clone()), desc, lo, hi))
    }

    /// The number of values of the keys in `range` in a multi-value tree (the sum of their
    /// [`multi_count`](Self::multi_count)s, one O(1) count per distinct key; O(1) for `..`); in a
    /// plain tree, the number of entries in `range`.
    pub fn multi_count_range<K: ?Sized, R: KeyRange<K>>(&self, tree: &Tree, range: R) -> Result<u64> {
        let desc = self.desc(tree)?;
        let (lo, hi) = range.key_bounds();
        count_range(SnapSource(self.snap.clone()), desc, lo, hi)
    }

    /// Entries whose keys start with `prefix`, in order (double-ended).
    pub fn prefix(&self, tree: &Tree, prefix: impl AsRef<[u8]>) -> Result<Range> {
        let desc = self.desc(tree)?;
        let (lo, hi) = prefix_bounds(prefix.as_ref());
        Ok(Range::new(SnapSource(self.snap.clone()), desc, lo, hi))
    }

    /// A cursor over a plain tree. A multi-value tree is refused with [`Error::WrongTreeKind`]:
    /// walk its distinct keys with [`keys`](Self::keys) and read each key's values with
    /// [`multi_get`](Self::multi_get) (or all pairs with [`range`](Self::range)).
    pub fn cursor(&self, tree: &Tree) -> Result<ReadCursor> {
        Ok(Cursor::new(SnapSource(self.snap.clone()), self.plain(tree)?))
    }
}

/// Streams a value out of a snapshot, one overflow page at a time.
pub struct ValueReader {
    snap: Arc<Snapshot>,
    inline: Vec<u8>,
    pos: usize,
    next: u64,
    /// Bytes of the chain not yet read.
    left: u64,
    /// The value's tail (`overflow::Ref`), read after the chain.
    tail: Vec<u8>,
    buf: Vec<u8>,
}

impl ValueReader {
    /// Bytes not yet read.
    pub fn remaining(&self) -> u64 {
        (self.inline.len() - self.pos) as u64 + self.left + self.tail.len() as u64
    }
}

impl std::io::Read for ValueReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos < self.inline.len() {
            let n = out.len().min(self.inline.len() - self.pos);
            out[..n].copy_from_slice(&self.inline[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        if self.left == 0 {
            if self.tail.is_empty() {
                return Ok(0);
            }
            self.inline = std::mem::take(&mut self.tail);
            self.pos = 0;
            return self.read(out);
        }
        if self.next == 0 {
            return Err(std::io::Error::other(Error::corrupted(None, "overflow chain ends early")));
        }
        let page = self.snap.page(crate::PageNo::new(self.next)).map_err(std::io::Error::other)?;
        let (next, len) = overflow::link(page, self.next).map_err(std::io::Error::other)?;
        if len as u64 > self.left || len == 0 {
            return Err(std::io::Error::other(Error::corrupted(
                Some(self.next),
                "overflow chain longer than its value",
            )));
        }
        self.buf.clear();
        self.buf.extend_from_slice(&page[overflow::DATA_AT..overflow::DATA_AT + len]);
        std::mem::swap(&mut self.inline, &mut self.buf);
        self.pos = 0;
        self.left -= len as u64;
        self.next = next;
        self.read(out)
    }
}
