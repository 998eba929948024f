//! B+tree search, insert (with splits) and delete (with merges), and the leaf cache.
//!
//! Split policy: an insert past the last entry of the rightmost leaf (or branch) starts a new
//! page holding only the new entry, so sequential inserts leave full pages behind; any other
//! split divides the entries by bytes. Merge policy: after a delete, a page using less than a
//! quarter of its space merges with a sibling when both fit in one page; a root branch with one
//! child collapses; an empty root leaf empties the tree.

use super::node::{self, Node, FLAG_OVERFLOW};
use super::overflow;
use super::{PageRead, PageWrite, TreeDesc};
use crate::data::page::{self, PageKind};
use crate::txn::PageRef;
use crate::{Error, Result};

/// Branch pages from the root down to a leaf: (page, child index taken).
/// The branches a descent went through, root first: (page, child index). Inline up to 8
/// levels (a tree of 4 KiB pages is rarely deeper than 5): a put's descent allocated it.
pub(crate) type Path = smallvec::SmallVec<[(u64, usize); 8]>;

/// A key range inside the one a leaf covers: from its parent's separators where the parent has
/// them (low inclusive, high exclusive), else from the leaf's own first and last keys (both
/// inclusive: narrower than the true range, never wider), unbounded at the tree's edges.
#[derive(Default, Clone)]
pub(crate) struct Fences {
    /// Fence keys are held inline up to 32 bytes: filling a cache slot for short keys does not
    /// allocate (a read transaction of one point read made two allocations here).
    pub low: smallvec::SmallVec<[u8; 32]>,
    pub low_inf: bool,
    pub high: smallvec::SmallVec<[u8; 32]>,
    pub high_inf: bool,
    /// Whether `high` is a key of the leaf (inclusive) rather than a separator (exclusive).
    pub high_incl: bool,
}

impl Fences {
    fn reset(&mut self) {
        self.low.clear();
        self.high.clear();
        self.low_inf = false;
        self.high_inf = false;
        self.high_incl = false;
    }
    #[inline]
    fn contains(&self, key: &[u8]) -> bool {
        use std::cmp::Ordering::*;
        (self.low_inf || node::compare(&self.low, key) != Greater)
            && (self.high_inf
                || match node::compare(key, &self.high) {
                    Less => true,
                    Equal => self.high_incl,
                    Greater => false,
                })
    }
}

struct CacheSlot {
    tree: u64,
    pgno: u64,
    fences: Fences,
}

/// Recently found leaves with their key ranges: a lookup inside a cached range skips the descent.
/// The most recent hit is tried first; after a long run of misses (random access) only that one
/// is tried, with a full scan every 16th lookup. A descent fills a slot only where the access
/// shows locality: it ends on the leaf the previous descent ended on, or the lookup before it
/// was a hit (a scan of gets moving on to the next leaf). Random lookups (a read transaction of
/// a few point reads, YCSB's shape) then copy no fence keys at all (callgrind, `freedb bench`
/// queries: ~400 instructions a get of ~2,800 went to fences no lookup used), and local access
/// starts hitting from its third lookup in a leaf (one descent more than caching every leaf).
pub(crate) struct LeafCache {
    slots: Vec<CacheSlot>,
    cap: usize,
    next: usize,
    mru: usize,
    misses: std::cell::Cell<u32>,
    /// The leaf the last descent through this cache ended on (0: none yet; `u64::MAX`: none
    /// yet, but fill at the first descent).
    last_leaf: std::cell::Cell<u64>,
}

