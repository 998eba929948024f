//! `jackdaw tree`: a picture of one tree (levels, pages per level, each page's fill, overflow
//! chains, nested trees of a multi-value tree), as text or as SVG.

use jackdaw::internals::{PageInfo, TreeLayout};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Pages drawn per level at most (the rest are counted).
const MAX_DRAWN: usize = 512;

fn fill(p: &PageInfo) -> f64 {
    if p.capacity == 0 {
        0.0
    } else {
        (p.used as f64 / p.capacity as f64).min(1.0)
    }
}

/// The tree's own pages by level, root level first.
fn levels(l: &TreeLayout, nested: Option<usize>) -> Vec<(u32, Vec<&PageInfo>)> {
    let mut by: BTreeMap<u32, Vec<&PageInfo>> = BTreeMap::new();
    for p in l.pages.iter().filter(|p| p.nested == nested) {
        by.entry(p.level).or_default().push(p);
    }
    by.into_iter().rev().collect()
}

fn avg(ps: &[&PageInfo]) -> f64 {
    if ps.is_empty() {
        0.0
    } else {
        ps.iter().map(|p| fill(p)).sum::<f64>() / ps.len() as f64
    }
}

/// The text picture: one line per level, then one block character per page showing its fill.
pub(crate) fn text(name: &str, l: &TreeLayout) -> String {
    let mut s = String::new();
    let own = l.pages.iter().filter(|p| p.nested.is_none()).count();
    let ovf: u64 = l.overflow.iter().map(|c| c.pages).sum();
    let nested_pages = l.pages.len() - own;
    let _ = writeln!(
        s,
        "tree {name} ({}): {} entries, depth {}, {} pages ({} own, {} overflow, {} in nested trees), page size {}",
        if l.multi { "multi-value" } else { "plain" },
        l.entries,
        l.depth,
        own as u64 + ovf + nested_pages as u64,
        own,
        ovf,
        nested_pages,
        l.page_size
    );
    if l.pages.is_empty() {
        let _ = writeln!(s, "(empty)");
        return s;
    }
    let _ = writeln!(s, "fill per page: ' ' <12%, then ▁▂▃▄▅▆▇ up to █ full");
    draw_levels(&mut s, l, None, "");
    if !l.overflow.is_empty() {
        let longest = l.overflow.iter().max_by_key(|c| c.pages);
        let _ = writeln!(s, "overflow chains: {} ({} pages)", l.overflow.len(), ovf);
        for c in l.overflow.iter().take(20) {
            let _ = writeln!(
                s,
                "  leaf {} -> pages {}..{} ({} pages, {} bytes)",
                c.leaf,
                c.first,
                c.first + c.pages - 1,
                c.pages,
                c.len
            );
        }
        if l.overflow.len() > 20 {
            let _ = writeln!(s, "  ... {} more", l.overflow.len() - 20);
        }
        if let Some(c) = longest {
            let _ = writeln!(s, "  longest: {} pages at leaf {}", c.pages, c.leaf);
        }
    }
    if l.multi {
        let _ = writeln!(s, "nested value lists (inline in the leaves): {}", l.nested_lists);
        let _ = writeln!(s, "nested trees: {}", l.nested.len());
        for (i, n) in l.nested.iter().enumerate().take(10) {
            let _ = writeln!(
                s,
                "  key {} (leaf {}): {} values, depth {}",
                crate::show(&n.key[..n.key.len().min(40)], false),
                n.leaf,
                n.entries,
                n.depth
            );
            draw_levels(&mut s, l, Some(i), "    ");
        }
        if l.nested.len() > 10 {
            let _ = writeln!(s, "  ... {} more", l.nested.len() - 10);
        }
    }
    s
}

fn draw_levels(s: &mut String, l: &TreeLayout, nested: Option<usize>, indent: &str) {
    const BLOCKS: [char; 8] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇'];
    for (level, pages) in levels(l, nested) {
        let what = if level == 0 { "leaf" } else { "branch" };
        let _ = writeln!(
            s,
            "{indent}level {level} ({what}{}): {} pages, average fill {:.0}%",
            if pages.len() == 1 && pages[0].parent.is_none() { ", root" } else { "" },
            pages.len(),
            avg(&pages) * 100.0
        );
        let mut line = String::new();
        for p in pages.iter().take(MAX_DRAWN) {
            let f = fill(p);
            line.push(if f >= 0.995 { '█' } else { BLOCKS[((f * 8.0) as usize).min(7)] });
            if line.chars().count() == 64 {
                let _ = writeln!(s, "{indent}  |{line}|");
                line.clear();
            }
        }
        if !line.is_empty() {
            let _ = writeln!(s, "{indent}  |{line}|");
        }
        if pages.len() > MAX_DRAWN {
            let _ = writeln!(s, "{indent}  ... {} more pages", pages.len() - MAX_DRAWN);
        }
    }
}

