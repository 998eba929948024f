//! Multi-value trees: a key's values, sorted and unique, live in a nested list inside the leaf
//! entry while they are small, and in a nested B+tree of their own (values as keys, empty data)
//! when they outgrow it; back to a nested list when the nested tree shrinks to half the limit, and
//! gone with the entry when the last value goes. The count is kept, not scanned.
//!
//! ```text
//! nested list (leaf flags 2):  count u32 | (len u16 | value bytes) * count, ascending
//! nested tree (leaf flags 3):  the nested tree's 64-byte TreeDesc (its entries = the count)
//! ```
//! A multi tree's descriptor counts values (not keys) as entries, and its page counts include the
//! nested trees' pages.

use super::btree::{self, LeafCache};
use super::cursor::Cursor;
use super::node::{self, Node};
use super::{PageRead, PageWrite, TreeDesc};
use crate::{Error, Result};
use std::ops::Bound;

pub(crate) use super::node::{FLAG_NESTED, FLAG_SUBTREE};

/// Largest nested list (bytes) before the values move to a nested tree.
pub(crate) fn nested_limit(page_size: usize, key_len: usize) -> usize {
    (node::max_entry(page_size) / 2).min(node::max_entry(page_size) - node::LEAF_ENTRY_HEADER - key_len)
}

/// Walk a nested list, checking order and bounds: `each(start, len)` for each value, in order
/// (its bytes are `v[start..start + len]`); the number of values.
pub(crate) fn walk_list(v: &[u8], mut each: impl FnMut(usize, usize)) -> Result<usize> {
    let bad = |why: &str| Error::corrupted(None, format!("nested value list: {why}"));
    let n = u32::from_le_bytes(v.get(..4).ok_or_else(|| bad("short"))?.try_into().expect("4")) as usize;
    let mut pos = 4;
    let mut last: Option<&[u8]> = None;
    for _ in 0..n {
        let (start, l) = list_value_at(v, pos).ok_or_else(|| bad("cut value"))?;
        let x = &v[start..start + l];
        if last.is_some_and(|p| p >= x) {
            return Err(bad("values out of order"));
        }
        each(start, l);
        last = Some(x);
        pos = start + l;
    }
    if pos != v.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(n)
}

/// Decode a nested list, checking order and bounds.
pub(crate) fn decode_list(v: &[u8]) -> Result<Vec<&[u8]>> {
    let mut out = Vec::with_capacity(list_count(v)?.min(v.len() as u64 / 2) as usize);
    walk_list(v, |start, len| out.push(&v[start..start + len]))?;
    Ok(out)
}

/// The entry of a nested list at byte `pos` (its length, then its bytes), as (start, len) of
/// the value's bytes; `None` when the entry runs past the list's end.
pub(crate) fn list_value_at(v: &[u8], pos: usize) -> Option<(usize, usize)> {
    let l = v.get(pos..pos + 2)?;
    let l = u16::from_le_bytes([l[0], l[1]]) as usize;
    (pos + 2 + l <= v.len()).then_some((pos + 2, l))
}

pub(crate) fn list_count(v: &[u8]) -> Result<u64> {
    Ok(u32::from_le_bytes(
        v.get(..4).ok_or_else(|| Error::corrupted(None, "nested value list: short"))?.try_into().expect("4"),
    ) as u64)
}

pub(crate) fn encode_list<T: AsRef<[u8]>>(vals: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + vals.iter().map(|v| 2 + v.as_ref().len()).sum::<usize>());
    out.extend_from_slice(&(vals.len() as u32).to_le_bytes());
    for v in vals {
        out.extend_from_slice(&(v.as_ref().len() as u16).to_le_bytes());
        out.extend_from_slice(v.as_ref());
    }
    out
}

fn list_size<T: AsRef<[u8]>>(vals: &[T]) -> usize {
    4 + vals.iter().map(|v| 2 + v.as_ref().len()).sum::<usize>()
}

