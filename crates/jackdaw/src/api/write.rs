//! The write transaction over trees.

use super::catalog::{self, ROOT_ID};
use super::iter::{
    count_range, prefix_bounds, Cursor, KeyRange, TxSource, Values, WriteCursor, WriteKeys, WriteRange, WriteValues,
};
use super::{check_key, check_value_len, inline, Bytes, Tree, TreeStats};
use crate::data::file::META_PAGE;
use crate::data::page::PageKind;
use crate::error::Limit;
use crate::ids::TxId;
use crate::options::Durability;
use crate::stats::CommitStats;
use crate::tree::btree::{self, LeafCache};
use crate::tree::node::{FLAG_INLINE, FLAG_OVERFLOW};
use crate::tree::{multi, overflow, Meta, TreeDesc, TreeKind, DESC_LEN};
use crate::txn::core::Core;
use crate::txn::page_table::PgnoMap;
use crate::txn::write::Prepared;
use crate::txn::{PageRef, PageTxn};
use crate::{Error, Result};
use std::cell::{Cell, RefCell};
use std::io::Read;
use std::sync::Arc;

/// Keys of multi-value trees must leave room for a nested tree's descriptor beside them (the
/// same limit as tree names: 1,953 bytes at 4 KiB pages).
pub(crate) fn check_multi_key(key: &[u8], page_size: usize) -> Result<()> {
    let max = catalog::max_tree_name(page_size);
    if key.len() > max {
        return Err(Error::KeyTooLarge { len: key.len(), max, limit: Limit::MultiKey });
    }
    Ok(())
}

struct TreeState {
    name: String,
    desc: TreeDesc,
    dirty: bool,
}

/// The single write transaction. Dropping it without `commit` aborts it.
pub struct WriteTxn {
    raw: PageTxn,
    db_id: u64,
    root: TreeDesc,
    next_tree_id: u64,
    meta_dirty: bool,
    /// Pages were changed through the raw page calls (tools, tests): any page may differ, the
    /// catalog's included, so the readers' memo is not handed on (`prepare`).
    raw_pages: bool,
    /// Descriptors of the trees this transaction has used (read or changed), and the leaf cache
    /// and page counter of tree operations: in cells, so that reads take `&self` (a cursor can be
    /// open while another lookup is made). `WriteTxn` is not `Sync`, and no borrow of them
    /// outlives the call that takes it.
    trees: RefCell<PgnoMap<TreeState>>,
    cache: RefCell<LeafCache>,
    touched: Cell<u64>,
    core: Arc<Core>,
    /// Set when an operation failed after it began changing pages: the transaction's state is
    /// then unknown, so it can only be aborted.
    broken: Option<Error>,
}

impl WriteTxn {
    pub(crate) fn begin(core: &Arc<Core>, wait: bool) -> Result<WriteTxn> {
        let raw = PageTxn::begin(core, wait)?;
        let meta = Meta::decode(raw.page(META_PAGE)?)?;
        let next_tree_id = meta.next_tree_id.max(core.tree_ids());
        Ok(WriteTxn {
            raw,
            db_id: core.db_id(),
            root: meta.root,
            next_tree_id,
            meta_dirty: false,
            raw_pages: false,
            trees: RefCell::new(PgnoMap::default()),
            cache: RefCell::new(LeafCache::filling_first(2)),
            touched: Cell::new(0),
            core: core.clone(),
            broken: None,
        })
    }

    /// Run a change to pages: refused once the transaction is broken, and breaks it on failure.
    fn change<T>(&mut self, f: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        if let Some(e) = &self.broken {
            return Err(Error::Invalid(format!(
                "an earlier operation of this transaction failed ({e}); it can only be aborted"
            )));
        }
        let r = f(self);
        if let Err(e) = &r {
            self.broken = Some(e.clone());
        }
        r
    }

    /// The id this transaction will have when it commits.
    pub fn txid(&self) -> TxId {
        self.raw.txid()
    }

