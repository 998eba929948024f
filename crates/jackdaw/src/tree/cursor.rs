//! A position in a tree: the branch path and the leaf entry, moved one entry at a time.
//!
//! A cursor reads a state that does not change under it (a snapshot, or the write transaction
//! borrowed shared while the cursor lives), so it keeps the entry count of its leaf: a step
//! inside a leaf reads no page.

use super::btree::{descend_to, Path};
use super::node::Node;
use super::{PageRead, TreeDesc};
use crate::Result;
use std::ops::Bound;

#[derive(Clone, Default)]
pub(crate) struct Cursor {
    path: Path,
    leaf: u64,
    idx: usize,
    /// Entries in `leaf`.
    count: usize,
    valid: bool,
}

impl Cursor {
    pub(crate) fn is_valid(&self) -> bool {
        self.valid
    }
    pub(crate) fn leaf(&self) -> u64 {
        self.leaf
    }
    pub(crate) fn idx(&self) -> usize {
        self.idx
    }

    /// Descend to the leaf for `k`, recording the path: where `k` is (or would go) in that leaf,
    /// and the leaf's entry count.
    fn locate<P: PageRead + ?Sized>(
        &mut self,
        p: &P,
        desc: &TreeDesc,
        k: &[u8],
    ) -> Result<(std::result::Result<usize, usize>, usize)> {
        self.path.clear();
        let mut t = 0;
        let (leaf, page) = descend_to(p, desc, k, Some(&mut self.path), None, &mut t)?;
        self.leaf = leaf;
        let n = Node::new(page);
        self.count = n.count();
        Ok((n.search_loaded(k)?, self.count))
    }

    /// Position at the first entry >= (or >) `key`; invalid if none.
    pub(crate) fn seek<P: PageRead + ?Sized>(&mut self, p: &P, desc: &TreeDesc, key: Bound<&[u8]>) -> Result<()> {
        self.valid = false;
        if desc.root == 0 {
            return Ok(());
        }
        let k = match key {
            Bound::Unbounded => return self.first(p, desc),
            Bound::Included(k) | Bound::Excluded(k) => k,
        };
        let (found, count) = self.locate(p, desc, k)?;
        self.idx = match found {
            Ok(i) if matches!(key, Bound::Excluded(_)) => i + 1,
            Ok(i) | Err(i) => i,
        };
        self.valid = true;
        if self.idx >= count {
            return self.next_leaf(p);
        }
        Ok(())
    }

    /// Position at the last entry <= (or <) `key`; invalid if none.
    pub(crate) fn seek_back<P: PageRead + ?Sized>(&mut self, p: &P, desc: &TreeDesc, key: Bound<&[u8]>) -> Result<()> {
        self.valid = false;
        if desc.root == 0 {
            return Ok(());
        }
        let k = match key {
            Bound::Unbounded => return self.last(p, desc),
            Bound::Included(k) | Bound::Excluded(k) => k,
        };
        let (found, _) = self.locate(p, desc, k)?;
        let pos = match found {
            Ok(i) if matches!(key, Bound::Included(_)) => Some(i),
            Ok(i) | Err(i) => i.checked_sub(1),
        };
        self.valid = true;
        match pos {
            Some(i) => {
                self.idx = i;
                Ok(())
            }
            None => self.prev_leaf(p),
        }
    }

    pub(crate) fn first<P: PageRead + ?Sized>(&mut self, p: &P, desc: &TreeDesc) -> Result<()> {
        self.edge(p, desc, false)
    }

    pub(crate) fn last<P: PageRead + ?Sized>(&mut self, p: &P, desc: &TreeDesc) -> Result<()> {
        self.edge(p, desc, true)
    }

    fn edge<P: PageRead + ?Sized>(&mut self, p: &P, desc: &TreeDesc, last: bool) -> Result<()> {
        self.valid = false;
        self.path.clear();
        if desc.root == 0 {
            return Ok(());
        }
        let mut pg = desc.root;
        for _ in 1..desc.depth {
            let page = p.page(pg)?;
            let n = Node::new(page);
            let ci = if last { n.count().saturating_sub(1) } else { 0 };
            self.path.push((pg, ci));
            pg = n.child(ci)?;
        }
        self.leaf = pg;
        let count = Node::new(p.page(pg)?).count();
        self.count = count;
        self.valid = true;
        if count == 0 {
            self.valid = false;
            return Ok(());
        }
        self.idx = if last { count - 1 } else { 0 };
        Ok(())
    }

    /// Move to the next entry; invalid past the end.
    pub(crate) fn next<P: PageRead + ?Sized>(&mut self, p: &P) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if self.idx + 1 < self.count {
            self.idx += 1;
            return Ok(());
        }
        self.next_leaf(p)
    }

    fn next_leaf<P: PageRead + ?Sized>(&mut self, p: &P) -> Result<()> {
        // Climb to the first ancestor with a next child, then take leftmost children down.
        let mut depth_down = 0;
        loop {
            let Some((pg, ci)) = self.path.pop() else {
                self.valid = false;
                return Ok(());
            };
            let page = p.page(pg)?;
            let n = Node::new(page);
            if ci + 1 < n.count() {
                self.path.push((pg, ci + 1));
                let mut child = n.child(ci + 1)?;
                while depth_down > 0 {
                    let cp = p.page(child)?;
                    let cn = Node::new(cp);
                    self.path.push((child, 0));
                    child = cn.child(0)?;
                    depth_down -= 1;
                }
                self.leaf = child;
                self.idx = 0;
                // A cursor stepping into a leaf goes on to read its entries: start every line
                // loading at once (a scan's misses overlap instead of following one another).
                self.count = Node::new(p.page_whole(child)?).count();
                if self.count == 0 {
                    return self.next_leaf(p);
                }
                return Ok(());
            }
            depth_down += 1;
        }
    }

    /// Move to the previous entry; invalid before the start.
    pub(crate) fn prev<P: PageRead + ?Sized>(&mut self, p: &P) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if self.idx > 0 {
            self.idx -= 1;
            return Ok(());
        }
        self.prev_leaf(p)
    }

    fn prev_leaf<P: PageRead + ?Sized>(&mut self, p: &P) -> Result<()> {
        let mut depth_down = 0;
        loop {
            let Some((pg, ci)) = self.path.pop() else {
                self.valid = false;
                return Ok(());
            };
            if ci > 0 {
                let page = p.page(pg)?;
                let n = Node::new(page);
                self.path.push((pg, ci - 1));
                let mut child = n.child(ci - 1)?;
                while depth_down > 0 {
                    let cp = p.page(child)?;
                    let cn = Node::new(cp);
                    let last = cn.count().saturating_sub(1);
                    self.path.push((child, last));
                    child = cn.child(last)?;
                    depth_down -= 1;
                }
                self.leaf = child;
                self.count = Node::new(p.page_whole(child)?).count();
                if self.count == 0 {
                    return self.prev_leaf(p);
                }
                self.idx = self.count - 1;
                return Ok(());
            }
            depth_down += 1;
        }
    }
}