fn esc(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The SVG picture: one row per level, each page a box filled to its fill, lines from each
/// branch to its children, overflow chains hanging under their leaves, nested trees below.
pub(crate) fn svg(name: &str, l: &TreeLayout) -> String {
    let (bw, bh, gap, row) = (14.0f64, 40.0f64, 4.0f64, 90.0f64);
    let mut rows: Vec<(String, Vec<&PageInfo>)> =
        levels(l, None).into_iter().map(|(lv, p)| (format!("level {lv}"), p)).collect();
    for (i, n) in l.nested.iter().enumerate().take(20) {
        for (lv, p) in levels(l, Some(i)) {
            rows.push((format!("nested {} level {lv}", crate::show(&n.key[..n.key.len().min(16)], false)), p));
        }
    }
    let widest = rows.iter().map(|(_, p)| p.len().min(MAX_DRAWN)).max().unwrap_or(1);
    let width = 160.0 + widest as f64 * (bw + gap) + 40.0;
    let ovf_rows = if l.overflow.is_empty() { 0.0 } else { 2.0 };
    let height = 70.0 + (rows.len() as f64 + ovf_rows) * row + 20.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14">tree {} ({}): {} entries, depth {}, page size {}</text>"#,
        esc(name),
        if l.multi { "multi-value" } else { "plain" },
        l.entries,
        l.depth,
        l.page_size
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="38" fill="#555">each box is a page; the blue part is its fill; orange: overflow chains</text>"##
    );
    let mut pos: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for (ri, (label, pages)) in rows.iter().enumerate() {
        let y = 60.0 + ri as f64 * row;
        let _ = writeln!(
            s,
            r#"<text x="10" y="{}">{} ({} pages, {:.0}%)</text>"#,
            y + bh / 2.0,
            esc(label),
            pages.len(),
            avg(pages) * 100.0
        );
        for (i, p) in pages.iter().take(MAX_DRAWN).enumerate() {
            let x = 160.0 + i as f64 * (bw + gap);
            pos.insert(p.pgno, (x + bw / 2.0, y));
            if let Some(par) = p.parent.and_then(|q| pos.get(&q)) {
                if pages.len() <= 200 {
                    let _ = writeln!(
                        s,
                        r##"<line x1="{}" y1="{}" x2="{}" y2="{y}" stroke="#bbb" stroke-width="0.5"/>"##,
                        par.0,
                        par.1 + bh,
                        x + bw / 2.0
                    );
                }
            }
            let f = fill(p);
            let _ = writeln!(
                s,
                r##"<g><title>page {} level {} entries {} fill {:.0}%</title><rect x="{x}" y="{y}" width="{bw}" height="{bh}" fill="#eee" stroke="#666" stroke-width="0.5"/><rect x="{x}" y="{}" width="{bw}" height="{}" fill="{}"/></g>"##,
                p.pgno,
                p.level,
                p.entries,
                f * 100.0,
                y + bh * (1.0 - f),
                bh * f,
                if p.level == 0 { "#4a90d9" } else { "#2c5aa0" }
            );
        }
        if pages.len() > MAX_DRAWN {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}">+{} more</text>"#,
                160.0 + MAX_DRAWN as f64 * (bw + gap),
                y + bh / 2.0,
                pages.len() - MAX_DRAWN
            );
        }
    }
    if !l.overflow.is_empty() {
        let y = 60.0 + rows.len() as f64 * row;
        let _ = writeln!(
            s,
            r#"<text x="10" y="{}">overflow ({} chains, {} pages)</text>"#,
            y + 12.0,
            l.overflow.len(),
            l.overflow.iter().map(|c| c.pages).sum::<u64>()
        );
        for c in l.overflow.iter().take(MAX_DRAWN) {
            if let Some((x, ly)) = pos.get(&c.leaf) {
                let h = (c.pages as f64 * 4.0).min(row * 1.6);
                let _ = writeln!(
                    s,
                    r##"<line x1="{x}" y1="{}" x2="{x}" y2="{y}" stroke="#e8a33c" stroke-width="0.5"/><g><title>chain at page {} of {} pages, {} bytes</title><rect x="{}" y="{y}" width="6" height="{h}" fill="#e8a33c"/></g>"##,
                    ly + bh,
                    c.first,
                    c.pages,
                    c.len,
                    x - 3.0
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}
