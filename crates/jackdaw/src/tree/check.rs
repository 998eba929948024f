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
/// each leaf entry. Returns what it counted.
#[allow(clippy::type_complexity)]
pub(crate) fn walk<P: PageRead + ?Sized>(
    p: &P,
    name: &str,
    desc: &TreeDesc,
    pages: &mut Vec<u64>,
    problems: &mut Vec<Problem>,
    on_entry: &mut dyn FnMut(&[u8], u8, &[u8]),
) -> Walked {
    if desc.root == 0 {
        if desc.entries != 0 || desc.branch_pages + desc.leaf_pages + desc.overflow_pages != 0 {
            problems.push(Problem::new(
                K::TreeOrder,
                None,
                Some(name),
                format!("tree {name}: empty but its descriptor counts {desc:?}"),
            ));
        }
        return Walked::default();
    }
    let mut w = Walker {
        p,
        name,
        multi: desc.kind() == super::TreeKind::Multi,
        root: desc.root,
        seen: HashSet::new(),
        pages,
        problems,
        branches: 0,
        leaves: 0,
        overflows: 0,
        entries: 0,
        live_bytes: 0,
    };
    let mut stack: Vec<Visit> = vec![(desc.root, desc.depth - 1, None, None)];
    while let Some((pg, level, low, high)) = stack.pop() {
        w.visit(pg, level, low, high, &mut stack, on_entry);
    }
    w.check_descriptor_counts(desc);
    Walked {
        branches: w.branches,
        leaves: w.leaves,
        overflows: w.overflows,
        entries: w.entries,
        live_bytes: w.live_bytes,
    }
}

/// What one `walk` counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Walked {
    pub branches: u64,
    pub leaves: u64,
    pub overflows: u64,
    /// Entries (a multi-value tree: values).
    pub entries: u64,
    /// Bytes of keys and values as stored by the user (`CheckReport::live_bytes`): per
    /// key-value pair, the key's length plus the value's (an overflow value at its full length;
    /// in a multi-value tree, the key once per value).
    pub live_bytes: u64,
}

/// A page still to visit: (page, level, low fence, high fence).
type Visit = (u64, u32, Option<Vec<u8>>, Option<Vec<u8>>);

/// The state of one `walk`: where it reports, what it has seen and counted.
struct Walker<'a, P: ?Sized> {
    p: &'a P,
    name: &'a str,
    multi: bool,
    root: u64,
    /// Every page visited so far (so each is visited at most once).
    seen: HashSet<u64>,
    pages: &'a mut Vec<u64>,
    problems: &'a mut Vec<Problem>,
    branches: u64,
    leaves: u64,
    overflows: u64,
    entries: u64,
    live_bytes: u64,
}

impl<'a, P: PageRead + ?Sized> Walker<'a, P> {
    /// Check page `pg` (expected at `level`, its keys within the fences `[low, high)`): its
    /// kind, entry area and key order; push its children onto `stack`, or check its entries.
    #[allow(clippy::type_complexity)]
    fn visit(
        &mut self,
        pg: u64,
        level: u32,
        low: Option<Vec<u8>>,
        high: Option<Vec<u8>>,
        stack: &mut Vec<Visit>,
        on_entry: &mut dyn FnMut(&[u8], u8, &[u8]),
    ) {
        let name = self.name;
        let Some(page) = self.enter(pg) else { return };
        let want = if level == 0 { PageKind::Leaf } else { PageKind::Branch };
        let n = Node::new(page);
        if page::page_kind(page) != Some(want) || n.level() as u32 != level {
            self.problems.push(order(
                pg,
                name,
                format!("tree {name}: page {pg} should be a {want:?} at level {level}"),
            ));
            return;
        }
        if n.upper() > page.len() || n.upper() < super::node::SLOTS + 2 * n.count() {
            self.problems.push(order(pg, name, format!("tree {name}: page {pg} has a bad entry area")));
            return;
        }
        if level == 0 {
            self.leaves += 1;
        } else {
            self.branches += 1;
        }
        let count = n.count();
        if count == 0 && !(level == 0 && pg == self.root) {
            self.problems.push(order(pg, name, format!("tree {name}: page {pg} is empty")));
        }
        let mut prev: Option<&[u8]> = None;
        for i in 0..count {
            let key = match n.key(i) {
                Ok(k) => k,
                Err(e) => {
                    let what = format!("tree {name}: page {pg} entry {i}: ");
                    self.problems.push(Problem::from_error(K::TreeOrder, Some(pg), Some(name), &what, &e));
                    break;
                }
            };
            let implicit = level > 0 && i == 0;
            if !implicit {
                self.check_key_order(pg, i, key, prev, low.as_deref(), high.as_deref());
                prev = Some(key);
            }
            if level > 0 {
                let Ok(child) = n.child(i).map_err(|e| {
                    let what = format!("tree {name}: page {pg}: ");
                    self.problems.push(Problem::from_error(K::TreeOrder, Some(pg), Some(name), &what, &e));
                }) else {
                    continue;
                };
                let clow = if i == 0 { low.clone() } else { Some(key.to_vec()) };
                let chigh = if i + 1 < count { n.key(i + 1).ok().map(<[u8]>::to_vec) } else { high.clone() };
                stack.push((child, level - 1, clow, chigh));
            } else {
                self.leaf_entry(&n, pg, i, key, on_entry);
            }
        }
    }

