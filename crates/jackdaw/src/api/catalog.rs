//! The root tree: tree names mapped to their descriptors, plus the meta page that holds the root
//! tree's own descriptor.

use super::Tree;
use crate::tree::btree::{self, LeafCache};
use crate::tree::cursor::Cursor;
use crate::tree::node::Node;
use crate::tree::{PageRead, TreeDesc, TreeKind};
use crate::{Error, Result};
use std::ops::Bound;

/// Id of the root tree in leaf caches.
pub(crate) const ROOT_ID: u64 = 0;

/// Longest tree name: a name and its 64-byte descriptor must fit one leaf entry (1,953 bytes at
/// 4 KiB pages).
pub fn max_tree_name(page_size: usize) -> usize {
    crate::tree::node::max_entry(page_size) - crate::tree::node::LEAF_ENTRY_HEADER - crate::tree::DESC_LEN
}

pub(crate) fn check_name(name: &str, page_size: usize) -> Result<()> {
    if name.is_empty() {
        return Err(Error::Invalid("a tree name cannot be empty".into()));
    }
    let max = max_tree_name(page_size);
    if name.len() > max {
        return Err(Error::TreeNameTooLong { len: name.len(), max });
    }
    Ok(())
}

/// The descriptor stored under `name`. Through a cache of its own, not the transaction's: a
/// catalog is a page or a few, looked up once per tree a transaction uses, and its descent
/// would otherwise count as the transaction's first (`LeafCache`'s locality rule) and take a
/// slot from the leaves of the data.
pub(crate) fn lookup<P: PageRead + ?Sized>(
    p: &P,
    root: &TreeDesc,
    name: &str,
    touched: &mut u64,
) -> Result<Option<TreeDesc>> {
    match btree::get(p, root, &mut LeafCache::new(1), name.as_bytes(), touched)? {
        Some(f) => {
            let (_, v) = f.value()?;
            Ok(Some(TreeDesc::decode(v)?))
        }
        None => Ok(None),
    }
}

/// Every (name, descriptor) in name order.
pub(crate) fn list<P: PageRead + ?Sized>(p: &P, root: &TreeDesc) -> Result<Vec<(String, TreeDesc)>> {
    let mut out = Vec::new();
    let mut c = Cursor::default();
    c.seek(p, root, Bound::Unbounded)?;
    while c.is_valid() {
        let page = p.page(c.leaf())?;
        let n = Node::new(page);
        let name = String::from_utf8_lossy(n.key(c.idx())?).into_owned();
        let (_, v, _) = n.value(c.idx())?;
        out.push((name, TreeDesc::decode(v)?));
        c.next(p)?;
    }
    Ok(out)
}

/// Find the current descriptor of `tree` (by name first, then by identity after a rename).
pub(crate) fn resolve<P: PageRead + ?Sized>(
    p: &P,
    root: &TreeDesc,
    tree: &Tree,
    db_id: u64,
    touched: &mut u64,
) -> Result<TreeDesc> {
    Ok(resolve_named(p, root, tree, db_id, touched)?.1)
}

/// `resolve`, with the tree's current name: the handle's, unless the tree was renamed (then
/// found by id). The name is a borrow of the handle's in the common case (no allocation on a
/// read transaction's first use of a tree).
pub(crate) fn resolve_named<'t, P: PageRead + ?Sized>(
    p: &P,
    root: &TreeDesc,
    tree: &'t Tree,
    db_id: u64,
    touched: &mut u64,
) -> Result<(std::borrow::Cow<'t, str>, TreeDesc)> {
    if tree.db_id != db_id {
        return Err(Error::Invalid("tree handle of another environment".into()));
    }
    if let Some(d) = lookup(p, root, &tree.name, touched)? {
        if d.id == tree.id {
            return Ok((std::borrow::Cow::Borrowed(&*tree.name), d));
        }
    }
    list(p, root)?
        .into_iter()
        .find(|(_, d)| d.id == tree.id)
        .map(|(n, d)| (std::borrow::Cow::Owned(n), d))
        .ok_or_else(|| Error::NoSuchTree(tree.name.to_string()))
}

pub(crate) fn handle(name: &str, d: &TreeDesc, db_id: u64) -> Tree {
    Tree { id: d.id, db_id, name: name.into(), multi: d.kind() == TreeKind::Multi }
}

/// Walk the root tree and every named tree: the pages they reach (meta page excluded) and the
/// named trees' live bytes (`CheckReport::live_bytes`), with every structural problem pushed to
/// `problems`.
pub(crate) fn reachable<P: PageRead + ?Sized>(p: &P, problems: &mut Vec<crate::stats::Problem>) -> (Vec<u64>, u64) {
    use crate::stats::{Problem, ProblemKind as K};
    let mut pages = Vec::new();
    let meta = match p.page(crate::data::file::META_PAGE).and_then(crate::tree::Meta::decode) {
        Ok(m) => m,
        Err(e) => {
            problems.push(Problem::from_error(
                K::PageChecksum,
                Some(crate::data::file::META_PAGE),
                None,
                "meta page: ",
                &e,
            ));
            return (pages, 0);
        }
    };
    let mut named = Vec::new();
    let mut live = 0;
    crate::tree::check::walk(p, "(root)", &meta.root, &mut pages, problems, &mut |k, _, v| {
        named.push((String::from_utf8_lossy(k).into_owned(), TreeDesc::decode(v)));
    });
    let mut ids = std::collections::HashSet::new();
    for (name, d) in named {
        match d {
            Ok(d) => {
                if d.id == 0 || d.id >= meta.next_tree_id || !ids.insert(d.id) {
                    problems.push(Problem::new(
                        K::TreeOrder,
                        None,
                        Some(&name),
                        format!("tree {name}: bad or duplicate id {}", d.id),
                    ));
                }
                live += crate::tree::check::walk(p, &name, &d, &mut pages, problems, &mut |_, _, _| {}).live_bytes;
            }
            Err(e) => {
                problems.push(Problem::from_error(K::TreeOrder, None, Some(&name), &format!("tree {name}: "), &e))
            }
        }
    }
    (pages, live)
}