impl LeafCache {
    pub(crate) fn new(cap: usize) -> LeafCache {
        LeafCache {
            slots: Vec::new(),
            cap,
            next: 0,
            mru: 0,
            misses: std::cell::Cell::new(0),
            last_leaf: std::cell::Cell::new(0),
        }
    }
    /// A cache whose first descent fills a slot: a write transaction's, whose first lookup is
    /// usually followed by more in the same leaf (a read-modify-write of one key, a run of puts).
    pub(crate) fn filling_first(cap: usize) -> LeafCache {
        let c = LeafCache::new(cap);
        c.last_leaf.set(u64::MAX);
        c
    }
    #[inline]
    pub(crate) fn lookup(&self, tree: u64, key: &[u8]) -> Option<u64> {
        if let Some(s) = self.slots.get(self.mru) {
            if s.tree == tree && s.fences.contains(key) {
                self.misses.set(0);
                return Some(s.pgno);
            }
        }
        let m = self.misses.get();
        if m < 16 || m.is_multiple_of(16) {
            if let Some(s) = self.slots.iter().find(|s| s.tree == tree && s.fences.contains(key)) {
                self.misses.set(0);
                return Some(s.pgno);
            }
        }
        self.misses.set(m.wrapping_add(1));
        None
    }
    /// Whether the descent after the miss just reported by `lookup`, which leads to `leaf`,
    /// should fill a slot (see the type's doc).
    #[inline]
    fn wants_fill(&self, leaf: u64) -> bool {
        let prev = self.last_leaf.replace(leaf);
        prev == leaf || (prev != 0 && self.misses.get() == 1)
    }
    /// Buffers for the next insertion (reused, so a warm cache does not allocate).
    fn take_fences(&mut self) -> Fences {
        let mut f = if self.slots.len() < self.cap {
            Fences::default()
        } else {
            std::mem::take(&mut self.slots[self.next].fences)
        };
        f.reset();
        f
    }
    fn insert(&mut self, tree: u64, pgno: u64, fences: Fences) {
        let s = CacheSlot { tree, pgno, fences };
        if self.slots.len() < self.cap {
            if self.slots.capacity() == 0 {
                self.slots.reserve_exact(self.cap);
            }
            self.mru = self.slots.len();
            self.slots.push(s);
        } else {
            self.slots[self.next] = s;
            self.mru = self.next;
            self.next = (self.next + 1) % self.cap;
        }
    }
    pub(crate) fn clear_tree(&mut self, tree: u64) {
        self.slots.retain(|s| s.tree != tree);
        self.next = 0;
        self.mru = 0;
    }
}

#[inline]
fn check_kind(page: &[u8], pgno: u64, level: u32) -> Result<()> {
    let want = if level == 0 { PageKind::Leaf } else { PageKind::Branch };
    if page::page_kind(page) != Some(want) || Node::new(page).level() as u32 != level {
        return Err(wrong_kind(pgno, want, level));
    }
    Ok(())
}

#[cold]
fn wrong_kind(pgno: u64, want: PageKind, level: u32) -> Error {
    Error::corrupted(Some(pgno), format!("expected a {want:?} page at level {level}"))
}

/// Descend from the root to the leaf whose range holds `key`.
pub(crate) fn descend<P: PageRead + ?Sized>(
    p: &P,
    desc: &TreeDesc,
    key: &[u8],
    path: Option<&mut Path>,
    touched: &mut u64,
) -> Result<u64> {
    descend_to(p, desc, key, path, None, touched).map(|(pgno, _)| pgno)
}

/// `descend`, returning the leaf page as read (a get searches it without looking it up again).
/// With a cache, the leaf fills a slot of it when the cache wants it (`LeafCache::wants_fill`,
/// decided at the leaf's parent, which gives the fences).
pub(crate) fn descend_to<'a, P: PageRead + ?Sized>(
    p: &'a P,
    desc: &TreeDesc,
    key: &[u8],
    mut path: Option<&mut Path>,
    mut cache: Option<&mut LeafCache>,
    touched: &mut u64,
) -> Result<(u64, PageRef<'a>)> {
    let mut pgno = desc.root;
    let mut level = desc.depth.checked_sub(1).ok_or_else(|| Error::corrupted(None, "descent into an empty tree"))?;
    // Whether the path so far took the first (last) child at every level: the leaf's range is
    // then unbounded below (above).
    let (mut leftmost, mut rightmost) = (true, true);
    // The fences being recorded for the cache, when it wants this leaf.
    let mut fill = None;
    if level == 0 {
        fill = cache.as_deref_mut().filter(|c| c.wants_fill(pgno)).map(|c| c.take_fences());
    }
    loop {
        // A leaf is searched (a chain of dependent misses across the page) or copied whole
        // (a write): start every line loading now, so the misses overlap (and its search needs
        // no hint per probe). Measured on `rndread` (1M random gets, alternating runs): 1,170 ->
        // 1,090 ns per get (median).
        let page = if level == 0 { p.page_whole(pgno)? } else { p.page(pgno)? };
        *touched += 1;
        check_kind(page, pgno, level)?;
        if level == 0 {
            if let (Some(c), Some(f)) = (cache, fill) {
                fill_from_leaf(c, desc.id, pgno, page, f, leftmost, rightmost)?;
            }
            return Ok((pgno, page));
        }
        let n = Node::new(page);
        // Every descent searches the root: its probes find their lines in the cache, and hints
        // would only cost instructions (~110 a get at depth 3).
        let ci = if pgno == desc.root { n.child_index_cached(key) } else { n.child_index(key) }?;
        let child = n.child(ci)?;
        let last = ci + 1 == n.count();
        if level == 1 {
            if let Some(c) = cache.as_deref_mut().filter(|c| c.wants_fill(child)) {
                let mut f = c.take_fences();
                if ci > 0 {
                    f.low.extend_from_slice(n.key(ci)?);
                }
                if !last {
                    f.high.extend_from_slice(n.key(ci + 1)?);
                }
                fill = Some(f);
            }
        }
        leftmost &= ci == 0;
        rightmost &= last;
        if let Some(path) = path.as_deref_mut() {
            path.push((pgno, ci));
        }
        pgno = child;
        level -= 1;
    }
}

