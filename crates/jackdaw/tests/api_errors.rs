//! Every error path of the tree API: the error kind (and its fields), that nothing changed after
//! the error, and that the transaction stays usable where it should.
//!
//! Tests named `bug_*` reproduce engine bugs found while writing these tests; they fail until the
//! engine is fixed.

mod common;

use common::*;
use jackdaw::internals::PageKind;
use jackdaw::{Env, Error, FlusherMode, Options, Tree, MAX_VALUE_SIZE};
use std::io::Read;

const MAX_KEY: usize = 2001;

/// A test directory, removed when dropped.
fn open(name: &str) -> (TestDb, Env) {
    let dir = TestDb::dir(name);
    let env = Env::open(&dir, test_opts()).unwrap();
    (dir, env)
}

/// Env with tree "t" holding k1 => v1, committed.
fn with_tree(name: &str) -> (TestDb, Env, Tree) {
    let (dir, env) = open(name);
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"k1", b"v1").unwrap();
    tx.commit().unwrap();
    (dir, env, t)
}

#[track_caller]
fn is_key_too_large<T: std::fmt::Debug>(r: jackdaw::Result<T>, len: usize) {
    match r {
        Err(Error::KeyTooLarge { len: l, max, .. }) => {
            assert_eq!((l, max), (len, MAX_KEY));
        }
        other => panic!("expected KeyTooLarge {{ len: {len}, max: {MAX_KEY} }}, got {other:?}"),
    }
}

#[track_caller]
fn is_no_such<T: std::fmt::Debug>(r: jackdaw::Result<T>, what: &str) {
    assert!(matches!(r, Err(Error::NoSuchTree(_))), "{what}: expected NoSuchTree, got {r:?}");
}

#[track_caller]
fn is_invalid<T: std::fmt::Debug>(r: jackdaw::Result<T>, what: &str) {
    assert!(matches!(r, Err(Error::Invalid(_))), "{what}: expected Invalid, got {r:?}");
}

/// A reader that must never be read.
struct Untouchable;
impl Read for Untouchable {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        panic!("the value was read although it was rejected");
    }
}

