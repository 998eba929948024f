//! Ordered iteration: double-ended ranges and a cursor, over a read snapshot (owned, `'static`)
//! or over the write transaction (borrowed, seeing its own uncommitted changes).

use super::Bytes;
use crate::tree::cursor::Cursor as TreeCursor;
use crate::tree::multi::{list_count, list_value_at, walk_list, FLAG_NESTED, FLAG_SUBTREE};
use crate::tree::node::{Node, FLAG_OVERFLOW};
use crate::tree::{overflow, PageRead, TreeDesc, TreeKind};
use crate::txn::{PageRef, PageTxn, Snapshot};
use crate::Result;
use std::ops::Bound;
use std::sync::Arc;

mod sealed {
    pub trait Sealed {}
}

/// Where an iterator reads pages from (a snapshot, or the write transaction).
pub trait Source: sealed::Sealed + Clone {
    #[doc(hidden)]
    fn pages(&self) -> &dyn PageReadDyn;
    /// `b`, bytes of a page this source's `pages` returned, as a handle that may outlive the
    /// borrow (held in place for a snapshot, copied for the write transaction).
    #[doc(hidden)]
    fn bytes(&self, b: &[u8]) -> Bytes;
}

/// Object-safe page reading (internal).
#[doc(hidden)]
pub trait PageReadDyn {
    fn page_dyn(&self, pgno: u64) -> Result<PageRef<'_>>;
    fn page_whole_dyn(&self, pgno: u64) -> Result<PageRef<'_>>;
    fn page_size_dyn(&self) -> usize;
    fn read_run_dyn(
        &self,
        pages: (u64, usize),
        split: (usize, usize, usize),
        out: &mut Vec<u8>,
        laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool>;
}

impl<T: PageRead> PageReadDyn for T {
    fn page_dyn(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page(pgno)
    }
    fn page_whole_dyn(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page_whole(pgno)
    }
    fn page_size_dyn(&self) -> usize {
        self.page_size()
    }
    fn read_run_dyn(
        &self,
        pages: (u64, usize),
        split: (usize, usize, usize),
        out: &mut Vec<u8>,
        laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        self.read_run(pages, split, out, laid_out)
    }
}

impl PageRead for dyn PageReadDyn + '_ {
    fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page_dyn(pgno)
    }
    fn page_whole(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page_whole_dyn(pgno)
    }
    fn page_size(&self) -> usize {
        self.page_size_dyn()
    }
    fn read_run(
        &self,
        pages: (u64, usize),
        split: (usize, usize, usize),
        out: &mut Vec<u8>,
        laid_out: &dyn Fn(usize, &[u8]) -> bool,
    ) -> Result<bool> {
        self.read_run_dyn(pages, split, out, laid_out)
    }
}

/// A read snapshot as an iteration source (zero-copy bytes).
#[derive(Clone)]
pub struct SnapSource(pub(crate) Arc<Snapshot>);
impl sealed::Sealed for SnapSource {}
impl Source for SnapSource {
    fn pages(&self) -> &dyn PageReadDyn {
        &*self.0
    }
    #[inline]
    fn bytes(&self, b: &[u8]) -> Bytes {
        Bytes::mapped(&self.0, b)
    }
}

/// The write transaction as an iteration source (bytes are copied: its pages may change).
#[derive(Clone, Copy)]
pub struct TxSource<'a>(pub(crate) &'a PageTxn);
impl sealed::Sealed for TxSource<'_> {}
impl Source for TxSource<'_> {
    fn pages(&self) -> &dyn PageReadDyn {
        self.0
    }
    fn bytes(&self, b: &[u8]) -> Bytes {
        Bytes::owned(b.to_vec())
    }
}

/// What a leaf entry yields: a (key, value) pair, or (multi-value trees) a key's values.
enum Item<S: Source> {
    Pair(Bytes, Bytes),
    Group(Bytes, Values<S>),
}