/// Complete the fences of leaf `pgno` (`page`) and cache them. A bound its parent did not give
/// (the leaf is its parent's first or last child: the bound is still empty; a separator the
/// parent gives is never empty, the empty key sorting first, and were one empty on a damaged
/// page the leaf's key standing in would only narrow the range) is unbounded at the tree's
/// edge, else the leaf's own first or last key; a leaf without keys then fills nothing.
fn fill_from_leaf(
    c: &mut LeafCache,
    tree: u64,
    pgno: u64,
    page: &[u8],
    mut f: Fences,
    leftmost: bool,
    rightmost: bool,
) -> Result<()> {
    let n = Node::new(page);
    let count = n.count();
    if f.low.is_empty() {
        if leftmost {
            f.low_inf = true;
        } else if count > 0 {
            f.low.extend_from_slice(n.key(0)?);
        } else {
            return Ok(());
        }
    }
    if f.high.is_empty() {
        if rightmost {
            f.high_inf = true;
        } else if count > 0 {
            f.high.extend_from_slice(n.key(count - 1)?);
            f.high_incl = true;
        } else {
            return Ok(());
        }
    }
    c.insert(tree, pgno, f);
    Ok(())
}

/// Find the leaf for `key`, through the cache when it knows it.
pub(crate) fn find_leaf<P: PageRead + ?Sized>(
    p: &P,
    desc: &TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<u64> {
    Ok(match locate(p, desc, cache, key, touched)? {
        Located::Cached(pg) | Located::Descended(pg, _) => pg,
    })
}

/// The leaf page for `key` (`find_leaf`, keeping the page a descent read), and whether it came
/// from a descent (which hinted all its lines into the cache).
fn leaf_page<'a, P: PageRead + ?Sized>(
    p: &'a P,
    desc: &TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<(PageRef<'a>, bool)> {
    match locate(p, desc, cache, key, touched)? {
        Located::Cached(pg) => {
            *touched += 1;
            Ok((p.page(pg)?, false))
        }
        Located::Descended(_, page) => Ok((page, true)),
    }
}

/// Where `locate` found a leaf: the cache knew its number (the page not read), or a descent read it.
enum Located<'a> {
    Cached(u64),
    Descended(u64, PageRef<'a>),
}

/// The leaf for `key`: through the cache when it knows it, else by a descent (that fills the
/// cache when it wants filling).
fn locate<'a, P: PageRead + ?Sized>(
    p: &'a P,
    desc: &TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<Located<'a>> {
    if let Some(pg) = cache.lookup(desc.id, key) {
        return Ok(Located::Cached(pg));
    }
    let (pg, page) = descend_to(p, desc, key, None, Some(cache), touched)?;
    Ok(Located::Descended(pg, page))
}

/// Where a found value lives: its leaf page and the entry index.
pub(crate) struct Found<'a> {
    pub page: PageRef<'a>,
    pub idx: usize,
}

impl Found<'_> {
    #[inline]
    /// The entry's flags and stored value.
    pub(crate) fn value(&self) -> Result<(u8, &[u8])> {
        let (flags, v, _) = Node::new(self.page).value(self.idx)?;
        Ok((flags, v))
    }
}