/// The stored form of a key's values.
enum Group {
    None,
    List(Vec<Vec<u8>>),
    Tree(TreeDesc),
}

fn load<P: PageRead + ?Sized>(
    p: &P,
    desc: &TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<Group> {
    let Some(f) = btree::get(p, desc, cache, key, touched)? else {
        return Ok(Group::None);
    };
    let (flags, v) = f.value()?;
    match flags {
        FLAG_NESTED => Ok(Group::List(decode_list(v)?.into_iter().map(<[u8]>::to_vec).collect())),
        FLAG_SUBTREE => Ok(Group::Tree(TreeDesc::decode(v)?)),
        f => Err(Error::corrupted(None, format!("multi-value entry with flags {f}"))),
    }
}

/// Count of `key`'s values, reading one leaf when the cache knows it.
pub(crate) fn count<P: PageRead + ?Sized>(
    p: &P,
    desc: &TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<u64> {
    let Some(f) = btree::get(p, desc, cache, key, touched)? else {
        return Ok(0);
    };
    let (flags, v) = f.value()?;
    match flags {
        FLAG_NESTED => list_count(v),
        FLAG_SUBTREE => Ok(TreeDesc::decode(v)?.entries),
        f => Err(Error::corrupted(None, format!("multi-value entry with flags {f}"))),
    }
}

fn pages(d: &TreeDesc) -> (u64, u64, u64) {
    (d.branch_pages, d.leaf_pages, d.overflow_pages)
}

/// Apply the page-count change of a nested tree to the outer descriptor.
fn account(outer: &mut TreeDesc, before: (u64, u64, u64), after: (u64, u64, u64)) {
    outer.branch_pages = (outer.branch_pages + after.0).saturating_sub(before.0);
    outer.leaf_pages = (outer.leaf_pages + after.1).saturating_sub(before.1);
    outer.overflow_pages = (outer.overflow_pages + after.2).saturating_sub(before.2);
}

fn store<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    g: &Group,
    touched: &mut u64,
) -> Result<()> {
    match g {
        Group::None => {
            btree::delete(w, desc, cache, key, touched)?;
        }
        Group::List(vals) => {
            btree::put(w, desc, cache, key, FLAG_NESTED, &encode_list(vals), touched)?;
        }
        Group::Tree(d) => {
            btree::put(w, desc, cache, key, FLAG_SUBTREE, &d.encode(), touched)?;
        }
    }
    Ok(())
}

/// `put` into the outer tree without counting a new entry: the outer `entries` counts values.
fn keep_entries<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    g: &Group,
    touched: &mut u64,
) -> Result<()> {
    let e = desc.entries;
    store(w, desc, cache, key, g, touched)?;
    desc.entries = e;
    Ok(())
}

/// Add `val` under `key`; false if it was there already.
pub(crate) fn put<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    val: &[u8],
    touched: &mut u64,
) -> Result<bool> {
    let ps = w.page_size();
    let limit = nested_limit(ps, key.len());
    let g = match load(w, desc, cache, key, touched)? {
        Group::None => {
            if list_size(&[val]) <= limit {
                Group::List(vec![val.to_vec()])
            } else {
                to_tree(w, desc, vec![val.to_vec()])?
            }
        }
        Group::List(mut vals) => match vals.binary_search_by(|x| x.as_slice().cmp(val)) {
            Ok(_) => return Ok(false),
            Err(i) => {
                vals.insert(i, val.to_vec());
                if list_size(&vals) <= limit {
                    Group::List(vals)
                } else {
                    to_tree(w, desc, vals)?
                }
            }
        },
        Group::Tree(mut d) => {
            let before = pages(&d);
            let mut c = LeafCache::new(1);
            let replaced = btree::put(w, &mut d, &mut c, val, node::FLAG_INLINE, b"", touched)?;
            account(desc, before, pages(&d));
            if replaced {
                return Ok(false);
            }
            Group::Tree(d)
        }
    };
    keep_entries(w, desc, cache, key, &g, touched)?;
    desc.entries += 1;
    Ok(true)
}