/// The entry under a tree cursor.
fn entry<S: Source>(src: &S, c: &TreeCursor, multi: bool) -> Result<Item<S>> {
    let p = src.pages();
    let page = p.page(c.leaf())?;
    let n = Node::new(page);
    let k = src.bytes(n.key(c.idx())?);
    let (flags, v, _) = n.value(c.idx())?;
    if multi {
        let vals = Values::from_stored(src, c.leaf(), flags, v)?;
        return Ok(Item::Group(k, vals));
    }
    let v = if flags == FLAG_OVERFLOW { overflow_bytes(src, &overflow::decode_ref(v)?)? } else { src.bytes(v) };
    Ok(Item::Pair(k, v))
}

/// The overflow value `r` refers to. A value that fits on one page (with no tail in the leaf)
/// is a view of that page, like an inline value (no copy: values of ~1–4 KiB, above the inline
/// limit, are common); a longer one is copied out of its chain (and leaf).
pub(crate) fn overflow_bytes<S: Source>(src: &S, r: &overflow::Ref<'_>) -> Result<Bytes> {
    let p = src.pages();
    let (len, first) = (r.len, r.first);
    if !r.tail.is_empty() || overflow::pages_for(len, p.page_size()) != 1 {
        return Ok(Bytes::owned(overflow::read(p, r)?));
    }
    let page = p.page(first)?;
    let (next, on_page) = overflow::link(page, first)?;
    if next != 0 || on_page as u64 != len {
        return Err(crate::Error::corrupted(
            Some(first),
            format!("one-page overflow value holds {on_page} bytes (next {next}), the leaf says {len}"),
        ));
    }
    Ok(src.bytes(&page[overflow::DATA_AT..overflow::DATA_AT + on_page]))
}

/// The values of one key of a multi-value tree, in order (double-ended, seekable).
pub struct Values<S: Source> {
    repr: ValuesRepr<S>,
}

enum ValuesRepr<S: Source> {
    /// A nested list read in place: `raw` is the whole encoded list (`tree::multi`), already
    /// walked; the values `front..back` are not yet stepped over; `pos` is where the value
    /// `front` starts in `raw` while the list is stepped forward only; `offs` is each value's
    /// (start, len), decoded when first needed (a step back or a seek).
    List {
        raw: Bytes,
        front: usize,
        back: usize,
        pos: usize,
        offs: Vec<(u32, u32)>,
    },
    Tree {
        src: S,
        desc: TreeDesc,
        it: Box<Iter<S>>,
    },
}

impl<S: Source> Values<S> {
    pub(crate) fn empty() -> Values<S> {
        Values { repr: ValuesRepr::List { raw: Bytes::owned(Vec::new()), front: 0, back: 0, pos: 0, offs: Vec::new() } }
    }

    /// The values of a leaf entry of page `pgno` with `flags` and stored value `v` (bytes of a
    /// page `src` returned).
    pub(crate) fn from_stored(src: &S, pgno: u64, flags: u8, v: &[u8]) -> Result<Values<S>> {
        match flags {
            FLAG_NESTED => {
                let n = walk_list(v, |_, _| ())?;
                Ok(Values { repr: ValuesRepr::List { raw: src.bytes(v), front: 0, back: n, pos: 4, offs: Vec::new() } })
            }
            FLAG_SUBTREE => {
                let desc = TreeDesc::decode(v)?;
                let it = Box::new(Iter::new(src.clone(), desc, Bound::Unbounded, Bound::Unbounded));
                Ok(Values { repr: ValuesRepr::Tree { src: src.clone(), desc, it } })
            }
            f => Err(crate::Error::corrupted(Some(pgno), format!("multi-value entry with flags {f}"))),
        }
    }

    /// Move the front to the first value >= `value` (the back end is reset to the last value).
    pub fn seek(&mut self, value: impl AsRef<[u8]>) {
        let value = value.as_ref();
        match &mut self.repr {
            ValuesRepr::List { raw, front, back, offs, .. } => {
                let all = offsets(raw, offs);
                let r = raw.as_ref();
                *front = all.partition_point(|&(s, l)| &r[s as usize..(s + l) as usize] < value);
                *back = all.len();
            }
            ValuesRepr::Tree { src, desc, it } => {
                **it = Iter::new(src.clone(), *desc, Bound::Included(value.to_vec()), Bound::Unbounded);
            }
        }
    }