fn entries(env: &Env, t: &Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
    env.read()
        .unwrap()
        .range::<[u8], _>(t, ..)
        .unwrap()
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Sizes.

#[test]
fn oversized_key_is_rejected_by_put_put_reader_and_tree_names() {
    let (_d, env, t) = with_tree("err-key");
    assert_eq!(jackdaw::max_key_size(4096), MAX_KEY);
    let big = vec![7u8; MAX_KEY + 1];
    let mut tx = env.write().unwrap();
    is_key_too_large(tx.put(&t, &big, b"v"), MAX_KEY + 1);
    is_key_too_large(tx.put(&t, vec![7u8; 5000], b""), 5000);
    is_key_too_large(tx.put_reader(&t, &big, 3, &b"abc"[..]), MAX_KEY + 1);
    is_key_too_large(tx.put_reader(&t, &big, 50_000, Untouchable), MAX_KEY + 1);
    // Tree names are shorter: a name and its 64-byte descriptor fit one leaf entry.
    let max_name = jackdaw::max_tree_name(4096);
    assert_eq!(max_name, 1953);
    let long_name = "n".repeat(max_name + 1);
    for r in [tx.create_tree(&long_name).map(|_| ()), tx.rename_tree("t", &long_name)] {
        match r {
            Err(e @ Error::TreeNameTooLong { len, max }) => {
                assert_eq!((len, max), (max_name + 1, max_name));
                assert!(e.to_string().contains("tree name") && !e.to_string().contains("key"), "{e}");
            }
            other => panic!("expected TreeNameTooLong for a long tree name, got {other:?}"),
        }
    }
    // The largest key is fine, and the transaction is still usable after the errors.
    tx.put(&t, vec![7u8; MAX_KEY], b"max").unwrap();
    tx.commit().unwrap();
    let e = entries(&env, &t);
    assert_eq!(e.len(), 2);
    assert!(e[0].0 == vec![7u8; MAX_KEY] && e[0].1 == b"max", "the largest key is stored");
    assert_eq!(e[1], (b"k1".to_vec(), b"v1".to_vec()));
    assert_eq!(env.read().unwrap().list_trees().unwrap(), vec!["t".to_string()]);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A key longer than the maximum can never be stored: looking it up or deleting it finds
/// nothing (or is rejected as too large), in both kinds of transaction, and changes nothing.
#[test]
fn oversized_key_on_get_and_delete_finds_nothing() {
    let (_d, env, t) = with_tree("err-key-get");
    let big = vec![b'k'; MAX_KEY + 1];
    let none_or_too_large = |r: jackdaw::Result<bool>, what: &str| match r {
        Ok(false) => {}
        Err(Error::KeyTooLarge { len, max, .. }) => {
            assert_eq!((len, max), (MAX_KEY + 1, MAX_KEY), "{what}")
        }
        other => panic!("{what}: expected Ok(None/false) or KeyTooLarge, got {other:?}"),
    };
    let mut tx = env.write().unwrap();
    none_or_too_large(tx.get(&t, &big).map(|o| o.is_some()), "WriteTxn::get");
    none_or_too_large(tx.delete(&t, &big), "WriteTxn::delete");
    tx.commit().unwrap();
    let r = env.read().unwrap();
    none_or_too_large(r.get(&t, &big).map(|o| o.is_some()), "ReadTxn::get");
    none_or_too_large(r.get_reader(&t, &big).map(|o| o.is_some()), "ReadTxn::get_reader");
    assert_eq!(entries(&env, &t), vec![(b"k1".to_vec(), b"v1".to_vec())]);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn oversized_value_is_rejected_before_reading_it() {
    let (_d, env, t) = with_tree("err-value");
    let mut tx = env.write().unwrap();
    let r = tx.put_reader(&t, b"big", MAX_VALUE_SIZE + 1, Untouchable);
    match r {
        Err(Error::ValueTooLarge { len, max, .. }) => {
            assert_eq!((len, max), (MAX_VALUE_SIZE + 1, MAX_VALUE_SIZE))
        }
        other => panic!("expected ValueTooLarge, got {other:?}"),
    }
    assert!(matches!(tx.put_reader(&t, b"big", u64::MAX, Untouchable), Err(Error::ValueTooLarge { .. })));
    assert!(tx.get(&t, b"big").unwrap().is_none());
    tx.commit().unwrap();
    assert_eq!(entries(&env, &t).len(), 1);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// A reader that ends early fails `put_reader` with an I/O error; the transaction is unchanged.
#[test]
fn short_reader_fails_put_reader_with_io_error() {
    let (_d, env, t) = with_tree("err-short-reader");
    let mut tx = env.write().unwrap();
    // Inline-sized value.
    let r = tx.put_reader(&t, b"small", 100, &[1u8; 10][..]);
    assert!(matches!(r, Err(Error::Io { .. })), "short inline value: {r:?}");
    assert!(tx.get(&t, b"small").unwrap().is_none());
    tx.commit().unwrap();
    assert_eq!(entries(&env, &t), vec![(b"k1".to_vec(), b"v1".to_vec())]);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// `put_reader` of an overflow-sized value whose reader fails part-way returns `Err(Io)` after it
/// has begun changing pages: the transaction is then broken (its state is unknown), refuses
/// further changes and its commit, and nothing of it reaches the database.
/// (Found as a bug: the pages it reserved used to be committed unwritten.)
#[test]
fn failed_streamed_put_reader_breaks_the_transaction() {
    let (_d, env, t) = with_tree("err-short-stream");
    let before = entries(&env, &t);
    let mut tx = env.write().unwrap();
    let r = tx.put_reader(&t, b"k", 10_000, &[1u8; 5000][..]);
    assert!(matches!(r, Err(Error::Io { .. })), "short streamed value: {r:?}");
    assert!(matches!(tx.put(&t, b"x", b"y"), Err(Error::Invalid(_))));
    assert!(matches!(tx.commit(), Err(Error::Invalid(_))));
    assert_eq!(entries(&env, &t), before);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    // The next transaction works normally.
    let mut tx = env.write().unwrap();
    tx.put_reader(&t, b"k", 10_000, &[1u8; 10_000][..]).unwrap();
    assert_eq!(tx.get(&t, b"k").unwrap().unwrap().len(), 10_000);
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Trees: deleted handles, renames, names, kinds.

#[test]
fn deleted_tree_handle_is_no_such_tree_everywhere() {
    let (_d, env, t) = with_tree("err-deleted");
    let before = env.read().unwrap();
    let mut tx = env.write().unwrap();
    assert!(tx.delete_tree("t").unwrap());
    // In the transaction that deleted it.
    is_no_such(tx.get(&t, b"k1"), "WriteTxn::get, same txn");
    is_no_such(tx.put(&t, b"k", b"v"), "WriteTxn::put, same txn");
    is_no_such(tx.delete(&t, b"k1"), "WriteTxn::delete, same txn");
    is_no_such(tx.range::<[u8], _>(&t, ..).map(|_| ()), "WriteTxn::range, same txn");
    is_no_such(tx.prefix(&t, b"k").map(|_| ()), "WriteTxn::prefix, same txn");
    is_no_such(tx.cursor(&t).map(|_| ()), "WriteTxn::cursor, same txn");
    is_no_such(tx.tree_stats(&t), "WriteTxn::tree_stats, same txn");
    tx.commit().unwrap();
    // In a later write transaction.
    let mut tx = env.write().unwrap();
    is_no_such(tx.get(&t, b"k1"), "WriteTxn::get");
    is_no_such(tx.put(&t, b"k", b"v"), "WriteTxn::put");
    is_no_such(tx.put_reader(&t, b"k", 3, &b"abc"[..]), "WriteTxn::put_reader (inline)");
    is_no_such(tx.put_reader(&t, b"k", 50_000, Untouchable), "WriteTxn::put_reader (overflow)");
    is_no_such(tx.delete(&t, b"k1"), "WriteTxn::delete");
    is_no_such(tx.range::<[u8], _>(&t, ..).map(|_| ()), "WriteTxn::range");
    is_no_such(tx.prefix(&t, b"k").map(|_| ()), "WriteTxn::prefix");
    is_no_such(tx.cursor(&t).map(|_| ()), "WriteTxn::cursor");
    is_no_such(tx.tree_stats(&t), "WriteTxn::tree_stats");
    assert!(!tx.delete_tree("t").unwrap(), "deleting it again finds nothing");
    is_no_such(tx.rename_tree("t", "u"), "rename_tree of the deleted name");
    tx.commit().unwrap();
    // In a read transaction.
    let r = env.read().unwrap();
    is_no_such(r.get(&t, b"k1"), "ReadTxn::get");
    is_no_such(r.get_reader(&t, b"k1").map(|o| o.is_some()), "ReadTxn::get_reader");
    is_no_such(r.range::<[u8], _>(&t, ..).map(|_| ()), "ReadTxn::range");
    is_no_such(r.prefix(&t, b"k").map(|_| ()), "ReadTxn::prefix");
    is_no_such(r.cursor(&t).map(|_| ()), "ReadTxn::cursor");
    is_no_such(r.tree_stats(&t), "ReadTxn::tree_stats");
    assert!(r.open_tree("t").unwrap().is_none());
    // A snapshot from before the delete still reads the tree.
    assert_eq!(before.get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    // A tree re-created under the name is another tree: the old handle stays dead.
    drop((r, before));
    let mut tx = env.write().unwrap();
    let t2 = tx.create_tree("t").unwrap();
    is_no_such(tx.get(&t, b"k1"), "old handle after re-creation");
    assert!(tx.get(&t2, b"k1").unwrap().is_none());
    tx.commit().unwrap();
    is_no_such(env.read().unwrap().get(&t, b"k1"), "old handle after re-creation, ReadTxn");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn rename_errors() {
    let (_d, env, t) = with_tree("err-rename");
    let mut tx = env.write().unwrap();
    let u = tx.create_tree("u").unwrap();
    tx.put(&u, b"ku", b"vu").unwrap();
    tx.commit().unwrap();
    let mut tx = env.write().unwrap();
    // Onto an existing name.
    match tx.rename_tree("t", "u") {
        Err(Error::TreeExists(n)) => assert_eq!(n, "u"),
        other => panic!("rename onto an existing tree: {other:?}"),
    }
    // A missing tree, onto a free name and onto an existing one.
    match tx.rename_tree("missing", "v") {
        Err(Error::NoSuchTree(n)) => assert_eq!(n, "missing"),
        other => panic!("rename of a missing tree: {other:?}"),
    }
    is_no_such(tx.rename_tree("missing", "u"), "rename of a missing tree onto an existing one");
    is_no_such(tx.rename_tree("missing", "missing"), "rename of a missing tree onto itself");
    // Nothing moved.
    assert_eq!(tx.list_trees().unwrap(), vec!["t".to_string(), "u".to_string()]);
    assert_eq!(tx.get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    assert_eq!(tx.get(&u, b"ku").unwrap().unwrap().as_ref(), b"vu");
    // Renaming onto itself is a no-op.
    tx.rename_tree("t", "t").unwrap();
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert_eq!(r.list_trees().unwrap(), vec!["t".to_string(), "u".to_string()]);
    assert_eq!(r.get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn empty_tree_name_is_invalid() {
    let (_d, env, _t) = with_tree("err-empty-name");
    let mut tx = env.write().unwrap();
    is_invalid(tx.create_tree(""), "create_tree(\"\")");
    is_invalid(tx.create_multi_tree(""), "create_multi_tree(\"\")");
    is_invalid(tx.rename_tree("t", ""), "rename_tree(t, \"\")");
    assert_eq!(tx.list_trees().unwrap(), vec!["t".to_string()]);
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn tree_of_the_other_kind_is_wrong_tree_kind() {
    let (_d, env, t) = with_tree("err-kind");
    let mut tx = env.write().unwrap();
    let m = tx.create_multi_tree("m").unwrap();
    assert!(m.is_multi() && !t.is_multi());
    tx.multi_put(&m, b"k", b"a").unwrap();
    let wrong =
        |r: jackdaw::Result<()>, what: &str| assert!(matches!(r, Err(Error::WrongTreeKind(_))), "{what}: {r:?}");
    wrong(tx.put(&m, b"k", b"v"), "put on a multi-value tree");
    wrong(tx.get(&m, b"k").map(|_| ()), "get on a multi-value tree");
    wrong(tx.delete(&m, b"k").map(|_| ()), "delete on a multi-value tree");
    wrong(tx.multi_put(&t, b"k", b"v").map(|_| ()), "multi_put on a plain tree");
    wrong(tx.multi_get(&t, b"k").map(|_| ()), "multi_get on a plain tree");
    wrong(tx.create_tree("m").map(|_| ()), "create_tree of a multi-value name");
    wrong(tx.create_multi_tree("t").map(|_| ()), "create_multi_tree of a plain name");
    // A multi-value tree's values are keys of a nested tree: limited like keys.
    assert!(matches!(tx.multi_put(&m, b"k", vec![0u8; MAX_KEY + 1]), Err(Error::ValueTooLarge { .. })));
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert!(matches!(r.get(&m, b"k"), Err(Error::WrongTreeKind(_))));
    assert!(matches!(r.multi_get(&t, b"k").map(|_| ()), Err(Error::WrongTreeKind(_))));
    assert_eq!(r.multi_count(&m, b"k").unwrap(), 1);
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Environments: closed, locked, busy, foreign handles, options.

#[test]
fn closed_env_refuses_new_transactions_but_open_snapshots_keep_reading() {
    let (dir, env, t) = with_tree("err-closed");
    let r = env.read().unwrap();
    let other = env.clone();
    // Closed, but the live snapshot keeps the database locked: `close` says so.
    assert!(matches!(other.close(), Err(Error::Busy(_))), "close with a live snapshot");
    assert!(matches!(env.write().map(|_| ()), Err(Error::Closed)), "write after close");
    assert!(matches!(env.try_write().map(|_| ()), Err(Error::Closed)), "try_write after close");
    assert!(matches!(env.read().map(|_| ()), Err(Error::Closed)), "read after close");
    assert!(matches!(other.read().map(|_| ()), Err(Error::Closed)), "read on the closing clone");
    assert!(matches!(env.flush(), Err(Error::Closed)), "flush after close");
    assert!(matches!(other.close(), Err(Error::Busy(_))), "still locked by the snapshot");
    // The snapshot taken before the close keeps reading.
    assert_eq!(r.get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    assert_eq!(r.range::<[u8], _>(&t, ..).unwrap().count(), 1);
    assert_eq!(r.list_trees().unwrap(), vec!["t".to_string()]);
    drop((r, env, other));
    // Nothing was lost.
    let env = Env::open(&dir, test_opts()).unwrap();
    assert_eq!(entries(&env, &t), vec![(b"k1".to_vec(), b"v1".to_vec())]);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn second_open_is_locked() {
    let (dir, env) = open("err-locked");
    assert!(matches!(Env::open(&dir, test_opts()).map(|_| ()), Err(Error::Locked { .. })));
    let clone = env.clone();
    drop(env);
    assert!(matches!(Env::open(&dir, test_opts()).map(|_| ()), Err(Error::Locked { .. })), "a clone keeps the lock");
    drop(clone);
    let env = Env::open(&dir, test_opts()).unwrap();
    assert!(matches!(Env::open(&dir, test_opts()).map(|_| ()), Err(Error::Locked { .. })));
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// `close()` releases the lock at once when no transaction is alive, even while clones of the
/// `Env` live on: the same path reopens in this process, and the old clone is `Closed`.
#[test]
fn close_releases_the_lock_while_clones_live() {
    let (dir, env, _t) = with_tree("err-close-lock");
    let clone = env.clone();
    env.close().unwrap();
    let env2 = Env::open(&dir, test_opts()).expect("reopen after close, a clone of the old Env alive");
    assert!(matches!(clone.write().map(|_| ()), Err(Error::Closed)), "write on the old clone");
    assert!(matches!(clone.read().map(|_| ()), Err(Error::Closed)), "read on the old clone");
    assert!(matches!(clone.check().map(|_| ()), Err(Error::Closed)), "check on the old clone");
    clone.close().unwrap(); // idempotent, and writes nothing
    let mut tx = env2.write().unwrap();
    let t = tx.open_tree("t").unwrap().unwrap();
    assert_eq!(tx.get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    tx.put(&t, b"k2", b"v2").unwrap();
    tx.commit().unwrap();
    // Dropping the old handles (their drop closes again) leaves the new Env's data alone.
    drop((env, clone));
    env2.flush().unwrap();
    env2.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    env2.close().unwrap();
    drop(env2);
    let env3 = Env::open(&dir, test_opts()).unwrap();
    let r = env3.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.range::<[u8], _>(&t, ..).unwrap().count(), 2);
    drop(r);
    env3.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// With a read transaction alive, `close()` closes (new transactions are refused) but says the
/// database stays locked; the lock goes when that transaction ends.
#[test]
fn close_with_a_live_read_txn_keeps_the_lock_until_it_ends() {
    let (dir, env, t) = with_tree("err-close-reader");
    let r = env.read().unwrap();
    match env.close() {
        Err(Error::Busy(m)) => assert!(m.contains("still open") && m.contains("locked"), "{m}"),
        other => panic!("close with a live ReadTxn: {other:?}"),
    }
    assert!(matches!(env.read().map(|_| ()), Err(Error::Closed)));
    assert!(matches!(Env::open(&dir, test_opts()).map(|_| ()), Err(Error::Locked { .. })), "the reader keeps the lock");
    assert_eq!(r.get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    drop(r);
    let env2 = Env::open(&dir, test_opts()).expect("reopen after the last reader ended");
    env.close().unwrap(); // the lock is gone now: a second close is Ok
    env2.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// `close()` from the thread holding the write transaction: that transaction keeps the lock (its
/// commit fails with `Closed`); the lock goes when it is dropped.
#[test]
fn close_inside_a_write_txn_keeps_the_lock_until_it_ends() {
    let (dir, env, t) = with_tree("err-close-writer");
    let mut tx = env.write().unwrap();
    tx.put(&t, b"k2", b"v2").unwrap();
    assert!(matches!(env.close(), Err(Error::Busy(_))), "close with this thread's WriteTxn alive");
    assert!(matches!(Env::open(&dir, test_opts()).map(|_| ()), Err(Error::Locked { .. })));
    assert!(matches!(tx.commit().map(|_| ()), Err(Error::Closed)));
    let env2 = Env::open(&dir, test_opts()).expect("reopen after the write transaction ended");
    let r = env2.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert!(r.get(&t, b"k2").unwrap().is_none(), "the uncommitted put is not there");
    drop(r);
    env2.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn try_write_while_a_writer_is_active_is_busy() {
    let (_d, env, t) = with_tree("err-busy");
    let mut tx = env.write().unwrap();
    tx.put(&t, b"k2", b"v2").unwrap();
    assert!(matches!(env.try_write().map(|_| ()), Err(Error::Busy(_))));
    let e2 = env.clone();
    let from_thread =
        std::thread::spawn(move || matches!(e2.try_write().map(|_| ()), Err(Error::Busy(_)))).join().unwrap();
    assert!(from_thread, "try_write from another thread");
    // Readers are never blocked.
    assert_eq!(env.read().unwrap().get(&t, b"k1").unwrap().unwrap().as_ref(), b"v1");
    tx.commit().unwrap();
    let tx = env.try_write().unwrap();
    drop(tx); // abort
    env.try_write().unwrap().commit().unwrap();
    assert_eq!(entries(&env, &t).len(), 2);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn tree_handle_of_another_env_is_invalid() {
    let (_da, a, ta) = with_tree("err-foreign-a");
    // The other Env has a tree of the same name (and the same id).
    let (_db, b, tb) = with_tree("err-foreign-b");
    let mut tx = b.write().unwrap();
    is_invalid(tx.get(&ta, b"k1"), "WriteTxn::get");
    is_invalid(tx.put(&ta, b"k", b"v"), "WriteTxn::put");
    is_invalid(tx.put_reader(&ta, b"k", 50_000, Untouchable), "WriteTxn::put_reader");
    is_invalid(tx.delete(&ta, b"k1"), "WriteTxn::delete");
    is_invalid(tx.range::<[u8], _>(&ta, ..).map(|_| ()), "WriteTxn::range");
    is_invalid(tx.tree_stats(&ta), "WriteTxn::tree_stats");
    tx.commit().unwrap();
    let r = b.read().unwrap();
    is_invalid(r.get(&ta, b"k1"), "ReadTxn::get");
    is_invalid(r.range::<[u8], _>(&ta, ..).map(|_| ()), "ReadTxn::range");
    is_invalid(r.prefix(&ta, b"k").map(|_| ()), "ReadTxn::prefix");
    is_invalid(r.cursor(&ta).map(|_| ()), "ReadTxn::cursor");
    // Each handle still works in its own Env.
    assert_eq!(r.get(&tb, b"k1").unwrap().unwrap().as_ref(), b"v1");
    assert_eq!(a.read().unwrap().get(&ta, b"k1").unwrap().unwrap().as_ref(), b"v1");
    drop(r);
    a.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    b.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn bad_options_and_raw_page_arguments_are_invalid() {
    let dir = TestDb::dir("err-options");
    is_invalid(Env::open(&dir, Options::default().page_size(1000)).map(|_| ()), "page size 1000");
    is_invalid(Env::open(&dir, Options::default().page_size(6000)).map(|_| ()), "page size 6000");
    is_invalid(Env::open(&dir, Options::default().page_size(1 << 17)).map(|_| ()), "page size 128 KiB");
    let env = Env::open(&dir, test_opts().flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let end = tx.next_page();
    is_invalid(tx.page_mut(end).map(|_| ()), "page_mut past the end");
    is_invalid(tx.page_mut(0).map(|_| ()), "page_mut of a header page");
    is_invalid(tx.free_page(3), "free_page of the meta page");
    is_invalid(tx.free_page(2), "free_page of a bitmap page");
    is_invalid(tx.free_page(end + 10), "free_page past the end");
    let p = tx.alloc_page(PageKind::Raw).unwrap();
    tx.free_page(p).unwrap();
    is_invalid(tx.free_page(p), "free_page twice");
    tx.commit().unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

#[test]
fn pinned_page_versions_over_the_cap_refuse_new_writers() {
    let dir = TestDb::dir("err-pinned");
    let env = Env::open(&dir, test_opts().max_pinned_bytes(1).flusher(FlusherMode::Manual)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"a", b"1").unwrap();
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let mut tx = env.write().unwrap();
    tx.put(&t, b"a", b"2").unwrap();
    tx.commit().unwrap();
    match env.write().map(|_| ()) {
        Err(Error::PinnedLimit { pinned_bytes, cap_bytes, .. }) => assert!(pinned_bytes > cap_bytes && cap_bytes == 1),
        other => panic!("a writer while an old reader pins versions: {other:?}"),
    }
    assert_eq!(r.get(&t, b"a").unwrap().unwrap().as_ref(), b"1");
    drop(r);
    env.write().unwrap().commit().unwrap();
    assert_eq!(env.read().unwrap().get(&t, b"a").unwrap().unwrap().as_ref(), b"2");
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Not found is not an error.

#[test]
fn missing_keys_and_empty_trees_read_as_none() {
    let (_d, env) = open("err-none");
    let mut tx = env.write().unwrap();
    let e = tx.create_tree("empty").unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"b", b"1").unwrap();
    assert!(tx.get(&e, b"k").unwrap().is_none(), "get on an empty tree, same txn");
    assert!(tx.get(&e, b"").unwrap().is_none(), "get of the empty key on an empty tree");
    assert!(tx.get(&t, b"a").unwrap().is_none() && tx.get(&t, b"c").unwrap().is_none(), "missing keys");
    assert!(!tx.delete(&e, b"k").unwrap() && !tx.delete(&t, b"zz").unwrap(), "delete of missing keys");
    assert!(tx.open_tree("nope").unwrap().is_none());
    assert!(!tx.delete_tree("nope").unwrap());
    assert_eq!(tx.range::<[u8], _>(&e, ..).unwrap().count(), 0);
    assert_eq!(tx.prefix(&t, b"a").unwrap().count(), 0);
    tx.commit().unwrap();
    let r = env.read().unwrap();
    assert!(r.get(&e, b"k").unwrap().is_none(), "get on an empty tree");
    assert!(r.get_reader(&e, b"k").unwrap().is_none(), "get_reader on an empty tree");
    assert!(
        r.get(&t, b"a").unwrap().is_none() && r.get(&t, b"bb").unwrap().is_none() && r.get(&t, b"").unwrap().is_none()
    );
    assert!(r.get_reader(&t, b"a").unwrap().is_none());
    assert_eq!(r.tree_stats(&e).unwrap().entries, 0);
    assert_eq!(r.range::<[u8], _>(&e, ..).unwrap().count(), 0);
    assert_eq!(r.range::<[u8], _>(&e, ..).unwrap().next_back().map(|x| x.is_ok()), None);
    assert_eq!(r.prefix(&e, b"").unwrap().count(), 0);
    let mut c = r.cursor(&e).unwrap();
    c.first().unwrap();
    assert!(c.current().unwrap().is_none());
    c.seek(b"a").unwrap();
    assert!(c.current().unwrap().is_none() && c.next().unwrap().is_none() && c.prev().unwrap().is_none());
    assert!(r.open_tree("nope").unwrap().is_none());
    drop(r);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Engine bugs.

/// Regression (fixed engine bug): tree ids are handed out again after an abort (`next_tree_id` is only persisted by
/// commit), and a handle resolves by id when its name does not match. So the handle of a tree
/// created in an aborted transaction silently reads and writes whatever tree is created next,
/// under any name, instead of failing with `NoSuchTree`. (`TreeDesc` documents ids as "unique,
/// never reused".)
/// Reproduction: tx1: `ghost = create_tree("ghost")`, abort; tx2: `real = create_tree("real")`,
/// `put(&real, "k", "v")`; `get(&ghost, "k")` -> Ok(Some("v")).
#[test]
fn regression_handle_of_aborted_create_never_aliases_a_later_tree() {
    let (_d, env) = open("err-ghost");
    let mut tx = env.write().unwrap();
    let ghost = tx.create_tree("ghost").unwrap();
    tx.put(&ghost, b"k", b"ghost value").unwrap();
    drop(tx);
    let mut tx = env.write().unwrap();
    let real = tx.create_tree("real").unwrap();
    tx.put(&real, b"k", b"v").unwrap();
    let got = tx.get(&ghost, b"k");
    assert!(matches!(got, Err(Error::NoSuchTree(_))), "handle of an aborted create, write txn: {got:?}");
    // Writes through it must not land in "real".
    let _ = tx.put(&ghost, b"k2", b"x");
    assert!(tx.get(&real, b"k2").unwrap().is_none(), "a write through the dead handle landed in another tree");
    tx.commit().unwrap();
    let got = env.read().unwrap().get(&ghost, b"k");
    assert!(matches!(got, Err(Error::NoSuchTree(_))), "handle of an aborted create, read txn: {got:?}");
}

/// Regression (fixed engine bug): tree names are accepted up to `max_key_size` (2,001 bytes at 4 KiB pages), but a
/// name plus its 64-byte descriptor only fits a leaf entry (two per page) up to
/// 2022 - 5 - 64 = 1953 bytes. A longer name landing between two others in a full root-tree leaf
/// cannot be split around: `create_tree` fails with `Corrupted("entries too large to split")`,
/// and the failed insert has already counted the entry in the root tree's descriptor, so the
/// transaction still commits and `check()` then reports "tree (root): 2 entries, its descriptor
/// counts 3".
/// Reproduction: `create_tree("b" * 1953)`, `create_tree("d" * 1953)`, `create_tree("c" * 1954)`
/// -> Err(Corrupted); `commit()` -> Ok; `check()` -> Err(Corrupted).
#[test]
fn regression_tree_names_longer_than_1953_bytes_are_rejected() {
    let (_d, env) = open("err-long-names");
    let mut tx = env.write().unwrap();
    tx.create_tree(&"b".repeat(1953)).unwrap();
    tx.create_tree(&"d".repeat(1953)).unwrap();
    let name = "c".repeat(1954);
    match tx.create_tree(&name) {
        Ok(h) => tx.put(&h, b"k", b"v").unwrap(),
        // A clean refusal would be acceptable (the name is within max_key_size, though).
        Err(Error::TreeNameTooLong { .. } | Error::Invalid(_)) => {}
        Err(e) => {
            let _ = tx.commit();
            let check = env.check().and_then(jackdaw::CheckReport::into_result).map(|_| ());
            panic!("create_tree of a {}-byte name: {e:?}; check() after committing: {check:?}", name.len());
        }
    }
    tx.commit().unwrap();
    if let Err(e) = env.check().and_then(jackdaw::CheckReport::into_result) {
        panic!("check() after creating trees with long names: {e}");
    }
}
