//! The page layout of one tree, for tools (`jackdaw stat --trees`, `jackdaw tree`): every
//! branch and leaf page with its level and fill, every overflow chain, every nested tree of a
//! multi-value tree. Exposed through `jackdaw::internals` (no stability promise). Each page is
//! visited at most once; damage is an error, never a panic or a loop.

use super::node::{Node, FLAG_OVERFLOW};
use super::{multi, overflow, PageRead, TreeDesc, TreeKind};
use crate::data::page::{self, PageKind};
use crate::{Error, Result};
use std::collections::HashSet;

/// One branch or leaf page of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageInfo {
    /// The page number.
    pub pgno: u64,
    /// 0 for a leaf, the height above the leaves for a branch.
    pub level: u32,
    /// The page above it (`None` for the root).
    pub parent: Option<u64>,
    /// Entries on the page.
    pub entries: usize,
    /// Bytes of slots and live entries.
    pub used: usize,
    /// Bytes a page has for slots and entries (the page size less its headers): `used /
    /// capacity` is the fill.
    pub capacity: usize,
    /// Which nested tree (index into [`TreeLayout::nested`]) the page belongs to, `None` for the
    /// tree's own pages.
    pub nested: Option<usize>,
}

/// An overflow chain: a value stored outside the leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverflowChain {
    /// The leaf holding the reference.
    pub leaf: u64,
    /// The first page of the chain.
    pub first: u64,
    /// Pages of the chain.
    pub pages: u64,
    /// The value's length in bytes.
    pub len: u64,
}

/// A nested tree (the values of one key of a multi-value tree, past the inline list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NestedTree {
    /// The leaf of the outer tree holding its descriptor.
    pub leaf: u64,
    /// The key it belongs to.
    pub key: Vec<u8>,
    /// Values in it.
    pub entries: u64,
    /// Levels.
    pub depth: u32,
}

/// The layout of one tree.
#[derive(Debug, Clone, Default)]
pub struct TreeLayout {
    /// The page size.
    pub page_size: usize,
    /// Whether the tree is multi-value.
    pub multi: bool,
    /// Entries (a multi-value tree: values), from the descriptor.
    pub entries: u64,
    /// Levels of the tree (0 when empty).
    pub depth: u32,
    /// Branch and leaf pages, the tree's own first (root, then level by level), then each nested
    /// tree's.
    pub pages: Vec<PageInfo>,
    /// Overflow chains.
    pub overflow: Vec<OverflowChain>,
    /// Nested trees of a multi-value tree.
    pub nested: Vec<NestedTree>,
    /// Keys of a multi-value tree whose values are an inline list in the leaf.
    pub nested_lists: u64,
}

/// The layout of the tree described by `desc`.
pub(crate) fn layout<P: PageRead + ?Sized>(p: &P, desc: &TreeDesc, page_size: usize) -> Result<TreeLayout> {
    let mut out = TreeLayout {
        page_size,
        multi: desc.kind() == TreeKind::Multi,
        entries: desc.entries,
        depth: desc.depth,
        ..TreeLayout::default()
    };
    let mut seen = HashSet::new();
    walk(p, desc, None, &mut out, &mut seen)?;
    Ok(out)
}

fn walk<P: PageRead + ?Sized>(
    p: &P,
    desc: &TreeDesc,
    nested: Option<usize>,
    out: &mut TreeLayout,
    seen: &mut HashSet<u64>,
) -> Result<()> {
    if desc.root == 0 {
        return Ok(());
    }
    let multi = out.multi && nested.is_none();
    // Breadth first, so pages come level by level.
    let mut queue = std::collections::VecDeque::from([(desc.root, desc.depth.saturating_sub(1), None::<u64>)]);
    while let Some((pg, level, parent)) = queue.pop_front() {
        if !seen.insert(pg) {
            return Err(Error::corrupted(Some(pg), "page reached twice in one tree"));
        }
        let page = p.page(pg)?;
        let want = if level == 0 { PageKind::Leaf } else { PageKind::Branch };
        let n = Node::new(page);
        if page::page_kind(page) != Some(want) || n.level() as u32 != level {
            return Err(Error::corrupted(Some(pg), format!("expected a {want:?} page at level {level}")));
        }
        n.checked_upper()?;
        let count = n.count();
        out.pages.push(PageInfo {
            pgno: pg,
            level,
            parent,
            entries: count,
            used: n.used(),
            capacity: out.page_size - super::node::SLOTS,
            nested,
        });
        for i in 0..count {
            if level > 0 {
                queue.push_back((n.child(i)?, level - 1, Some(pg)));
                continue;
            }
            let (flags, v, _) = n.value(i)?;
            if flags == FLAG_OVERFLOW {
                let r = overflow::decode_ref(v)?;
                out.overflow.push(OverflowChain {
                    leaf: pg,
                    first: r.first,
                    pages: overflow::pages_for(r.chain_len(), out.page_size),
                    len: r.len,
                });
            } else if multi && flags == multi::FLAG_NESTED {
                out.nested_lists += 1;
            } else if multi && flags == multi::FLAG_SUBTREE {
                let d = TreeDesc::decode(v)?;
                out.nested.push(NestedTree { leaf: pg, key: n.key(i)?.to_vec(), entries: d.entries, depth: d.depth });
                let idx = out.nested.len() - 1;
                walk(p, &d, Some(idx), out, seen)?;
            }
        }
    }
    Ok(())
}