fn to_tree<W: PageWrite + ?Sized>(w: &mut W, outer: &mut TreeDesc, vals: Vec<Vec<u8>>) -> Result<Group> {
    let mut d = TreeDesc::default();
    let mut c = LeafCache::new(1);
    let mut t = 0;
    for v in &vals {
        btree::put(w, &mut d, &mut c, v, node::FLAG_INLINE, b"", &mut t)?;
    }
    account(outer, (0, 0, 0), pages(&d));
    Ok(Group::Tree(d))
}

/// All values of a nested tree, in order.
fn tree_values<P: PageRead + ?Sized>(p: &P, d: &TreeDesc) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut c = Cursor::default();
    c.seek(p, d, Bound::Unbounded)?;
    while c.is_valid() {
        out.push(Node::new(p.page(c.leaf())?).key(c.idx())?.to_vec());
        c.next(p)?;
    }
    Ok(out)
}

/// Remove `val` from `key`; false if it was not there.
pub(crate) fn delete<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    val: &[u8],
    touched: &mut u64,
) -> Result<bool> {
    let ps = w.page_size();
    let g = match load(w, desc, cache, key, touched)? {
        Group::None => return Ok(false),
        Group::List(mut vals) => match vals.binary_search_by(|x| x.as_slice().cmp(val)) {
            Err(_) => return Ok(false),
            Ok(i) => {
                vals.remove(i);
                if vals.is_empty() {
                    Group::None
                } else {
                    Group::List(vals)
                }
            }
        },
        Group::Tree(mut d) => {
            let before = pages(&d);
            let mut c = LeafCache::new(1);
            if !btree::delete(w, &mut d, &mut c, val, touched)? {
                return Ok(false);
            }
            account(desc, before, pages(&d));
            if d.entries == 0 {
                Group::None
            } else if d.depth == 1 && {
                let page = w.page(d.root)?;
                let n = Node::new(page);
                let size: usize = 4 + (0..n.count()).map(|i| n.key(i).map(|k| 2 + k.len())).sum::<Result<usize>>()?;
                size <= nested_limit(ps, key.len()) / 2
            } {
                // Small again: back to a nested list.
                let vals = tree_values(w, &d)?;
                let before = pages(&d);
                btree::free_all(w, &d)?;
                account(desc, before, (0, 0, 0));
                Group::List(vals)
            } else {
                Group::Tree(d)
            }
        }
    };
    keep_entries(w, desc, cache, key, &g, touched)?;
    desc.entries -= 1;
    Ok(true)
}

/// Remove every value of `key`; returns how many.
pub(crate) fn delete_all<W: PageWrite + ?Sized>(
    w: &mut W,
    desc: &mut TreeDesc,
    cache: &mut LeafCache,
    key: &[u8],
    touched: &mut u64,
) -> Result<u64> {
    let n = match load(w, desc, cache, key, touched)? {
        Group::None => return Ok(0),
        Group::List(vals) => vals.len() as u64,
        Group::Tree(d) => {
            btree::free_all(w, &d)?;
            account(desc, pages(&d), (0, 0, 0));
            d.entries
        }
    };
    keep_entries(w, desc, cache, key, &Group::None, touched)?;
    desc.entries -= n;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_codec() {
        let vals: Vec<&[u8]> = vec![b"", b"a", b"abc"];
        let e = encode_list(&vals);
        assert_eq!(decode_list(&e).unwrap(), vals);
        assert_eq!(list_count(&e).unwrap(), 3);
        let mut bad = e.clone();
        bad.push(0);
        assert!(decode_list(&bad).is_err());
        assert!(decode_list(&encode_list(&[b"b".as_slice(), b"a"])).is_err());
        assert!(decode_list(&e[..e.len() - 1]).is_err());
    }
}