/// Look `key` up (inlined: a point read is the hottest path, and its callers' code around it
/// is small).
#[inline]
pub(crate) fn get<'a, P: PageRead + ?Sized>(
    p: &'a P,
    desc: &TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<Option<Found<'a>>> {
    if desc.root == 0 {
        return Ok(None);
    }
    let (page, descended) = leaf_page(p, desc, cache, key, touched)?;
    let n = Node::new(page);
    let r = if descended { n.search_loaded(key) } else { n.search(key) }?;
    Ok(r.ok().map(|idx| Found { page, idx }))
}

/// Insert or replace `key` with a stored value (inline bytes, or an overflow reference when
/// `flags == FLAG_OVERFLOW`). Frees the old value's overflow pages. Returns true if replaced.
pub(crate) fn put<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    flags: u8,
    val: &[u8],
    touched: &mut u64,
) -> Result<bool> {
    if desc.root == 0 {
        let pg = w.alloc(PageKind::Leaf)?;
        let p = w.page_mut(pg)?;
        node::init(p, 0);
        node::insert_leaf(p, 0, key, flags, val)?;
        *desc = TreeDesc { root: pg, depth: 1, leaf_pages: desc.leaf_pages + 1, entries: 1, ..*desc };
        return Ok(false);
    }
    let leaf = find_leaf(w, desc, cache, key, touched)?;
    let size = node::leaf_entry_size(key, val.len());
    *touched += 1;
    // The leaf is changed in place when the entry fits (reporting what it wrote); a split is
    // left for afterwards, on the leaf as the closure left it.
    let (found, old_overflow, split_at) = w.modify(leaf, |p| {
        let found = Node::new(p).search(key)?;
        let mut old_overflow = None;
        let mut written = node::Written::new();
        let idx = match found {
            Ok(i) => {
                let (oflags, oval, _) = Node::new(p).value(i)?;
                if oflags == FLAG_OVERFLOW {
                    old_overflow = Some(overflow::decode_ref(oval)?.chain());
                }
                if oflags == flags && oval.len() == val.len() {
                    written = node::set_value_in_place(p, i, val)?;
                    return Ok((written, (found, old_overflow, None)));
                }
                written = node::remove(p, i)?;
                i
            }
            Err(i) => i,
        };
        if node::fits(p, size) {
            written.extend(node::insert_leaf(p, idx, key, flags, val)?);
            Ok((written, (found, old_overflow, None)))
        } else {
            Ok((written, (found, old_overflow, Some(idx))))
        }
    })?;
    if found.is_err() {
        desc.entries += 1;
    }
    if let Some(idx) = split_at {
        let mut e = vec![0u8; size];
        node::write_leaf_entry(&mut e, key, flags, val);
        split(w, desc, cache, leaf, key, idx, e, touched)?;
    }
    free_old(w, desc, old_overflow)?;
    Ok(found.is_ok())
}

/// Free the chain `old` (its bytes in pages and its first page, `overflow::Ref::chain`), if any.
fn free_old<W: PageWrite + ?Sized>(w: &mut W, desc: &mut TreeDesc, old: Option<(u64, u64)>) -> Result<()> {
    if let Some((len, first)) = old {
        let n = overflow::free(w, first, len)?;
        desc.overflow_pages = desc.overflow_pages.saturating_sub(n);
    }
    Ok(())
}

/// Where to split `sizes` (entry sizes with slots): returns m, left = [..m], right = [m..].
fn split_point(sizes: &[usize], append: bool, cap: usize) -> Result<usize> {
    let n = sizes.len();
    if n < 2 {
        return Err(Error::corrupted(None, "split of a page with fewer than two entries"));
    }
    let total: usize = sizes.iter().sum();
    if append && total - sizes[n - 1] <= cap {
        return Ok(n - 1);
    }
    let mut acc = 0;
    let mut m = 0;
    while m < n - 1 && acc + sizes[m] <= total / 2 {
        acc += sizes[m];
        m += 1;
    }
    m = m.max(1);
    // Both halves must fit.
    while m > 1 && sizes[..m].iter().sum::<usize>() > cap {
        m -= 1;
    }
    while m < n - 1 && sizes[m..].iter().sum::<usize>() > cap {
        m += 1;
    }
    if sizes[..m].iter().sum::<usize>() > cap || sizes[m..].iter().sum::<usize>() > cap {
        return Err(Error::corrupted(None, "entries too large to split"));
    }
    Ok(m)
}

