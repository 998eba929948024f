//! The structural check of one tree: page kinds and levels, key order, fences between parents
//! and children, entry and page counts against the descriptor, overflow chains. Collects every
//! page the tree reaches; never panics and never loops (each page is visited at most once).

use super::node::{Node, FLAG_OVERFLOW};
use super::{overflow, PageRead, TreeDesc};
use crate::data::page::{self, PageKind};
use crate::stats::{Problem, ProblemKind as K};
use std::collections::HashSet;

/// Walk `desc`'s tree (and, in a multi-value tree, its nested lists and trees); push reached
/// pages into `pages`, problems into `problems`; call `on_entry(key, flags, stored_value)` for
/// each leaf entry. Returns the counted (branch, leaf, overflow pages, entries).
#[allow(clippy::type_complexity)]
pub(crate) fn walk<P: PageRead + ?Sized>(
    p: &P,
    name: &str,
    desc: &TreeDesc,
    pages: &mut Vec<u64>,
    problems: &mut Vec<Problem>,
    on_entry: &mut dyn FnMut(&[u8], u8, &[u8]),
) -> (u64, u64, u64, u64) {
    if desc.root == 0 {
        if desc.entries != 0 || desc.branch_pages + desc.leaf_pages + desc.overflow_pages != 0 {
            problems.push(Problem::new(
                K::TreeOrder,
                None,
                Some(name),
                format!("tree {name}: empty but its descriptor counts {desc:?}"),
            ));
        }
        return (0, 0, 0, 0);
    }
    let multi = desc.kind() == super::TreeKind::Multi;
    let mut seen = HashSet::new();
    let (mut branches, mut leaves, mut overflows, mut entries) = (0u64, 0u64, 0u64, 0u64);
    // (page, level, low fence, high fence)
    type Visit = (u64, u32, Option<Vec<u8>>, Option<Vec<u8>>);
    let mut stack: Vec<Visit> = vec![(desc.root, desc.depth - 1, None, None)];
    while let Some((pg, level, low, high)) = stack.pop() {
        if !seen.insert(pg) {
            problems.push(Problem::new(
                K::Reachability,
                Some(pg),
                Some(name),
                format!("tree {name}: page {pg} is reached twice"),
            ));
            continue;
        }
        pages.push(pg);
        let page = match p.page(pg) {
            Ok(pg) => pg,
            Err(e) => {
                problems.push(Problem::from_error(
                    K::PageChecksum,
                    Some(pg),
                    Some(name),
                    &format!("tree {name}: "),
                    &e,
                ));
                continue;
            }
        };
        let want = if level == 0 { PageKind::Leaf } else { PageKind::Branch };
        let n = Node::new(&page);
        if page::page_kind(&page) != Some(want) || n.level() as u32 != level {
            problems.push(order(pg, name, format!("tree {name}: page {pg} should be a {want:?} at level {level}")));
            continue;
        }
        if n.upper() > page.len() || n.upper() < super::node::SLOTS + 2 * n.count() {
            problems.push(order(pg, name, format!("tree {name}: page {pg} has a bad entry area")));
            continue;
        }
        if level == 0 {
            leaves += 1;
        } else {
            branches += 1;
        }
        let count = n.count();
        if count == 0 && !(level == 0 && pg == desc.root) {
            problems.push(order(pg, name, format!("tree {name}: page {pg} is empty")));
        }
        let mut prev: Option<&[u8]> = None;
        for i in 0..count {
            let key = match n.key(i) {
                Ok(k) => k,
                Err(e) => {
                    problems.push(Problem::from_error(
                        K::TreeOrder,
                        Some(pg),
                        Some(name),
                        &format!("tree {name}: page {pg} entry {i}: "),
                        &e,
                    ));
                    break;
                }
            };
            let implicit = level > 0 && i == 0;
            if !implicit {
                if let Some(pk) = prev {
                    if pk >= key {
                        problems.push(order(
                            pg,
                            name,
                            format!("tree {name}: page {pg}: keys out of order at entry {i}"),
                        ));
                    }
                }
                if low.as_deref().is_some_and(|l| key < l) || high.as_deref().is_some_and(|h| key >= h) {
                    problems.push(order(
                        pg,
                        name,
                        format!("tree {name}: page {pg} entry {i}: key outside the fences of its parent"),
                    ));
                }
                prev = Some(key);
            }
            if level > 0 {
                let child = match n.child(i) {
                    Ok(c) => c,
                    Err(e) => {
                        problems.push(Problem::from_error(
                            K::TreeOrder,
                            Some(pg),
                            Some(name),
                            &format!("tree {name}: page {pg}: "),
                            &e,
                        ));
                        continue;
                    }
                };
                let clow = if i == 0 { low.clone() } else { Some(key.to_vec()) };
                let chigh = if i + 1 < count { n.key(i + 1).ok().map(<[u8]>::to_vec) } else { high.clone() };
                stack.push((child, level - 1, clow, chigh));
            } else {
                entries += 1;
                match n.value(i) {
                    Ok((flags, v, _)) => {
                        on_entry(key, flags, v);
                        if multi && flags == FLAG_OVERFLOW {
                            problems.push(order(
                                pg,
                                name,
                                format!("tree {name}: page {pg} entry {i}: an overflow value in a multi-value tree"),
                            ));
                        } else if flags == FLAG_OVERFLOW {
                            match overflow::decode_ref(v) {
                                Ok((len, first)) => {
                                    let r = overflow::walk(p, first, len, |opg, _| {
                                        if !seen.insert(opg) {
                                            return Err(crate::Error::corrupted(
                                                Some(opg),
                                                "overflow page reached twice",
                                            ));
                                        }
                                        pages.push(opg);
                                        overflows += 1;
                                        Ok(())
                                    });
                                    if let Err(e) = r {
                                        problems.push(Problem::from_error(
                                            K::Overflow,
                                            Some(pg),
                                            Some(name),
                                            &format!("tree {name}: overflow chain of a key in page {pg}: "),
                                            &e,
                                        ));
                                    }
                                }
                                Err(e) => problems.push(Problem::from_error(
                                    K::TreeOrder,
                                    Some(pg),
                                    Some(name),
                                    &format!("tree {name}: page {pg}: "),
                                    &e,
                                )),
                            }
                        } else if multi && flags == super::multi::FLAG_NESTED {
                            match super::multi::decode_list(v) {
                                Ok(vals) if !vals.is_empty() => entries += vals.len() as u64 - 1,
                                Ok(_) => problems.push(order(
                                    pg,
                                    name,
                                    format!("tree {name}: page {pg} entry {i}: empty nested list"),
                                )),
                                Err(e) => problems.push(Problem::from_error(
                                    K::TreeOrder,
                                    Some(pg),
                                    Some(name),
                                    &format!("tree {name}: page {pg} entry {i}: "),
                                    &e,
                                )),
                            }
                        } else if multi && flags == super::multi::FLAG_SUBTREE {
                            match TreeDesc::decode(v) {
                                Ok(d) if d.entries > 0 && d.kind() == super::TreeKind::Plain => {
                                    let sub = format!("{name}/nested");
                                    let mut odd = 0u64;
                                    let (b, l, o, e) = walk(p, &sub, &d, pages, problems, &mut |_, f, sv| {
                                        if f != super::node::FLAG_INLINE || !sv.is_empty() {
                                            odd += 1;
                                        }
                                    });
                                    if odd > 0 {
                                        problems.push(Problem::new(
                                            K::TreeOrder,
                                            None,
                                            Some(&sub),
                                            format!("tree {sub}: {odd} entries carry data (values must be keys)"),
                                        ));
                                    }
                                    branches += b;
                                    leaves += l;
                                    overflows += o;
                                    entries += e - 1;
                                }
                                Ok(d) => problems.push(order(
                                    pg,
                                    name,
                                    format!("tree {name}: page {pg} entry {i}: bad nested tree {d:?}"),
                                )),
                                Err(e) => problems.push(Problem::from_error(
                                    K::TreeOrder,
                                    Some(pg),
                                    Some(name),
                                    &format!("tree {name}: page {pg} entry {i}: "),
                                    &e,
                                )),
                            }
                        } else if flags != super::node::FLAG_INLINE || multi {
                            problems.push(order(
                                pg,
                                name,
                                format!("tree {name}: page {pg} entry {i}: unknown value flags {flags}"),
                            ));
                        }
                    }
                    Err(e) => problems.push(Problem::from_error(
                        K::TreeOrder,
                        Some(pg),
                        Some(name),
                        &format!("tree {name}: page {pg} entry {i}: "),
                        &e,
                    )),
                }
            }
        }
    }
    if entries != desc.entries {
        problems.push(Problem::new(
            K::TreeOrder,
            None,
            Some(name),
            format!("tree {name}: {entries} entries, its descriptor counts {}", desc.entries),
        ));
    }
    if (branches, leaves, overflows) != (desc.branch_pages, desc.leaf_pages, desc.overflow_pages) {
        problems.push(Problem::new(
            K::TreeOrder,
            None,
            Some(name),
            format!(
            "tree {name}: pages branch/leaf/overflow {branches}/{leaves}/{overflows}, its descriptor counts {}/{}/{}",
            desc.branch_pages, desc.leaf_pages, desc.overflow_pages
        ),
        ));
    }
    (branches, leaves, overflows, entries)
}

/// A structural problem of tree `name` at page `pg`.
fn order(pg: u64, name: &str, detail: String) -> Problem {
    Problem::new(K::TreeOrder, Some(pg), Some(name), detail)
}