    /// Override the environment's durability for this commit.
    pub fn set_durability(&mut self, d: Durability) {
        self.raw.set_durability(d);
    }

    /// Pages read or written by tree operations of this transaction so far.
    pub fn pages_touched(&self) -> u64 {
        self.touched.get()
    }

    // ----- raw pages (tools and tests of the storage layer) -----

    internals_pub! {
        /// Raw page access (feature `internals`): page `pgno` as this transaction sees it.
        fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
            self.raw.page(pgno)
        }
    }
    internals_pub! {
        /// Raw page access (feature `internals`): a writable copy of page `pgno` (bytes from 32
        /// on are the caller's).
        fn page_mut(&mut self, pgno: u64) -> Result<&mut [u8]> {
            self.raw_pages = true;
            self.raw.page_mut(pgno)
        }
    }
    internals_pub! {
        /// Raw page access (feature `internals`): allocate a page. Pages allocated this way are
        /// not part of any tree: verify such a database with `Env::check_with`.
        fn alloc_page(&mut self, kind: PageKind) -> Result<u64> {
            self.raw_pages = true;
            self.raw.alloc_page(kind)
        }
    }
    internals_pub! {
        /// Raw page access (feature `internals`): the page high-water mark as this transaction
        /// leaves it.
        fn next_page(&self) -> u64 {
            self.raw.next_page()
        }
    }
    internals_pub! {
        /// Raw page access (feature `internals`): free a page.
        fn free_page(&mut self, pgno: u64) -> Result<()> {
            self.raw_pages = true;
            self.raw.free_page(pgno)
        }
    }

    // ----- trees -----

    /// The descriptor of `tree` as this transaction sees it (resolved once, then remembered).
    fn lookup_desc(&self, tree: &Tree) -> Result<TreeDesc> {
        if tree.db_id != self.db_id {
            return Err(Error::Invalid(format!("tree handle {} belongs to another environment", tree.name)));
        }
        if let Some(st) = self.trees.borrow().get(&tree.id) {
            return Ok(st.desc);
        }
        let mut touched = self.touched.get();
        let r = catalog::resolve_named(&self.raw, &self.root, tree, self.db_id, &mut touched);
        self.touched.set(touched);
        let (name, desc) = r?;
        let name = name.into_owned();
        self.trees.borrow_mut().insert(tree.id, TreeState { name, desc, dirty: false });
        Ok(desc)
    }

    /// The remembered state of `tree`, for a change to it.
    fn state(&mut self, tree: &Tree) -> Result<&mut TreeState> {
        self.lookup_desc(tree)?;
        self.trees.get_mut().get_mut(&tree.id).ok_or_else(|| Error::Invalid("internal: tree state missing".into()))
    }

    fn desc(&self, tree: &Tree, kind: TreeKind) -> Result<TreeDesc> {
        let desc = self.lookup_desc(tree)?;
        if desc.kind() != kind {
            let name = self.trees.borrow().get(&tree.id).map_or_else(|| tree.name.to_string(), |s| s.name.clone());
            return Err(Error::WrongTreeKind(name));
        }
        Ok(desc)
    }

    /// Run a read with the leaf cache and the page counter.
    fn with_cache<T>(&self, f: impl FnOnce(&mut LeafCache, &mut u64) -> Result<T>) -> Result<T> {
        let mut touched = self.touched.get();
        let r = f(&mut self.cache.borrow_mut(), &mut touched);
        self.touched.set(touched);
        r
    }

    /// Create the plain tree `name`, or open it if it exists.
    pub fn create_tree(&mut self, name: &str) -> Result<Tree> {
        self.create(name, TreeKind::Plain)
    }

    pub(crate) fn create(&mut self, name: &str, kind: TreeKind) -> Result<Tree> {
        catalog::check_name(name, self.raw.page_size())?;
        if let Some(t) = self.open_tree(name)? {
            if t.multi != (kind == TreeKind::Multi) {
                return Err(Error::WrongTreeKind(name.to_string()));
            }
            return Ok(t);
        }
        let desc = TreeDesc { id: self.next_tree_id, kind: kind as u32, ..TreeDesc::default() };
        self.next_tree_id += 1;
        self.core.note_tree_ids(self.next_tree_id);
        self.meta_dirty = true;
        self.change(|t| {
            btree::put(
                &mut t.raw,
                &mut t.root,
                t.cache.get_mut(),
                name.as_bytes(),
                FLAG_INLINE,
                &desc.encode(),
                t.touched.get_mut(),
            )
        })?;
        self.trees.get_mut().insert(desc.id, TreeState { name: name.to_string(), desc, dirty: false });
        Ok(catalog::handle(name, &desc, self.db_id))
    }

    /// The tree named `name`, if it exists.
    pub fn open_tree(&self, name: &str) -> Result<Option<Tree>> {
        let found = self.with_cache(|_, touched| catalog::lookup(&self.raw, &self.root, name, touched))?;
        Ok(found.map(|d| {
            let d = self.trees.borrow().get(&d.id).map_or(d, |s| s.desc);
            catalog::handle(name, &d, self.db_id)
        }))
    }

    /// Delete the tree `name` and free all its pages. Returns false if there was none.
    pub fn delete_tree(&mut self, name: &str) -> Result<bool> {
        let Some(t) = self.open_tree(name)? else {
            return Ok(false);
        };
        let desc = self.state(&t)?.desc;
        self.change(|t| {
            btree::free_all(&mut t.raw, &desc)?;
            btree::delete(&mut t.raw, &mut t.root, t.cache.get_mut(), name.as_bytes(), t.touched.get_mut())
        })?;
        self.trees.get_mut().remove(&desc.id);
        self.cache.get_mut().clear_tree(desc.id);
        self.meta_dirty = true;
        Ok(true)
    }

    /// Rename a tree; handles keep working. Fails with `NoSuchTree` or `TreeExists`.
    ///
    /// A handle opened under the old name finds the tree by its identity: each transaction's
    /// first use of it scans the catalog of trees (with 5,000 trees, ~0.5 ms). Open the tree
    /// again under its new name where that matters.
    pub fn rename_tree(&mut self, old: &str, new: &str) -> Result<()> {
        catalog::check_name(new, self.raw.page_size())?;
        let t = self.open_tree(old)?.ok_or_else(|| Error::NoSuchTree(old.to_string()))?;
        if old == new {
            return Ok(());
        }
        if self.open_tree(new)?.is_some() {
            return Err(Error::TreeExists(new.to_string()));
        }
        let desc = self.state(&t)?.desc;
        self.change(|t| {
            btree::delete(&mut t.raw, &mut t.root, t.cache.get_mut(), old.as_bytes(), t.touched.get_mut())?;
            btree::put(
                &mut t.raw,
                &mut t.root,
                t.cache.get_mut(),
                new.as_bytes(),
                FLAG_INLINE,
                &desc.encode(),
                t.touched.get_mut(),
            )
        })?;
        self.state(&t)?.name = new.to_string();
        self.meta_dirty = true;
        Ok(())
    }

    /// Names of all trees, in order.
    pub fn list_trees(&self) -> Result<Vec<String>> {
        Ok(catalog::list(&self.raw, &self.root)?.into_iter().map(|(n, _)| n).collect())
    }

    /// Statistics of `tree`, as this transaction leaves it.
    pub fn tree_stats(&self, tree: &Tree) -> Result<TreeStats> {
        Ok(TreeStats::from(&self.lookup_desc(tree)?))
    }

    /// Insert or replace `key`.
    pub fn put(&mut self, tree: &Tree, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let ps = self.raw.page_size();
        check_key(key, ps)?;
        check_value_len(value.len() as u64)?;
        let mut desc = self.desc(tree, TreeKind::Plain)?;
        self.change(|t| {
            if inline(key, value.len() as u64, ps) {
                btree::put(&mut t.raw, &mut desc, t.cache.get_mut(), key, FLAG_INLINE, value, t.touched.get_mut())?;
            } else {
                let (chain, tail) = value.split_at(value.len() - overflow::tail_len(key, value.len() as u64, ps));
                let (first, n) = overflow::write(&mut t.raw, chain)?;
                desc.overflow_pages += n;
                let r = overflow::encode_ref(value.len() as u64, first, tail);
                btree::put(&mut t.raw, &mut desc, t.cache.get_mut(), key, FLAG_OVERFLOW, &r, t.touched.get_mut())?;
            }
            Ok(())
        })?;
        self.store(tree, desc);
        Ok(())
    }

    /// Insert or replace `key` with `len` bytes read from `reader`, streamed straight to overflow
    /// pages in the data file (never a full copy in memory).
    pub fn put_reader(&mut self, tree: &Tree, key: impl AsRef<[u8]>, len: u64, mut reader: impl Read) -> Result<()> {
        let key = key.as_ref();
        let ps = self.raw.page_size();
        check_key(key, ps)?;
        check_value_len(len)?;
        if inline(key, len, ps) {
            let mut v = vec![0u8; len as usize];
            reader.read_exact(&mut v).map_err(|e| Error::io("read value from caller's reader", e))?;
            return self.put(tree, key, v);
        }
        let mut desc = self.desc(tree, TreeKind::Plain)?;
        let tail_len = overflow::tail_len(key, len, ps);
        // A large value the free pages take (`PageTxn::writes_once`) is read whole and put as
        // any other: it is no larger than half the dirty-page bound.
        if self.raw.takes_free_pages(overflow::pages_for(len - tail_len as u64, ps)) {
            let mut v = vec![0u8; len as usize];
            reader.read_exact(&mut v).map_err(|e| Error::io("read value from caller's reader", e))?;
            return self.put(tree, key, v);
        }
        self.change(|t| {
            let (first, n) = overflow::write_stream(&mut t.raw, len - tail_len as u64, &mut reader)?;
            let mut tail = vec![0u8; tail_len];
            reader.read_exact(&mut tail).map_err(|e| Error::io("read value from caller's reader", e))?;
            desc.overflow_pages += n;
            let r = overflow::encode_ref(len, first, &tail);
            btree::put(&mut t.raw, &mut desc, t.cache.get_mut(), key, FLAG_OVERFLOW, &r, t.touched.get_mut())
        })?;
        self.store(tree, desc);
        Ok(())
    }

    /// Remember `tree`'s descriptor after a change. The catalog is rewritten at commit only for
    /// trees whose descriptor changed: an overwrite of a value by one as long (a YCSB update)
    /// changes none, and its commit then journals the leaf alone (before, the catalog leaf too:
    /// a second `btree::put` and diff a commit).
    fn store(&mut self, tree: &Tree, desc: TreeDesc) {
        if let Some(st) = self.trees.get_mut().get_mut(&tree.id) {
            if st.desc != desc {
                st.desc = desc;
                st.dirty = true;
            }
        }
    }

    /// Delete `key`; true if it was present.
    pub fn delete(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<bool> {
        let mut desc = self.desc(tree, TreeKind::Plain)?;
        let found = self
            .change(|t| btree::delete(&mut t.raw, &mut desc, t.cache.get_mut(), key.as_ref(), t.touched.get_mut()))?;
        if found {
            self.store(tree, desc);
        }
        Ok(found)
    }

    /// The value of `key` as this transaction sees it (a copy).
    pub fn get(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let desc = self.desc(tree, TreeKind::Plain)?;
        let found = self.with_cache(|cache, touched| {
            let Some(f) = btree::get(&self.raw, &desc, cache, key.as_ref(), touched)? else {
                return Ok(None);
            };
            let (flags, v) = f.value()?;
            // The reference is copied out of the leaf (the cache's borrow ends here).
            Ok(Some((flags, v.to_vec())))
        })?;
        match found {
            None => Ok(None),
            Some((FLAG_OVERFLOW, r)) => Ok(Some(Bytes::owned(overflow::read(&self.raw, &overflow::decode_ref(&r)?)?))),
            Some((_, v)) => Ok(Some(Bytes::owned(v))),
        }
    }

    // ----- multi-value trees -----

    /// Create the multi-value tree `name`, or open it if it exists.
    pub fn create_multi_tree(&mut self, name: &str) -> Result<Tree> {
        self.create(name, TreeKind::Multi)
    }

    fn check_multi_value(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let ps = self.raw.page_size();
        check_multi_key(key, ps)?;
        let max = crate::tree::node::max_key_size(ps);
        if value.len() > max {
            return Err(Error::ValueTooLarge { len: value.len() as u64, max: max as u64, limit: Limit::MultiValue });
        }
        Ok(())
    }

    /// Add `value` to `key`'s values; false if it was there already (a no-op).
    pub fn multi_put(&mut self, tree: &Tree, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<bool> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.check_multi_value(key, value)?;
        let mut desc = self.desc(tree, TreeKind::Multi)?;
        let added =
            self.change(|t| multi::put(&mut t.raw, &mut desc, t.cache.get_mut(), key, value, t.touched.get_mut()))?;
        self.store(tree, desc);
        Ok(added)
    }

    /// Remove `value` from `key`'s values; false if it was not there.
    pub fn multi_delete(&mut self, tree: &Tree, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<bool> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.check_multi_value(key, value)?;
        let mut desc = self.desc(tree, TreeKind::Multi)?;
        let removed =
            self.change(|t| multi::delete(&mut t.raw, &mut desc, t.cache.get_mut(), key, value, t.touched.get_mut()))?;
        if removed {
            self.store(tree, desc);
        }
        Ok(removed)
    }

    /// Remove every value of `key`; returns how many there were.
    pub fn multi_delete_all(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<u64> {
        let key = key.as_ref();
        check_multi_key(key, self.raw.page_size())?;
        let mut desc = self.desc(tree, TreeKind::Multi)?;
        let n =
            self.change(|t| multi::delete_all(&mut t.raw, &mut desc, t.cache.get_mut(), key, t.touched.get_mut()))?;
        if n > 0 {
            self.store(tree, desc);
        }
        Ok(n)
    }

    /// Number of values of `key`, in O(1).
    pub fn multi_count(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<u64> {
        let desc = self.desc(tree, TreeKind::Multi)?;
        self.with_cache(|cache, touched| multi::count(&self.raw, &desc, cache, key.as_ref(), touched))
    }

    /// The values of `key`, in order, seeing this transaction's changes.
    pub fn multi_get(&self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<WriteValues<'_>> {
        let desc = self.desc(tree, TreeKind::Multi)?;
        let src = TxSource(&self.raw);
        self.with_cache(|cache, touched| {
            let Some(f) = btree::get(&self.raw, &desc, cache, key.as_ref(), touched)? else {
                return Ok(Values::empty());
            };
            let (flags, v) = f.value()?;
            Values::from_stored(&src, crate::data::page::page_no(f.page), flags, v)
        })
    }

    /// Entries with keys in `range`, seeing this transaction's changes (one item per value in a
    /// multi-value tree, in (key, value) order).
    pub fn range<K: ?Sized, R: KeyRange<K>>(&self, tree: &Tree, range: R) -> Result<WriteRange<'_>> {
        let desc = self.lookup_desc(tree)?;
        let (lo, hi) = range.key_bounds();
        Ok(WriteRange::new(TxSource(&self.raw), desc, lo, hi))
    }

    /// The distinct keys in `range`, seeing this transaction's changes (one item per key, also
    /// in a multi-value tree; see [`ReadTxn::keys`](crate::ReadTxn::keys)).
    pub fn keys<K: ?Sized, R: KeyRange<K>>(&self, tree: &Tree, range: R) -> Result<WriteKeys<'_>> {
        let desc = self.lookup_desc(tree)?;
        let (lo, hi) = range.key_bounds();
        Ok(WriteKeys::new(TxSource(&self.raw), desc, lo, hi))
    }

    /// The number of values of the keys in `range`, seeing this transaction's changes (entries,
    /// in a plain tree; see [`ReadTxn::multi_count_range`](crate::ReadTxn::multi_count_range)).
    pub fn multi_count_range<K: ?Sized, R: KeyRange<K>>(&self, tree: &Tree, range: R) -> Result<u64> {
        let desc = self.lookup_desc(tree)?;
        let (lo, hi) = range.key_bounds();
        count_range(TxSource(&self.raw), desc, lo, hi)
    }

    /// Entries whose keys start with `prefix`, seeing this transaction's changes.
    pub fn prefix(&self, tree: &Tree, prefix: impl AsRef<[u8]>) -> Result<WriteRange<'_>> {
        let desc = self.lookup_desc(tree)?;
        let (lo, hi) = prefix_bounds(prefix.as_ref());
        Ok(WriteRange::new(TxSource(&self.raw), desc, lo, hi))
    }

    /// A cursor over a plain tree, seeing this transaction's changes. A multi-value tree is
    /// refused with [`Error::WrongTreeKind`]: use [`keys`](Self::keys) and
    /// [`multi_get`](Self::multi_get) (see [`ReadTxn::cursor`](crate::ReadTxn::cursor)).
    pub fn cursor(&self, tree: &Tree) -> Result<WriteCursor<'_>> {
        let desc = self.desc(tree, TreeKind::Plain)?;
        Ok(Cursor::new(TxSource(&self.raw), desc))
    }

    /// Discard everything this transaction did.
    pub fn abort(self) {}

    /// Write back tree descriptors, then commit: one journal record, durable on return in `Sync`
    /// mode.
    pub fn commit(self) -> Result<CommitStats> {
        self.prepare()?.finish()
    }

    pub(crate) fn page_size(&self) -> usize {
        self.raw.page_size()
    }

    /// Write back tree descriptors and prepare the page-level commit (see `txn::write::Prepared`).
    pub(crate) fn prepare(mut self) -> Result<Prepared> {
        if let Some(e) = &self.broken {
            return Err(Error::Invalid(format!(
                "an earlier operation of this transaction failed ({e}); it can only be aborted"
            )));
        }
        let mut dirty: Vec<(String, TreeDesc)> =
            self.trees.get_mut().values().filter(|s| s.dirty).map(|s| (s.name.clone(), s.desc)).collect();
        // No tree created, deleted or renamed (those set `meta_dirty`), no raw page: the trees
        // are the base state's, with the descriptors in `dirty` changed (the readers' memo is
        // handed on, updated, below).
        let same_names = !self.meta_dirty && !self.raw_pages;
        let changed: Vec<TreeDesc> = if same_names { dirty.iter().map(|(_, d)| *d).collect() } else { Vec::new() };
        dirty.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, desc) in dirty {
            btree::put(
                &mut self.raw,
                &mut self.root,
                self.cache.get_mut(),
                name.as_bytes(),
                FLAG_INLINE,
                &desc.encode(),
                self.touched.get_mut(),
            )?;
            self.meta_dirty = true;
        }
        if self.meta_dirty {
            let old = Meta::decode(self.raw.page(META_PAGE)?)?;
            if old.next_tree_id != self.next_tree_id || old.root != self.root {
                let meta = Meta { next_tree_id: self.next_tree_id, root: self.root };
                meta.encode(self.raw.page_mut(META_PAGE)?);
            }
        }
        let _ = (ROOT_ID, DESC_LEN);
        let (core, base, root) = (self.core.clone(), self.raw.base_txid(), self.root);
        let prepared = self.raw.prepare()?;
        if let Some(txid) = prepared.txid().filter(|_| same_names) {
            core.hand_on_read_memo(base, txid, |m| super::read::memo_after(m, root, &changed));
        }
        Ok(prepared)
    }
}