fn entry_key(e: &[u8], leaf: bool) -> &[u8] {
    let klen = u16::from_le_bytes([e[0], e[1]]) as usize;
    let at = if leaf { node::LEAF_ENTRY_HEADER } else { node::BRANCH_ENTRY_HEADER };
    &e[at..at + klen]
}

/// Split full page `pgno` while inserting raw entry `new` at `idx`, and push the separator up.
#[allow(clippy::too_many_arguments)]
fn split<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    leaf: u64,
    key: &[u8],
    idx: usize,
    new: Vec<u8>,
    touched: &mut u64,
) -> Result<()> {
    cache.clear_tree(desc.id);
    let mut path = Path::new();
    let found = descend(w, desc, key, Some(&mut path), touched)?;
    if found != leaf {
        return Err(Error::corrupted(Some(leaf), "leaf moved during insert"));
    }
    let rightmost = rightmost_path(w, &path)?;
    let (left, sep, right) = split_page(w, desc, leaf, idx, new, rightmost)?;
    insert_into_parent(w, desc, path, left, sep, right)
}

fn rightmost_path<W: PageRead + ?Sized>(w: &W, path: &Path) -> Result<bool> {
    for (pg, ci) in path {
        if *ci + 1 != Node::new(w.page(*pg)?).count() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Split page `pgno` (leaf or branch) with raw entry `new` inserted at `idx`. Returns (left,
/// separator, right).
fn split_page<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    pgno: u64,
    idx: usize,
    new: Vec<u8>,
    rightmost: bool,
) -> Result<(u64, Vec<u8>, u64)> {
    let ps = w.page_size();
    // Sequential append (the common case of a bulk load): the full page stays as it is and the
    // new entry starts the next page alone; nothing is copied.
    {
        let (count, level) = {
            let page = w.page(pgno)?;
            let n = Node::new(page);
            (n.count(), n.level())
        };
        if rightmost && idx == count && count > 0 {
            return append_to_new_page(w, desc, pgno, new, level);
        }
    }
    // One copy of the page; entries are slices of it (no allocation per entry).
    let (image, level) = {
        let page = w.page(pgno)?;
        let level = Node::new(page).level();
        (page.to_vec(), level)
    };
    let n = Node::new(&image);
    let mut entries: Vec<&[u8]> = Vec::with_capacity(n.count() + 1);
    for i in 0..n.count() {
        entries.push(n.entry(i)?);
    }
    let leaf = level == 0;
    let append = rightmost && idx == entries.len();
    entries.insert(idx, &new);
    let sizes: Vec<usize> = entries.iter().map(|e| e.len() + 2).collect();
    let m = split_point(&sizes, append, ps - node::SLOTS)?;
    let sep = entry_key(entries[m], leaf).to_vec();
    // The right branch's first key is implicit (minus infinity): store it empty.
    let implicit = if leaf { Vec::new() } else { implicit_first_entry(entries[m])? };
    if !leaf {
        entries[m] = &implicit;
    }
    let kind = if leaf { PageKind::Leaf } else { PageKind::Branch };
    let right = w.alloc(kind)?;
    {
        let rp = w.page_mut(right)?;
        node::init(rp, level);
        node::fill(rp, &entries[m..])?;
    }
    {
        let lp = w.page_mut(pgno)?;
        node::init(lp, level);
        node::fill(lp, &entries[..m])?;
    }
    desc.count_new_page(leaf);
    Ok((pgno, sep, right))
}

/// `split_page`'s sequential append: page `pgno` (at `level`) stays as it is and entry `new`
/// starts a new right page alone. Returns (left, separator, right).
#[inline]
fn append_to_new_page<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    pgno: u64,
    new: Vec<u8>,
    level: u16,
) -> Result<(u64, Vec<u8>, u64)> {
    let leaf = level == 0;
    let sep = entry_key(&new, leaf).to_vec();
    let entry = if leaf { new } else { implicit_first_entry(&new)? };
    let right = w.alloc(if leaf { PageKind::Leaf } else { PageKind::Branch })?;
    let rp = w.page_mut(right)?;
    node::init(rp, level);
    node::fill(rp, &[&entry])?;
    desc.count_new_page(leaf);
    Ok((pgno, sep, right))
}

/// Branch entry `e` as the first entry of a branch page: same child, key stored empty (the
/// first key of a branch is implicit, minus infinity).
#[inline]
fn implicit_first_entry(e: &[u8]) -> Result<Vec<u8>> {
    let child = node::u64_at(e, 2)?;
    let mut out = vec![0u8; node::branch_entry_size(b"")];
    node::write_branch_entry(&mut out, b"", child);
    Ok(out)
}

fn insert_into_parent<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    mut path: Path,
    mut left: u64,
    mut sep: Vec<u8>,
    mut right: u64,
) -> Result<()> {
    loop {
        let Some((ppg, ci)) = path.pop() else {
            let root = w.alloc(PageKind::Branch)?;
            let p = w.page_mut(root)?;
            node::init(p, desc.depth as u16);
            node::insert_branch(p, 0, b"", left)?;
            node::insert_branch(p, 1, &sep, right)?;
            desc.root = root;
            desc.depth += 1;
            desc.branch_pages += 1;
            return Ok(());
        };
        let size = node::branch_entry_size(&sep);
        let p = w.page_mut(ppg)?;
        if node::fits(p, size) {
            return node::insert_branch(p, ci + 1, &sep, right).map(drop);
        }
        let mut e = vec![0u8; size];
        node::write_branch_entry(&mut e, &sep, right);
        let rightmost = rightmost_path(w, &path)?;
        let (l, s, r) = split_page(w, desc, ppg, ci + 1, e, rightmost)?;
        (left, sep, right) = (l, s, r);
    }
}