    fn step(&mut self, forward: bool) -> Option<Result<Bytes>> {
        match &mut self.repr {
            ValuesRepr::List { raw, front, back, pos, offs } => {
                if *front >= *back {
                    return None;
                }
                let (start, len) = if forward && offs.is_empty() {
                    // Stepping forward only: read the value at `pos` (the list was walked).
                    let Some((start, len)) = list_value_at(raw, *pos) else {
                        return Some(Err(cut_list()));
                    };
                    *pos = start + len;
                    (start, len)
                } else {
                    let at = if forward { *front } else { *back - 1 };
                    let Some(&(s, l)) = offsets(raw, offs).get(at) else {
                        return Some(Err(cut_list()));
                    };
                    (s as usize, l as usize)
                };
                if forward {
                    *front += 1;
                } else {
                    *back -= 1;
                }
                Some(Ok(raw.sub(start, len)))
            }
            ValuesRepr::Tree { it, .. } => {
                let x = if forward { it.next() } else { it.next_back() };
                x.map(|r| r.map(|(k, _)| k))
            }
        }
    }
}

/// A nested list shorter than the walk that checked it found (never, for bytes that do not
/// change: the steps still read through checked bounds).
#[cold]
fn cut_list() -> crate::Error {
    crate::Error::corrupted(None, "nested value list: cut value")
}

/// Each value's (start, len) in the nested list `raw` (walked when the list was read), decoded
/// into `offs` the first time.
fn offsets<'a>(raw: &Bytes, offs: &'a mut Vec<(u32, u32)>) -> &'a [(u32, u32)] {
    if offs.is_empty() {
        // Cannot fail: the list was walked whole when it was read.
        let _ = walk_list(raw, |s, l| offs.push((s as u32, l as u32)));
    }
    offs
}

impl<S: Source> Iterator for Values<S> {
    type Item = Result<Bytes>;
    fn next(&mut self) -> Option<Result<Bytes>> {
        self.step(true)
    }
}

impl<S: Source> DoubleEndedIterator for Values<S> {
    fn next_back(&mut self) -> Option<Result<Bytes>> {
        self.step(false)
    }
}

fn pair<S: Source>(item: Result<Item<S>>) -> Result<(Bytes, Bytes)> {
    match item? {
        Item::Pair(k, v) => Ok((k, v)),
        Item::Group(..) => Err(crate::Error::corrupted(None, "multi-value group in a plain tree")),
    }
}

fn key_of<S: Source>(src: &S, c: &TreeCursor) -> Result<Vec<u8>> {
    let page = src.pages().page(c.leaf())?;
    Ok(Node::new(page).key(c.idx())?.to_vec())
}

/// A double-ended iterator over a key range, yielding `Result<(key, value)>` in key order.
pub struct Iter<S: Source> {
    src: S,
    desc: TreeDesc,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front: TreeCursor,
    back: TreeCursor,
    /// Whether each end has been positioned (`[back, front]`). An end is sought only when it is
    /// first stepped: a range read forward only never descends to its upper bound.
    started: [bool; 2],
    /// Per end (`[back, front]`), a leaf whose entries are all inside the far bound, so that an
    /// end stepping alone checks the bound once per leaf, not once per entry.
    inside_leaf: [Option<u64>; 2],
    done: bool,
    multi: bool,
    front_inner: Option<(Bytes, Values<S>)>,
    back_inner: Option<(Bytes, Values<S>)>,
}

