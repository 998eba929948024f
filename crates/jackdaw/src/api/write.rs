//! The write transaction over trees.

use super::catalog::{self, ROOT_ID};
use super::iter::{prefix_bounds, Cursor, KeyRange, TxSource, Values, WriteRange};
use super::{check_key, check_value_len, inline, Bytes, Tree, TreeStats};
use crate::data::file::META_PAGE;
use crate::data::page::PageKind;
use crate::error::Limit;
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
    trees: PgnoMap<TreeState>,
    cache: LeafCache,
    touched: u64,
    core: Arc<Core>,
    /// Set when an operation failed after it began changing pages: the transaction's state is
    /// then unknown, so it can only be aborted.
    broken: Option<Error>,
}

impl WriteTxn {
    pub(crate) fn begin(core: &Arc<Core>, wait: bool) -> Result<WriteTxn> {
        let raw = PageTxn::begin(core, wait)?;
        let meta = Meta::decode(&raw.page(META_PAGE)?)?;
        let next_tree_id = meta.next_tree_id.max(core.tree_ids.load(std::sync::atomic::Ordering::Relaxed));
        Ok(WriteTxn {
            raw,
            db_id: core.db_id,
            root: meta.root,
            next_tree_id,
            meta_dirty: false,
            trees: PgnoMap::default(),
            cache: LeafCache::new(2),
            touched: 0,
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
    pub fn txid(&self) -> u64 {
        self.raw.txid()
    }

    /// Override the environment's durability for this commit.
    pub fn set_durability(&mut self, d: Durability) {
        self.raw.set_durability(d);
    }

    /// Pages read or written by tree operations of this transaction so far.
    pub fn pages_touched(&self) -> u64 {
        self.touched
    }

    // ----- raw pages (tools and tests of the storage layer) -----

    /// Raw page access: page `pgno` as this transaction sees it.
    pub fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.raw.page(pgno)
    }
    /// Raw page access: a writable copy of page `pgno` (bytes from 32 on are the caller's).
    pub fn page_mut(&mut self, pgno: u64) -> Result<&mut [u8]> {
        self.raw.page_mut(pgno)
    }
    /// Raw page access: allocate a page. Pages allocated this way are not part of any tree:
    /// verify such a database with `Env::check_with`.
    pub fn alloc_page(&mut self, kind: PageKind) -> Result<u64> {
        self.raw.alloc_page(kind)
    }
    /// Raw page access: the page high-water mark as this transaction leaves it.
    pub fn next_page(&self) -> u64 {
        self.raw.next_page()
    }
    /// Raw page access: free a page.
    pub fn free_page(&mut self, pgno: u64) -> Result<()> {
        self.raw.free_page(pgno)
    }

    // ----- trees -----

    fn state(&mut self, tree: &Tree) -> Result<&mut TreeState> {
        if !self.trees.contains_key(&tree.id) {
            let (name, desc) =
                catalog::resolve(&self.raw, &self.root, &mut self.cache, tree, self.db_id, &mut self.touched)?;
            self.trees.insert(tree.id, TreeState { name, desc, dirty: false });
        }
        Ok(self.trees.get_mut(&tree.id).expect("inserted"))
    }

    fn desc(&mut self, tree: &Tree, kind: TreeKind) -> Result<TreeDesc> {
        let st = self.state(tree)?;
        if st.desc.kind() != kind {
            return Err(Error::WrongTreeKind(st.name.clone()));
        }
        Ok(st.desc)
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
        self.core.tree_ids.fetch_max(self.next_tree_id, std::sync::atomic::Ordering::Relaxed);
        self.meta_dirty = true;
        self.change(|t| {
            btree::put(
                &mut t.raw,
                &mut t.root,
                &mut t.cache,
                name.as_bytes(),
                FLAG_INLINE,
                &desc.encode(),
                &mut t.touched,
            )
        })?;
        self.trees.insert(desc.id, TreeState { name: name.to_string(), desc, dirty: false });
        Ok(catalog::handle(name, &desc, self.db_id))
    }

    /// The tree named `name`, if it exists.
    pub fn open_tree(&mut self, name: &str) -> Result<Option<Tree>> {
        let found = catalog::lookup(&self.raw, &self.root, &mut self.cache, name, &mut self.touched)?;
        Ok(found.map(|d| {
            let d = self.trees.get(&d.id).map_or(d, |s| s.desc);
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
            btree::delete(&mut t.raw, &mut t.root, &mut t.cache, name.as_bytes(), &mut t.touched)
        })?;
        self.trees.remove(&desc.id);
        self.cache.clear_tree(desc.id);
        self.meta_dirty = true;
        Ok(true)
    }

    /// Rename a tree; handles keep working. Fails with `NoSuchTree` or `TreeExists`.
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
            btree::delete(&mut t.raw, &mut t.root, &mut t.cache, old.as_bytes(), &mut t.touched)?;
            btree::put(
                &mut t.raw,
                &mut t.root,
                &mut t.cache,
                new.as_bytes(),
                FLAG_INLINE,
                &desc.encode(),
                &mut t.touched,
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
    pub fn tree_stats(&mut self, tree: &Tree) -> Result<TreeStats> {
        Ok(TreeStats::from(&self.state(tree)?.desc))
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
                btree::put(&mut t.raw, &mut desc, &mut t.cache, key, FLAG_INLINE, value, &mut t.touched)?;
            } else {
                let (first, n) = overflow::write(&mut t.raw, value)?;
                desc.overflow_pages += n;
                let r = overflow::encode_ref(value.len() as u64, first);
                btree::put(&mut t.raw, &mut desc, &mut t.cache, key, FLAG_OVERFLOW, &r, &mut t.touched)?;
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
        self.change(|t| {
            let (first, n) = overflow::write_stream(&mut t.raw, len, &mut reader)?;
            desc.overflow_pages += n;
            let r = overflow::encode_ref(len, first);
            btree::put(&mut t.raw, &mut desc, &mut t.cache, key, FLAG_OVERFLOW, &r, &mut t.touched)
        })?;
        self.store(tree, desc);
        Ok(())
    }

    fn store(&mut self, tree: &Tree, desc: TreeDesc) {
        if let Some(st) = self.trees.get_mut(&tree.id) {
            st.desc = desc;
            st.dirty = true;
        }
    }

    /// Delete `key`; true if it was present.
    pub fn delete(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<bool> {
        let mut desc = self.desc(tree, TreeKind::Plain)?;
        let found =
            self.change(|t| btree::delete(&mut t.raw, &mut desc, &mut t.cache, key.as_ref(), &mut t.touched))?;
        if found {
            self.store(tree, desc);
        }
        Ok(found)
    }

    /// The value of `key` as this transaction sees it (a copy).
    pub fn get(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let desc = self.desc(tree, TreeKind::Plain)?;
        let Some(f) = btree::get(&self.raw, &desc, &mut self.cache, key.as_ref(), &mut self.touched)? else {
            return Ok(None);
        };
        let (flags, v, _) = f.value()?;
        if flags == FLAG_OVERFLOW {
            let (len, first) = overflow::decode_ref(v)?;
            drop(f);
            return Ok(Some(Bytes::owned(overflow::read(&self.raw, first, len)?)));
        }
        Ok(Some(Bytes::owned(v.to_vec())))
    }

    fn any_desc(&mut self, tree: &Tree) -> Result<TreeDesc> {
        Ok(self.state(tree)?.desc)
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
        let added = self.change(|t| multi::put(&mut t.raw, &mut desc, &mut t.cache, key, value, &mut t.touched))?;
        self.store(tree, desc);
        Ok(added)
    }

    /// Remove `value` from `key`'s values; false if it was not there.
    pub fn multi_delete(&mut self, tree: &Tree, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<bool> {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.check_multi_value(key, value)?;
        let mut desc = self.desc(tree, TreeKind::Multi)?;
        let removed =
            self.change(|t| multi::delete(&mut t.raw, &mut desc, &mut t.cache, key, value, &mut t.touched))?;
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
        let n = self.change(|t| multi::delete_all(&mut t.raw, &mut desc, &mut t.cache, key, &mut t.touched))?;
        if n > 0 {
            self.store(tree, desc);
        }
        Ok(n)
    }

    /// Number of values of `key`, in O(1).
    pub fn multi_count(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<u64> {
        let desc = self.desc(tree, TreeKind::Multi)?;
        multi::count(&self.raw, &desc, &mut self.cache, key.as_ref(), &mut self.touched)
    }

    /// The values of `key`, in order, seeing this transaction's changes.
    pub fn multi_get(&mut self, tree: &Tree, key: impl AsRef<[u8]>) -> Result<Values<TxSource<'_>>> {
        let desc = self.desc(tree, TreeKind::Multi)?;
        let src = TxSource(&self.raw);
        let Some(f) = btree::get(&self.raw, &desc, &mut self.cache, key.as_ref(), &mut self.touched)? else {
            return Ok(Values::empty());
        };
        let (flags, v, vstart) = f.value()?;
        let pgno = crate::data::page::page_no(&f.page);
        Values::from_stored(&src, &f.page, pgno, flags, v, vstart)
    }

    /// Entries with keys in `range`, seeing this transaction's changes (one item per value in a
    /// multi-value tree, in (key, value) order).
    pub fn range<K: ?Sized, R: KeyRange<K>>(&mut self, tree: &Tree, range: R) -> Result<WriteRange<'_>> {
        let desc = self.any_desc(tree)?;
        let (lo, hi) = range.key_bounds();
        Ok(WriteRange::new(TxSource(&self.raw), desc, lo, hi))
    }

    /// Entries whose keys start with `prefix`, seeing this transaction's changes.
    pub fn prefix(&mut self, tree: &Tree, prefix: impl AsRef<[u8]>) -> Result<WriteRange<'_>> {
        let desc = self.any_desc(tree)?;
        let (lo, hi) = prefix_bounds(prefix.as_ref());
        Ok(WriteRange::new(TxSource(&self.raw), desc, lo, hi))
    }

    /// A cursor over `tree`, seeing this transaction's changes.
    pub fn cursor(&mut self, tree: &Tree) -> Result<Cursor<TxSource<'_>>> {
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
            self.trees.values().filter(|s| s.dirty).map(|s| (s.name.clone(), s.desc)).collect();
        dirty.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, desc) in dirty {
            btree::put(
                &mut self.raw,
                &mut self.root,
                &mut self.cache,
                name.as_bytes(),
                FLAG_INLINE,
                &desc.encode(),
                &mut self.touched,
            )?;
            self.meta_dirty = true;
        }
        if self.meta_dirty {
            let old = Meta::decode(&self.raw.page(META_PAGE)?)?;
            if old.next_tree_id != self.next_tree_id || old.root != self.root {
                let meta = Meta { next_tree_id: self.next_tree_id, root: self.root };
                meta.encode(self.raw.page_mut(META_PAGE)?);
            }
        }
        let _ = (ROOT_ID, DESC_LEN);
        self.raw.prepare()
    }
}