    /// Mark `pg` reached and read it; `None` (with the problem reported) if it was reached
    /// before or cannot be read.
    fn enter(&mut self, pg: u64) -> Option<crate::txn::PageRef<'a>> {
        let name = self.name;
        if !self.seen.insert(pg) {
            self.problems.push(Problem::new(
                K::Reachability,
                Some(pg),
                Some(name),
                format!("tree {name}: page {pg} is reached twice"),
            ));
            return None;
        }
        self.pages.push(pg);
        match self.p.page(pg) {
            Ok(pg) => Some(pg),
            Err(e) => {
                let what = format!("tree {name}: ");
                self.problems.push(Problem::from_error(K::PageChecksum, Some(pg), Some(name), &what, &e));
                None
            }
        }
    }

    /// Key `i` of page `pg` follows the previous key and lies within its parent's fences.
    fn check_key_order(
        &mut self,
        pg: u64,
        i: usize,
        key: &[u8],
        prev: Option<&[u8]>,
        low: Option<&[u8]>,
        high: Option<&[u8]>,
    ) {
        let name = self.name;
        if let Some(pk) = prev {
            if pk >= key {
                self.problems.push(order(pg, name, format!("tree {name}: page {pg}: keys out of order at entry {i}")));
            }
        }
        if low.is_some_and(|l| key < l) || high.is_some_and(|h| key >= h) {
            self.problems.push(order(
                pg,
                name,
                format!("tree {name}: page {pg} entry {i}: key outside the fences of its parent"),
            ));
        }
    }

    /// Count leaf entry `i` of page `pg`, pass it to `on_entry` and check its value.
    #[allow(clippy::type_complexity)]
    fn leaf_entry(&mut self, n: &Node, pg: u64, i: usize, key: &[u8], on_entry: &mut dyn FnMut(&[u8], u8, &[u8])) {
        let name = self.name;
        self.entries += 1;
        match n.value(i) {
            Ok((flags, v, _)) => {
                on_entry(key, flags, v);
                self.live_bytes += live_bytes(key.len() as u64, flags, v, self.multi);
                self.check_value(pg, i, flags, v);
            }
            Err(e) => {
                let what = format!("tree {name}: page {pg} entry {i}: ");
                self.problems.push(Problem::from_error(K::TreeOrder, Some(pg), Some(name), &what, &e));
            }
        }
    }

    /// A stored value's flags fit the tree's kind; overflow chains, nested lists and nested
    /// trees it refers to are walked and counted.
    fn check_value(&mut self, pg: u64, i: usize, flags: u8, v: &[u8]) {
        let (name, multi) = (self.name, self.multi);
        if multi && flags == FLAG_OVERFLOW {
            self.problems.push(order(
                pg,
                name,
                format!("tree {name}: page {pg} entry {i}: an overflow value in a multi-value tree"),
            ));
        } else if flags == FLAG_OVERFLOW {
            self.walk_overflow(pg, v);
        } else if multi && flags == super::multi::FLAG_NESTED {
            match super::multi::decode_list(v) {
                Ok(vals) if !vals.is_empty() => self.entries += vals.len() as u64 - 1,
                Ok(_) => {
                    self.problems.push(order(pg, name, format!("tree {name}: page {pg} entry {i}: empty nested list")))
                }
                Err(e) => {
                    let what = format!("tree {name}: page {pg} entry {i}: ");
                    self.problems.push(Problem::from_error(K::TreeOrder, Some(pg), Some(name), &what, &e));
                }
            }
        } else if multi && flags == super::multi::FLAG_SUBTREE {
            self.walk_nested_tree(pg, i, v);
        } else if flags != super::node::FLAG_INLINE || multi {
            self.problems.push(order(
                pg,
                name,
                format!("tree {name}: page {pg} entry {i}: unknown value flags {flags}"),
            ));
        }
    }

    /// Walk the overflow chain an entry of page `pg` refers to (`v` is its reference); each
    /// of its pages must be reached only once.
    fn walk_overflow(&mut self, pg: u64, v: &[u8]) {
        let name = self.name;
        let (len, first) = match overflow::decode_ref(v) {
            Ok(r) => r.chain(),
            Err(e) => {
                let what = format!("tree {name}: page {pg}: ");
                self.problems.push(Problem::from_error(K::TreeOrder, Some(pg), Some(name), &what, &e));
                return;
            }
        };
        let (seen, pages, overflows) = (&mut self.seen, &mut *self.pages, &mut self.overflows);
        let r = overflow::walk(self.p, (first, len), false, |opg, _| {
            if !seen.insert(opg) {
                return Err(crate::Error::corrupted(Some(opg), "overflow page reached twice"));
            }
            pages.push(opg);
            *overflows += 1;
            Ok(())
        });
        if let Err(e) = r {
            let what = format!("tree {name}: overflow chain of a key in page {pg}: ");
            self.problems.push(Problem::from_error(K::Overflow, Some(pg), Some(name), &what, &e));
        }
    }

    /// Walk the nested tree entry `i` of page `pg` holds (`v` is its descriptor): a plain,
    /// non-empty tree whose entries carry no data; its pages and entries count toward ours.
    fn walk_nested_tree(&mut self, pg: u64, i: usize, v: &[u8]) {
        let name = self.name;
        match TreeDesc::decode(v) {
            Ok(d) if d.entries > 0 && d.kind() == super::TreeKind::Plain => {
                let sub = format!("{name}/nested");
                let mut odd = 0u64;
                let got = walk(self.p, &sub, &d, self.pages, self.problems, &mut |_, f, sv| {
                    if f != super::node::FLAG_INLINE || !sv.is_empty() {
                        odd += 1;
                    }
                });
                if odd > 0 {
                    self.problems.push(Problem::new(
                        K::TreeOrder,
                        None,
                        Some(&sub),
                        format!("tree {sub}: {odd} entries carry data (values must be keys)"),
                    ));
                }
                self.branches += got.branches;
                self.leaves += got.leaves;
                self.overflows += got.overflows;
                self.entries += got.entries - 1;
                // The values are the nested tree's keys (its entries carry no data).
                self.live_bytes += got.live_bytes;
            }
            Ok(d) => {
                self.problems.push(order(pg, name, format!("tree {name}: page {pg} entry {i}: bad nested tree {d:?}")))
            }
            Err(e) => {
                let what = format!("tree {name}: page {pg} entry {i}: ");
                self.problems.push(Problem::from_error(K::TreeOrder, Some(pg), Some(name), &what, &e));
            }
        }
    }

    /// The counted entries and pages against the descriptor's.
    fn check_descriptor_counts(&mut self, desc: &TreeDesc) {
        let name = self.name;
        let (branches, leaves, overflows, entries) = (self.branches, self.leaves, self.overflows, self.entries);
        if entries != desc.entries {
            self.problems.push(Problem::new(
                K::TreeOrder,
                None,
                Some(name),
                format!("tree {name}: {entries} entries, its descriptor counts {}", desc.entries),
            ));
        }
        if (branches, leaves, overflows) != (desc.branch_pages, desc.leaf_pages, desc.overflow_pages) {
            self.problems.push(Problem::new(
                K::TreeOrder,
                None,
                Some(name),
                format!(
                "tree {name}: pages branch/leaf/overflow {branches}/{leaves}/{overflows}, its descriptor counts {}/{}/{}",
                desc.branch_pages, desc.leaf_pages, desc.overflow_pages
            ),
            ));
        }
    }
}

/// The live bytes of one leaf entry (`Walked::live_bytes`) with a key of `klen` bytes: inline,
/// the key and the value; an overflow reference, the key and the value's length; a nested list,
/// the key once per value and the values; a nested tree's descriptor, the key once per value
/// (the values are counted by the nested tree's walk). Damaged values count the key alone.
fn live_bytes(klen: u64, flags: u8, v: &[u8], multi: bool) -> u64 {
    match flags {
        FLAG_OVERFLOW if !multi => klen + overflow::decode_ref(v).map_or(0, |r| r.len),
        super::multi::FLAG_NESTED if multi => {
            super::multi::decode_list(v).map_or(klen, |vals| vals.iter().map(|x| klen + x.len() as u64).sum())
        }
        super::multi::FLAG_SUBTREE if multi => TreeDesc::decode(v).map_or(klen, |d| klen * d.entries),
        _ => klen + v.len() as u64,
    }
}

/// A structural problem of tree `name` at page `pg`.
fn order(pg: u64, name: &str, detail: String) -> Problem {
    Problem::new(K::TreeOrder, Some(pg), Some(name), detail)
}