/// A range over a read snapshot: owns what it needs (`'static`), so it can live beside the
/// `ReadTxn` it came from.
pub type Range = Iter<SnapSource>;
/// A range over the write transaction, seeing its uncommitted changes.
pub type WriteRange<'a> = Iter<TxSource<'a>>;
/// A cursor of a read transaction (`ReadTxn::cursor`).
pub type ReadCursor = Cursor<SnapSource>;
/// A cursor of the write transaction (`WriteTxn::cursor`), seeing its changes.
pub type WriteCursor<'a> = Cursor<TxSource<'a>>;
/// The values of one key of a multi-value tree, in a read transaction (`ReadTxn::multi_get`).
pub type ReadValues = Values<SnapSource>;
/// The values of one key of a multi-value tree, in the write transaction (`WriteTxn::multi_get`).
pub type WriteValues<'a> = Values<TxSource<'a>>;

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v),
        Bound::Excluded(v) => Bound::Excluded(v),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<S: Source> Iter<S> {
    pub(crate) fn new(src: S, desc: TreeDesc, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Iter<S> {
        let multi = desc.kind() == TreeKind::Multi;
        Iter {
            src,
            desc,
            lo,
            hi,
            front: TreeCursor::default(),
            back: TreeCursor::default(),
            started: [false; 2],
            inside_leaf: [None; 2],
            done: false,
            multi,
            front_inner: None,
            back_inner: None,
        }
    }

    /// Position one end (the first step from it). When the other end is positioned already
    /// (a range stepped from both ends), the range is empty if the two have crossed.
    fn start(&mut self, forward: bool) -> Result<()> {
        self.started[forward as usize] = true;
        let p = self.src.pages();
        if forward {
            self.front.seek(p, &self.desc, as_ref(&self.lo))?;
        } else {
            self.back.seek_back(p, &self.desc, as_ref(&self.hi))?;
        }
        let c = if forward { &self.front } else { &self.back };
        // Nothing at this end, or the two ends crossed (both positioned).
        self.done = !c.is_valid()
            || (self.started[!forward as usize]
                && (!self.front.is_valid()
                    || !self.back.is_valid()
                    || key_of(&self.src, &self.front)? > key_of(&self.src, &self.back)?));
        Ok(())
    }

    /// Whether the entry under the end `forward` is inside the range's far bound (the upper one
    /// going forward). Only needed while the other end is not positioned: otherwise the two
    /// ends meeting ends the range.
    fn inside(&mut self, forward: bool) -> Result<bool> {
        let far = if forward { &self.hi } else { &self.lo };
        if matches!(far, Bound::Unbounded) {
            return Ok(true);
        }
        let c = if forward { &self.front } else { &self.back };
        if self.inside_leaf[forward as usize] == Some(c.leaf()) {
            return Ok(true);
        }
        let page = self.src.pages().page(c.leaf())?;
        let n = Node::new(page);
        let within = |key: &[u8]| -> bool {
            if forward {
                match as_ref(&self.hi) {
                    Bound::Included(h) => key <= h,
                    Bound::Excluded(h) => key < h,
                    Bound::Unbounded => true,
                }
            } else {
                match as_ref(&self.lo) {
                    Bound::Included(l) => key >= l,
                    Bound::Excluded(l) => key > l,
                    Bound::Unbounded => true,
                }
            }
        };
        let count = n.count();
        let far = if forward { count.checked_sub(1) } else { Some(0) };
        if let Some(far) = far {
            if within(n.key(far)?) {
                self.inside_leaf[forward as usize] = Some(c.leaf());
                return Ok(true);
            }
        }
        Ok(within(n.key(c.idx())?))
    }

    fn same(&self) -> bool {
        self.front.leaf() == self.back.leaf() && self.front.idx() == self.back.idx()
    }

    /// The next leaf entry from one end.
    fn outer(&mut self, forward: bool) -> Option<Result<Item<S>>> {
        let multi = self.multi;
        self.advance(forward, |src, c| entry(src, c, multi))
    }

    /// Read the leaf entry at one end with `read`, then step that end inward.
    fn advance<T>(&mut self, forward: bool, read: impl Fn(&S, &TreeCursor) -> Result<T>) -> Option<Result<T>> {
        if !self.started[forward as usize] && !self.done {
            if let Err(e) = self.start(forward) {
                self.done = true;
                return Some(Err(e));
            }
        }
        if self.done {
            return None;
        }
        let both = self.started[!forward as usize];
        if !both {
            match self.inside(forward) {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        let cur = if forward { &self.front } else { &self.back };
        let item = read(&self.src, cur);
        if item.is_err() || (both && self.same()) {
            self.done = true;
            return Some(item);
        }
        let p = self.src.pages();
        let moved = if forward { self.front.next(p) } else { self.back.prev(p) };
        if let Err(e) = moved {
            self.done = true;
            return Some(Err(e));
        }
        let c = if forward { &self.front } else { &self.back };
        if !c.is_valid() {
            self.done = true;
        }
        Some(item)
    }

    fn step(&mut self, forward: bool) -> Option<Result<(Bytes, Bytes)>> {
        if !self.multi {
            return self.outer(forward).map(pair);
        }
        loop {
            let side = if forward { &mut self.front_inner } else { &mut self.back_inner };
            if let Some((k, vals)) = side {
                match vals.step(forward) {
                    Some(v) => return Some(v.map(|v| (k.clone(), v))),
                    None => *side = None,
                }
            }
            match self.outer(forward) {
                Some(Ok(Item::Group(k, vals))) => {
                    let side = if forward { &mut self.front_inner } else { &mut self.back_inner };
                    *side = Some((k, vals));
                }
                Some(Ok(Item::Pair(..))) => {
                    return Some(Err(crate::Error::corrupted(None, "plain entry in a multi-value tree")))
                }
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    // The other end may hold the last key's remaining values.
                    let other = if forward { &mut self.back_inner } else { &mut self.front_inner };
                    let (k, vals) = other.as_mut()?;
                    return match vals.step(forward) {
                        Some(v) => Some(v.map(|v| (k.clone(), v))),
                        None => {
                            *other = None;
                            None
                        }
                    };
                }
            }
        }
    }
}

impl<S: Source> Iterator for Iter<S> {
    type Item = Result<(Bytes, Bytes)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.step(true)
    }
}

impl<S: Source> DoubleEndedIterator for Iter<S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(false)
    }
}

