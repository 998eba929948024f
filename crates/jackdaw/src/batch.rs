//! Write batches and the transaction merger.
//!
//! Callers on any thread build a [`WriteBatch`] and hand it to `Env::write_batch` (or
//! `write_batch_async`). One merger thread drains the queue: it applies as many batches as fit
//! under a size bound to one write transaction, prepares it (the writer lock is released and the
//! pages are published invisibly), and hands it to a committer thread, which writes the record
//! and wakes that transaction's waiters. While the committer writes transaction N, the merger is
//! already filling N+1 with the batches that arrive meanwhile (pipelined commit); it closes N+1
//! when the committer is free or the size bound is reached.
//!
//! Each waiter has its own one-shot channel, so waking the waiters of a transaction does not
//! serialize them on one mutex. A batch is validated (trees exist and are of the right kind,
//! keys and values fit) before any of it is applied, so a bad batch fails alone; a failure of the
//! transaction itself (I/O) fails every batch in it, and poisons the environment, which fails the
//! transactions prepared after it too.

use crate::api::{check_key, check_value_len, Tree, WriteTxn};
use crate::sync::mpsc::{self, Receiver, SyncSender};
use crate::sync::thread::JoinHandle;
use crate::sync::{Condvar, Mutex};
use crate::tree::node::max_key_size;
use crate::txn::core::Core;
use crate::txn::write::Prepared;
use crate::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Bytes of keys and values merged into one transaction at most.
const MAX_TX_BYTES: usize = 16 << 20;

enum Op {
    Put(String, Vec<u8>, Vec<u8>),
    Delete(String, Vec<u8>),
    MultiPut(String, Vec<u8>, Vec<u8>),
    MultiDelete(String, Vec<u8>, Vec<u8>),
}

/// An owned list of operations on named trees, applied atomically (all or nothing). Built on any
/// thread without touching the environment.
#[derive(Default)]
pub struct WriteBatch {
    ops: Vec<Op>,
    bytes: usize,
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }
    fn push(&mut self, op: Op, bytes: usize) {
        self.bytes += bytes;
        self.ops.push(op);
    }
    /// Insert or replace `key` in plain tree `tree`.
    pub fn put(&mut self, tree: &str, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (k, v) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        let n = k.len() + v.len();
        self.push(Op::Put(tree.to_string(), k, v), n);
    }
    /// Delete `key` from plain tree `tree`.
    pub fn delete(&mut self, tree: &str, key: impl AsRef<[u8]>) {
        let k = key.as_ref().to_vec();
        let n = k.len();
        self.push(Op::Delete(tree.to_string(), k), n);
    }
    /// Add `value` to `key` in multi-value tree `tree`.
    pub fn multi_put(&mut self, tree: &str, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (k, v) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        let n = k.len() + v.len();
        self.push(Op::MultiPut(tree.to_string(), k, v), n);
    }
    /// Remove `value` from `key` in multi-value tree `tree`.
    pub fn multi_delete(&mut self, tree: &str, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (k, v) = (key.as_ref().to_vec(), value.as_ref().to_vec());
        let n = k.len() + v.len();
        self.push(Op::MultiDelete(tree.to_string(), k, v), n);
    }
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

/// Waits for one submitted batch.
pub struct BatchHandle {
    rx: Receiver<Result<()>>,
}

impl BatchHandle {
    pub(crate) fn ready(rx: Receiver<Result<()>>) -> BatchHandle {
        BatchHandle { rx }
    }

    /// Block until the batch is committed with the environment's durability (or failed).
    pub fn wait(self) -> Result<()> {
        self.rx.recv().unwrap_or(Err(Error::Closed))
    }
}

struct Pending {
    batch: WriteBatch,
    done: SyncSender<Result<()>>,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Pending>,
    stop: bool,
    /// Prepared transactions handed to the committer and not finished.
    in_flight: usize,
}

pub(crate) struct Merger {
    queue: Mutex<Queue>,
    cv: Condvar,
}

/// The merger's threads, owned by the `Env` handle.
pub(crate) struct MergerThreads {
    merger: Arc<Merger>,
    threads: Vec<JoinHandle<()>>,
}

impl MergerThreads {
    pub(crate) fn start(core: &Arc<Core>) -> Result<MergerThreads> {
        let merger = Arc::new(Merger { queue: Mutex::new(Queue::default()), cv: Condvar::new() });
        let (tx, rx) = mpsc::channel::<(Prepared, Vec<SyncSender<Result<()>>>)>();
        let m = merger.clone();
        let committer = crate::sync::thread::Builder::new()
            .name("jackdaw-committer".into())
            .spawn(move || {
                for (prepared, waiters) in rx {
                    let r = prepared.finish().map(|_| ());
                    for w in waiters {
                        let _ = w.send(r.clone());
                    }
                    let mut q = m.queue.lock();
                    q.in_flight -= 1;
                    m.cv.notify_all();
                }
            })
            .map_err(|e| Error::io("start committer thread", e))?;
        let (m, c) = (merger.clone(), core.clone());
        let merger_thread = crate::sync::thread::Builder::new()
            .name("jackdaw-merger".into())
            .spawn(move || run(&c, &m, tx))
            .map_err(|e| Error::io("start merger thread", e))?;
        Ok(MergerThreads { merger, threads: vec![merger_thread, committer] })
    }

    pub(crate) fn submit(&self, batch: WriteBatch) -> BatchHandle {
        let (done, rx) = mpsc::sync_channel(1);
        let mut q = self.merger.queue.lock();
        if q.stop {
            let _ = done.send(Err(Error::Closed));
        } else {
            q.items.push_back(Pending { batch, done });
            self.merger.cv.notify_all();
        }
        BatchHandle { rx }
    }