/// Delete `key`; true if it was present. Frees its overflow pages and rebalances.
pub(crate) fn delete<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<bool> {
    if desc.root == 0 {
        return Ok(false);
    }
    let mut path = Path::new();
    let leaf = descend(w, desc, key, Some(&mut path), touched)?;
    let idx = match Node::new(w.page(leaf)?).search(key)? {
        Ok(i) => i,
        Err(_) => return Ok(false),
    };
    let p = w.page_mut(leaf)?;
    let (flags, v, _) = Node::new(p).value(idx)?;
    let old = if flags == FLAG_OVERFLOW { Some(overflow::decode_ref(v)?.chain()) } else { None };
    node::remove(p, idx)?;
    desc.entries = desc.entries.saturating_sub(1);
    free_old(w, desc, old)?;
    rebalance(w, desc, cache, path, leaf)?;
    Ok(true)
}

fn rebalance<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    mut path: Path,
    mut pg: u64,
) -> Result<()> {
    let cap = w.page_size() - node::SLOTS;
    loop {
        let (used, count, leaf, first_child) = {
            let page = w.page(pg)?;
            let n = Node::new(page);
            let fc = if !n.is_leaf() && n.count() > 0 { n.child(0)? } else { 0 };
            (n.used(), n.count(), n.is_leaf(), fc)
        };
        if path.is_empty() {
            match shrink_root(w, desc, cache, pg, leaf, count, first_child)? {
                Some(child) => {
                    pg = child;
                    continue;
                }
                None => return Ok(()),
            }
        }
        if count == 0 {
            // An empty page leaves its parent, whether or not a sibling could take it in (a
            // branch of huge keys may have no sibling with room, and no other child).
            let (ppg, ci) = path.pop().ok_or_else(|| Error::Invalid("internal: rebalance past the root".into()))?;
            w.free(pg)?;
            if leaf {
                desc.leaf_pages -= 1;
            } else {
                desc.branch_pages -= 1;
            }
            node::remove(w.page_mut(ppg)?, ci)?;
            cache.clear_tree(desc.id);
            pg = ppg;
            continue;
        }
        if used >= cap / 4 {
            return Ok(());
        }
        match merge_with_sibling(w, desc, cache, &mut path, leaf, cap)? {
            Some(parent) => pg = parent,
            None => return Ok(()),
        }
    }
}

/// `rebalance` at the root `pg`: an empty root empties the tree; a branch root with one child
/// gives way to that child, which is returned (to rebalance next); otherwise nothing changes.
#[inline]
fn shrink_root<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    pg: u64,
    leaf: bool,
    count: usize,
    first_child: u64,
) -> Result<Option<u64>> {
    // An empty root (leaf or branch) empties the tree; a branch root with one child gives way
    // to it.
    let next = match (leaf, count) {
        (_, 0) => 0,
        (false, 1) => first_child,
        _ => return Ok(None),
    };
    w.free(pg)?;
    if leaf {
        desc.leaf_pages -= 1;
    } else {
        desc.branch_pages -= 1;
    }
    cache.clear_tree(desc.id);
    desc.root = next;
    desc.depth = if next == 0 { 0 } else { desc.depth - 1 };
    Ok((next != 0).then_some(next))
}