/// The key under a tree cursor (zero-copy from a snapshot).
fn key_bytes<S: Source>(src: &S, c: &TreeCursor) -> Result<Bytes> {
    let page = src.pages().page(c.leaf())?;
    Ok(src.bytes(Node::new(page).key(c.idx())?))
}

/// How many values the entry under a tree cursor stands for: 1 in a plain tree, the key's value
/// count in a multi-value tree (O(1): a nested list's header or a nested tree's descriptor).
fn value_count<S: Source>(src: &S, c: &TreeCursor, multi: bool) -> Result<u64> {
    if !multi {
        return Ok(1);
    }
    let page = src.pages().page(c.leaf())?;
    let (flags, v, _) = Node::new(page).value(c.idx())?;
    match flags {
        FLAG_NESTED => list_count(v),
        FLAG_SUBTREE => Ok(TreeDesc::decode(v)?.entries),
        f => Err(crate::Error::corrupted(Some(c.leaf()), format!("multi-value entry with flags {f}"))),
    }
}

/// A double-ended iterator over the distinct keys of a key range, in key order: one item per
/// key, also in a multi-value tree (whatever its number of values). Values are not read.
pub struct KeyIter<S: Source> {
    it: Iter<S>,
}

/// The distinct keys of a range of a read snapshot (`ReadTxn::keys`); owns what it needs
/// (`'static`), like [`Range`].
pub type Keys = KeyIter<SnapSource>;
/// The distinct keys of a range of the write transaction (`WriteTxn::keys`), seeing its changes.
pub type WriteKeys<'a> = KeyIter<TxSource<'a>>;