    /// Commit what is queued, then stop both threads.
    pub(crate) fn stop(self) {
        self.merger.queue.lock().stop = true;
        self.merger.cv.notify_all();
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn run(core: &Arc<Core>, m: &Merger, committer: mpsc::Sender<(Prepared, Vec<SyncSender<Result<()>>>)>) {
    loop {
        {
            let mut q = m.queue.lock();
            m.cv.wait_while(&mut q, |q| q.items.is_empty() && !q.stop);
            if q.items.is_empty() && q.stop {
                return;
            }
        }
        let mut tx = match WriteTxn::begin(core, true) {
            Ok(tx) => tx,
            Err(e) => {
                fail_all(m, &e);
                continue;
            }
        };
        let mut trees: HashMap<String, Tree> = HashMap::new();
        let mut waiters = Vec::new();
        let mut bytes = 0usize;
        let mut failed: Option<Error> = None;
        loop {
            let taken: Vec<Pending> = {
                let mut q = m.queue.lock();
                let mut out = Vec::new();
                while bytes < MAX_TX_BYTES {
                    let Some(p) = q.items.pop_front() else { break };
                    bytes += p.batch.bytes;
                    out.push(p);
                }
                out
            };
            for p in taken {
                if failed.is_some() {
                    let _ = p.done.send(Err(failed.clone().expect("set")));
                    continue;
                }
                match validate(&mut tx, &mut trees, &p.batch) {
                    Err(e) => {
                        let _ = p.done.send(Err(e));
                    }
                    Ok(()) => match apply(&mut tx, &trees, p.batch) {
                        Ok(()) => waiters.push(p.done),
                        Err(e) => {
                            // The transaction is in an unknown state: fail everything in it.
                            let _ = p.done.send(Err(e.clone()));
                            failed = Some(e);
                        }
                    },
                }
            }
            if bytes >= MAX_TX_BYTES || failed.is_some() {
                break;
            }
            // Keep filling while the committer is busy with the previous transaction.
            let mut q = m.queue.lock();
            if q.items.is_empty() {
                if q.in_flight == 0 || q.stop {
                    break;
                }
                m.cv.wait_while(&mut q, |q| q.items.is_empty() && q.in_flight > 0 && !q.stop);
                if q.items.is_empty() {
                    break;
                }
            }
        }
        if let Some(e) = failed {
            for w in waiters {
                let _ = w.send(Err(e.clone()));
            }
            continue;
        }
        if waiters.is_empty() {
            continue;
        }
        match tx.prepare() {
            Ok(p) => {
                m.queue.lock().in_flight += 1;
                if let Err(mpsc::SendError((p, ws))) = committer.send((p, waiters)) {
                    drop(p);
                    for w in ws {
                        let _ = w.send(Err(Error::Closed));
                    }
                    m.queue.lock().in_flight -= 1;
                }
            }
            Err(e) => {
                for w in waiters {
                    let _ = w.send(Err(e.clone()));
                }
            }
        }
    }
}

fn fail_all(m: &Merger, e: &Error) {
    let items: Vec<Pending> = m.queue.lock().items.drain(..).collect();
    for p in items {
        let _ = p.done.send(Err(e.clone()));
    }
}

fn tree_for<'a>(tx: &mut WriteTxn, trees: &'a mut HashMap<String, Tree>, name: &str) -> Result<&'a Tree> {
    if !trees.contains_key(name) {
        let t = tx.open_tree(name)?.ok_or_else(|| Error::NoSuchTree(name.to_string()))?;
        trees.insert(name.to_string(), t);
    }
    Ok(&trees[name])
}

/// Everything that could make a batch fail halfway, checked before any of it is applied.
fn validate(tx: &mut WriteTxn, trees: &mut HashMap<String, Tree>, b: &WriteBatch) -> Result<()> {
    let ps = tx.page_size();
    for op in &b.ops {
        let (name, key, multi) = match op {
            Op::Put(n, k, v) => {
                check_value_len(v.len() as u64)?;
                (n, k, false)
            }
            Op::Delete(n, k) => (n, k, false),
            Op::MultiPut(n, k, v) | Op::MultiDelete(n, k, v) => {
                let max = max_key_size(ps);
                if v.len() > max {
                    return Err(Error::ValueTooLarge {
                        len: v.len() as u64,
                        max: max as u64,
                        limit: crate::error::Limit::MultiValue,
                    });
                }
                (n, k, true)
            }
        };
        if multi {
            crate::api::write::check_multi_key(key, ps)?;
        } else {
            check_key(key, ps)?;
        }
        let t = tree_for(tx, trees, name)?;
        if t.is_multi() != multi {
            return Err(Error::WrongTreeKind(name.clone()));
        }
    }
    Ok(())
}

fn apply(tx: &mut WriteTxn, trees: &HashMap<String, Tree>, b: WriteBatch) -> Result<()> {
    for op in b.ops {
        match op {
            Op::Put(n, k, v) => tx.put(&trees[&n], k, v)?,
            Op::Delete(n, k) => {
                tx.delete(&trees[&n], k)?;
            }
            Op::MultiPut(n, k, v) => {
                tx.multi_put(&trees[&n], k, v)?;
            }
            Op::MultiDelete(n, k, v) => {
                tx.multi_delete(&trees[&n], k, v)?;
            }
        }
    }
    Ok(())
}
