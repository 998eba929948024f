//! The public API's contracts that the compiler can check: thread-safety of the handle types
//! (static assertions, including that `WriteTxn` is *not* `Send`), that every type a signature
//! returns is nameable, and that reads on a `WriteTxn` take `&self` (a cursor stays open while
//! other lookups are made in the same transaction).

mod common;

use common::{test_opts, TestDb};
use jackdaw::{Env, Range, ReadCursor, ReadTxn, ReadValues, WriteCursor, WriteRange, WriteTxn, WriteValues};

fn is_send_sync_clone<T: Send + Sync + Clone>() {}
fn is_send<T: Send + 'static>() {}

/// Resolves only if `T` is not `Send`: with `T: Send` both impls apply and the call is ambiguous
/// (a compile error), the usual way to assert that a trait is *not* implemented.
trait AmbiguousIfSend<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<u8> for T {}
trait AmbiguousIfSync<A> {
    fn check() {}
}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}

#[test]
fn thread_safety_contract() {
    // `Env` is shared freely between threads.
    is_send_sync_clone::<Env>();
    // A read snapshot moves to another thread (it owns what it reads), and so do its ranges.
    is_send::<ReadTxn>();
    is_send::<Range>();
    // But it is not `Sync`: its lookups share a leaf cache in a `RefCell`, which is what makes
    // them cheap. Share the `Env` and begin a snapshot per thread instead.
    <ReadTxn as AmbiguousIfSync<_>>::check();
    // The write transaction stays on the thread that began it: the writer lock is held per
    // thread (misuse on that thread is detected and refused), so it is not `Send` on purpose.
    <WriteTxn as AmbiguousIfSend<_>>::check();
}

#[test]
fn reads_on_a_write_transaction_take_shared_references() {
    let dir = TestDb::dir("api-surface");
    let env = Env::open(dir.path(), test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    let m = tx.create_multi_tree("m").unwrap();
    for i in 0u32..500 {
        tx.put(&t, i.to_be_bytes(), i.to_le_bytes()).unwrap();
        tx.multi_put(&m, [(i % 7) as u8], i.to_be_bytes()).unwrap();
    }
    {
        let tx: &WriteTxn = &tx;
        // A cursor open while other reads are made in the same transaction.
        let mut c: WriteCursor<'_> = tx.cursor(&t).unwrap();
        c.first().unwrap();
        let mut n = 0u32;
        let mut item = c.current().unwrap();
        while let Some((k, v)) = item {
            let i = u32::from_be_bytes(k.as_ref().try_into().unwrap());
            assert_eq!(v.as_ref(), i.to_le_bytes());
            // Another lookup, a range and a multi-value read while the cursor is open.
            assert_eq!(tx.get(&t, k.as_ref()).unwrap().unwrap().as_ref(), v.as_ref());
            if i % 100 == 0 {
                let r: WriteRange<'_> = tx.range(&t, i.to_be_bytes().as_slice()..).unwrap();
                assert_eq!(r.count() as u32, 500 - i);
                let vals: WriteValues<'_> = tx.multi_get(&m, [(i % 7) as u8]).unwrap();
                assert_eq!(vals.count() as u64, tx.multi_count(&m, [(i % 7) as u8]).unwrap());
            }
            n += 1;
            item = c.next().unwrap();
        }
        assert_eq!(n, 500);
        assert_eq!(tx.tree_stats(&t).unwrap().entries, 500);
        assert!(tx.open_tree("t").unwrap().is_some());
    }
    tx.commit().unwrap();
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    let m = r.open_tree("m").unwrap().unwrap();
    let mut c: ReadCursor = r.cursor(&t).unwrap();
    c.last().unwrap();
    let vals: ReadValues = r.multi_get(&m, [3u8]).unwrap();
    assert_eq!(vals.count(), (0..500).filter(|i| i % 7 == 3).count());
    let all: Range = r.range(&t, ..).unwrap();
    assert_eq!(all.count(), 500);
}