impl<S: Source> KeyIter<S> {
    pub(crate) fn new(src: S, desc: TreeDesc, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> KeyIter<S> {
        KeyIter { it: Iter::new(src, desc, lo, hi) }
    }
}

impl<S: Source> Iterator for KeyIter<S> {
    type Item = Result<Bytes>;
    fn next(&mut self) -> Option<Result<Bytes>> {
        self.it.advance(true, key_bytes)
    }
}

impl<S: Source> DoubleEndedIterator for KeyIter<S> {
    fn next_back(&mut self) -> Option<Result<Bytes>> {
        self.it.advance(false, key_bytes)
    }
}

/// The number of values of the keys in a range (entries, in a plain tree): the tree's entry
/// count when unbounded, else one step per distinct key, reading each key's count in O(1).
pub(crate) fn count_range<S: Source>(src: S, desc: TreeDesc, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Result<u64> {
    if matches!((&lo, &hi), (Bound::Unbounded, Bound::Unbounded)) {
        return Ok(desc.entries);
    }
    let mut it = Iter::new(src, desc, lo, hi);
    let multi = it.multi;
    let mut n = 0u64;
    while let Some(c) = it.advance(true, |src, c| value_count(src, c, multi)) {
        n += c?;
    }
    Ok(n)
}

/// A cursor over one tree: `seek`, then `next` / `prev`, reading the entry with `current`.
///
/// A step past either end leaves the cursor unpositioned: `next` and `prev` then return `None`
/// until `first`, `last`, `seek` or `seek_back` places it again (an LMDB cursor stepped past the
/// last entry steps back onto it; this one does not). A new cursor is unpositioned too.
pub struct Cursor<S: Source> {
    src: S,
    desc: TreeDesc,
    c: TreeCursor,
}

impl<S: Source> Cursor<S> {
    pub(crate) fn new(src: S, desc: TreeDesc) -> Cursor<S> {
        Cursor { src, desc, c: TreeCursor::default() }
    }
    /// Move to the first entry with key >= `key`.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.c.seek(self.src.pages(), &self.desc, Bound::Included(key.as_ref()))
    }
    /// Move to the last entry with key <= `key`.
    pub fn seek_back(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.c.seek_back(self.src.pages(), &self.desc, Bound::Included(key.as_ref()))
    }
    /// Move to the first entry.
    pub fn first(&mut self) -> Result<()> {
        self.c.first(self.src.pages(), &self.desc)
    }
    /// Move to the last entry.
    pub fn last(&mut self) -> Result<()> {
        self.c.last(self.src.pages(), &self.desc)
    }
    /// The entry under the cursor, `None` past either end.
    pub fn current(&self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.c.is_valid() {
            return Ok(None);
        }
        pair(entry(&self.src, &self.c, false)).map(Some)
    }
    /// Advance and return the new entry. (Not `Iterator::next`: a step can fail.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        self.c.next(self.src.pages())?;
        self.current()
    }
    /// Step back and return the new entry.
    pub fn prev(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        self.c.prev(self.src.pages())?;
        self.current()
    }
}

/// Bounds of `prefix`: [prefix, next prefix).
pub(crate) fn prefix_bounds(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let lo = Bound::Included(prefix.to_vec());
    let mut hi = prefix.to_vec();
    while let Some(last) = hi.last_mut() {
        if *last < 0xff {
            *last += 1;
            return (lo, Bound::Excluded(hi));
        }
        hi.pop();
    }
    (lo, Bound::Unbounded)
}

/// Bounds of a key range for [`ReadTxn::range`](crate::ReadTxn::range) and
/// [`WriteTxn::range`](crate::WriteTxn::range): `..`, `a..`, `a..b`, `a..=b`, `..b`, `..=b`
/// and `(Bound, Bound)` pairs over any byte-like key (`&[u8]`, `Vec<u8>`, `&[u8; N]`, `&str`,
/// `String`, [`Bytes`]).
///
/// `K` is the bound's key type. It is inferred, also for `..` (which names no key type: it
/// implements `KeyRange<[u8]>` only), so `rtx.range(&tree, ..)` needs no annotation; the older
/// spelling `rtx.range::<[u8], _>(&tree, ..)` still compiles.
pub trait KeyRange<K: ?Sized> {
    /// The (lower, upper) bounds as owned bytes.
    fn key_bounds(&self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>);
}

fn owned<K: AsRef<[u8]> + ?Sized>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl KeyRange<[u8]> for std::ops::RangeFull {
    fn key_bounds(&self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

macro_rules! key_range {
    ($($t:ty),*) => {$(
        impl<K: AsRef<[u8]>> KeyRange<K> for $t {
            fn key_bounds(&self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
                owned_bounds(self)
            }
        }
    )*};
}
key_range!(
    std::ops::Range<K>,
    std::ops::RangeFrom<K>,
    std::ops::RangeTo<K>,
    std::ops::RangeInclusive<K>,
    std::ops::RangeToInclusive<K>,
    (Bound<K>, Bound<K>)
);

pub(crate) fn owned_bounds<R: std::ops::RangeBounds<K>, K: AsRef<[u8]> + ?Sized>(
    r: &R,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (owned(r.start_bound()), owned(r.end_bound()))
}
