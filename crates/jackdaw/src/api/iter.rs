//! Ordered iteration: double-ended ranges and a cursor, over a read snapshot (owned, `'static`)
//! or over the write transaction (borrowed, seeing its own uncommitted changes).

use super::Bytes;
use crate::tree::cursor::Cursor as TreeCursor;
use crate::tree::node::{Node, FLAG_OVERFLOW};
use crate::tree::{overflow, PageRead, TreeDesc};
use crate::txn::{PageRef, PageTxn, Snapshot};
use crate::Result;
use std::ops::Bound;
use std::sync::Arc;

mod sealed {
    pub trait Sealed {}
}

/// Where an iterator reads pages from (a snapshot, or the write transaction).
pub trait Source: sealed::Sealed {
    #[doc(hidden)]
    fn pages(&self) -> &dyn PageReadDyn;
    #[doc(hidden)]
    fn bytes(&self, page: &PageRef<'_>, pgno: u64, start: usize, len: usize) -> Bytes;
}

/// Object-safe page reading (internal).
#[doc(hidden)]
pub trait PageReadDyn {
    fn page_dyn(&self, pgno: u64) -> Result<PageRef<'_>>;
    fn page_size_dyn(&self) -> usize;
}

impl<T: PageRead> PageReadDyn for T {
    fn page_dyn(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page(pgno)
    }
    fn page_size_dyn(&self) -> usize {
        self.page_size()
    }
}

impl PageRead for dyn PageReadDyn + '_ {
    fn page(&self, pgno: u64) -> Result<PageRef<'_>> {
        self.page_dyn(pgno)
    }
    fn page_size(&self) -> usize {
        self.page_size_dyn()
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
    fn bytes(&self, page: &PageRef<'_>, pgno: u64, start: usize, len: usize) -> Bytes {
        match page {
            PageRef::Borrowed(_) => Bytes::mapped(&self.0, pgno, start, len),
            PageRef::Held(b) => Bytes::held(b, start, len),
        }
    }
}

/// The write transaction as an iteration source (bytes are copied: its pages may change).
pub struct TxSource<'a>(pub(crate) &'a PageTxn);
impl sealed::Sealed for TxSource<'_> {}
impl Source for TxSource<'_> {
    fn pages(&self) -> &dyn PageReadDyn {
        self.0
    }
    fn bytes(&self, page: &PageRef<'_>, _pgno: u64, start: usize, len: usize) -> Bytes {
        Bytes::owned(page[start..start + len].to_vec())
    }
}

/// The entry under a tree cursor as (key, value).
fn entry<S: Source>(src: &S, c: &TreeCursor) -> Result<(Bytes, Bytes)> {
    let p = src.pages();
    let page = p.page(c.leaf())?;
    let n = Node::new(&page);
    let key = n.key(c.idx())?;
    let kstart = key.as_ptr() as usize - page.as_ptr() as usize;
    let k = src.bytes(&page, c.leaf(), kstart, key.len());
    let (flags, v, vstart) = n.value(c.idx())?;
    let v = if flags == FLAG_OVERFLOW {
        let (len, first) = overflow::decode_ref(v)?;
        Bytes::owned(overflow::read(p, first, len)?)
    } else {
        src.bytes(&page, c.leaf(), vstart, v.len())
    };
    Ok((k, v))
}

fn key_of<S: Source>(src: &S, c: &TreeCursor) -> Result<Vec<u8>> {
    let page = src.pages().page(c.leaf())?;
    Ok(Node::new(&page).key(c.idx())?.to_vec())
}

/// A double-ended iterator over a key range, yielding `Result<(key, value)>` in key order.
pub struct Iter<S: Source> {
    src: S,
    desc: TreeDesc,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    front: TreeCursor,
    back: TreeCursor,
    started: bool,
    done: bool,
}

/// A range over a read snapshot: owns what it needs (`'static`), so it can live beside the
/// `ReadTxn` it came from.
pub type Range = Iter<SnapSource>;
/// A range over the write transaction, seeing its uncommitted changes.
pub type WriteRange<'a> = Iter<TxSource<'a>>;

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v),
        Bound::Excluded(v) => Bound::Excluded(v),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<S: Source> Iter<S> {
    pub(crate) fn new(src: S, desc: TreeDesc, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Iter<S> {
        Iter { src, desc, lo, hi, front: TreeCursor::default(), back: TreeCursor::default(), started: false, done: false }
    }

    fn start(&mut self) -> Result<()> {
        self.started = true;
        let p = self.src.pages();
        self.front.seek(p, &self.desc, as_ref(&self.lo))?;
        self.back.seek_back(p, &self.desc, as_ref(&self.hi))?;
        if !self.front.is_valid() || !self.back.is_valid() || key_of(&self.src, &self.front)? > key_of(&self.src, &self.back)? {
            self.done = true;
        }
        Ok(())
    }

    fn same(&self) -> bool {
        self.front.leaf() == self.back.leaf() && self.front.idx() == self.back.idx()
    }

    fn step(&mut self, forward: bool) -> Option<Result<(Bytes, Bytes)>> {
        if !self.started {
            if let Err(e) = self.start() {
                self.done = true;
                return Some(Err(e));
            }
        }
        if self.done {
            return None;
        }
        let cur = if forward { &self.front } else { &self.back };
        let item = entry(&self.src, cur);
        if item.is_err() || self.same() {
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

/// A cursor over one tree: `seek`, then `next` / `prev`, reading the entry with `current`.
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
    pub fn first(&mut self) -> Result<()> {
        self.c.first(self.src.pages(), &self.desc)
    }
    pub fn last(&mut self) -> Result<()> {
        self.c.last(self.src.pages(), &self.desc)
    }
    /// The entry under the cursor, `None` past either end.
    pub fn current(&self) -> Result<Option<(Bytes, Bytes)>> {
        if !self.c.is_valid() {
            return Ok(None);
        }
        entry(&self.src, &self.c).map(Some)
    }
    /// Advance and return the new entry.
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

pub(crate) fn owned_bounds<R: std::ops::RangeBounds<K>, K: AsRef<[u8]> + ?Sized>(r: &R) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let f = |b: Bound<&K>| match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (f(r.start_bound()), f(r.end_bound()))
}