/// `rebalance` of an underfull page, the last of `path`: merge it with a sibling (the right
/// page into the left) when the parent has two children or more and both fit in one page.
/// Returns the parent (to rebalance next), or `None` if nothing was merged.
#[inline]
fn merge_with_sibling<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    path: &mut Path,
    leaf: bool,
    cap: usize,
) -> Result<Option<u64>> {
    let (ppg, ci) = *path.last().ok_or_else(|| Error::Invalid("internal: rebalance past the root".into()))?;
    let (lpg, rpg, ri, sep) = {
        let parent = w.page(ppg)?;
        let pn = Node::new(parent);
        if pn.count() < 2 {
            return Ok(None);
        }
        let (li, ri) = if ci > 0 { (ci - 1, ci) } else { (0, 1) };
        (pn.child(li)?, pn.child(ri)?, ri, pn.key(ri)?.to_vec())
    };
    let mut right_entries = {
        let page = w.page(rpg)?;
        let n = Node::new(page);
        (0..n.count()).map(|i| n.entry(i).map(<[u8]>::to_vec)).collect::<Result<Vec<_>>>()?
    };
    if !leaf {
        // The right page's implicit first key becomes the separator from the parent.
        if let Some(first) = right_entries.first_mut() {
            let child = node::u64_at(first, 2)?;
            let mut e = vec![0u8; node::branch_entry_size(&sep)];
            node::write_branch_entry(&mut e, &sep, child);
            *first = e;
        }
    }
    let lused = Node::new(w.page(lpg)?).used();
    let rsize: usize = right_entries.iter().map(|e| e.len() + 2).sum();
    if lused + rsize > cap {
        return Ok(None);
    }
    {
        let lp = w.page_mut(lpg)?;
        node::compact(lp)?;
        let base = Node::new(lp).count();
        for (k, e) in right_entries.drain(..).enumerate() {
            node::insert_raw(lp, base + k, e.len(), |d| d.copy_from_slice(&e))?;
        }
    }
    w.free(rpg)?;
    if leaf {
        desc.leaf_pages -= 1;
    } else {
        desc.branch_pages -= 1;
    }
    node::remove(w.page_mut(ppg)?, ri)?;
    cache.clear_tree(desc.id);
    path.pop();
    Ok(Some(ppg))
}

/// Free every page of a tree (branches, leaves and overflow chains).
pub(crate) fn free_all<W: PageWrite + ?Sized>(w: &mut W, desc: &TreeDesc) -> Result<()> {
    if desc.root == 0 {
        return Ok(());
    }
    let mut pages = Vec::new();
    let mut overflows = Vec::new();
    let mut nested = Vec::new();
    let mut stack = vec![(desc.root, desc.depth - 1)];
    while let Some((pg, level)) = stack.pop() {
        pages.push(pg);
        if pages.len() as u64 > desc.branch_pages + desc.leaf_pages + 1 {
            return Err(Error::corrupted(Some(pg), "tree has more pages than its descriptor counts"));
        }
        let page = w.page(pg)?;
        check_kind(page, pg, level)?;
        let n = Node::new(page);
        for i in 0..n.count() {
            if level > 0 {
                stack.push((n.child(i)?, level - 1));
            } else {
                let (flags, v, _) = n.value(i)?;
                if flags == FLAG_OVERFLOW {
                    overflows.push(overflow::decode_ref(v)?.chain());
                } else if flags == node::FLAG_SUBTREE {
                    nested.push(TreeDesc::decode(v)?);
                }
            }
        }
    }
    for (len, first) in overflows {
        overflow::free(w, first, len)?;
    }
    for d in nested {
        free_all(w, &d)?;
    }
    for pg in pages {
        w.free(pg)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_point;

    #[test]
    fn split_points() {
        assert_eq!(split_point(&[10, 10, 10, 10], false, 100).unwrap(), 2);
        assert_eq!(split_point(&[10, 10, 10, 10], true, 100).unwrap(), 3);
        // A big entry pushes the point so that both halves fit.
        let m = split_point(&[40, 40, 45], false, 85).unwrap();
        assert!(m == 1 || m == 2);
        assert!(split_point(&[10], false, 100).is_err());
    }
}
