//! Where writing pages once pays: median durable commit time of N fresh pages, journaled versus
//! written straight to the data file (+ one extra sync), in alternating rounds.
//! `cargo run --release -p jackdaw --example write_once_threshold`
use jackdaw::internals::{PageKind, PAGE_HEADER};
use jackdaw::{Env, Options};
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::current_dir()?.join("target").join(format!("jackdaw-wo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let journaled = Env::open(base.join("j"), Options::default().write_once_min_pages(0))?;
    let once = Env::open(base.join("o"), Options::default().write_once_min_pages(1))?;
    println!("{:>6} {:>14} {:>14}", "pages", "journaled µs", "written once µs");
    for n in [8usize, 16, 32, 64, 128, 256, 1024] {
        let (mut tj, mut to) = (Vec::new(), Vec::new());
        for round in 0..30u64 {
            for (env, t) in [(&journaled, &mut tj), (&once, &mut to)] {
                let mut tx = env.write()?;
                for i in 0..n {
                    let p = tx.alloc_page(PageKind::Raw)?;
                    // Incompressible-ish contents: a fresh page's image is journaled nearly whole.
                    let body = &mut tx.page_mut(p)?[PAGE_HEADER..];
                    let mut x = round * 7919 + i as u64 + 1;
                    for c in body.chunks_mut(8) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
                    }
                }
                let s = Instant::now();
                tx.commit()?;
                t.push(s.elapsed());
            }
        }
        println!("{n:>6} {:>14.0} {:>14.0}", median(tj), median(to));
    }
    drop((journaled, once));
    std::fs::remove_dir_all(&base)?;
    Ok(())
}
