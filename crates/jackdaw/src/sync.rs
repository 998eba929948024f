//! The engine's locks, condition variables, atomics, channels and threads, in one place.
//!
//! Every other module takes its concurrency primitives from here, never from `parking_lot` or
//! `std::sync` directly (plain `Arc` and statistics counters excepted: they never block). A normal
//! build re-exports `parking_lot` and `std` (and wraps `crossbeam_utils`'s sharded lock). A build
//! with the `shuttle` feature swaps in wrappers over the `shuttle` crate's primitives with the
//! same (parking_lot-shaped) API, so that the deterministic scheduler of `tests/shuttle.rs` sees —
//! and chooses the interleaving of — every lock, wait, notify, atomic access, channel operation
//! and thread of the engine.
//!
//! Invariant: no code of the engine blocks on anything that is not from this module (or on I/O
//! through the `Storage` trait); otherwise a shuttle schedule could hang on a lock its scheduler
//! cannot see.

#[cfg(not(feature = "shuttle"))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
    pub(crate) use std::sync::mpsc;
    pub(crate) use std::thread;
    pub(crate) use std::thread_local;

    /// A number fixed for the calling thread, different for each of the process's threads
    /// (handed out in turn): what spreads threads over the readers' lanes.
    pub(crate) fn thread_seed() -> usize {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! { static SEED: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) } }
        SEED.with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT.fetch_add(1, Ordering::Relaxed));
            }
            s.get()
        })
    }

    /// A reader-writer lock for data read on every thread and written rarely: a reader takes one
    /// of several locks, chosen by its thread, each on cache lines of its own, and a writer takes
    /// them all (`crossbeam_utils::sync::ShardedLock`; poisoning ignored, as parking_lot has
    /// none). Readers on different threads write no line in common.
    #[derive(Default)]
    pub(crate) struct ShardedRwLock<T>(crossbeam_utils::sync::ShardedLock<T>);
    impl<T> ShardedRwLock<T> {
        #[inline]
        pub(crate) fn read(&self) -> crossbeam_utils::sync::ShardedLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn write(&self) -> crossbeam_utils::sync::ShardedLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// The single-writer lock: a guard can be owned by a transaction object (not a borrow).
    #[derive(Default)]
    pub(crate) struct WriterLock(std::sync::Arc<Mutex<()>>);

    /// An owned hold on a [`WriterLock`]; released on drop.
    pub(crate) struct WriterGuard(#[allow(dead_code)] parking_lot::lock_api::ArcMutexGuard<parking_lot::RawMutex, ()>);

    impl WriterLock {
        pub(crate) fn lock(&self) -> WriterGuard {
            WriterGuard(self.0.lock_arc())
        }
        pub(crate) fn try_lock(&self) -> Option<WriterGuard> {
            self.0.try_lock_arc().map(WriterGuard)
        }
    }
}

#[cfg(feature = "shuttle")]
mod imp {
    use shuttle::sync as s;
    use std::ops::{Deref, DerefMut};
    use std::time::Duration;

    pub(crate) use s::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
    pub(crate) use s::mpsc;
    pub(crate) use shuttle::thread;
    pub(crate) use shuttle::thread_local;

    /// The shuttle task's id: fixed per thread and the same in every replay of a schedule.
    pub(crate) fn thread_seed() -> usize {
        usize::from(shuttle::current::me())
    }

    /// `parking_lot::Mutex`'s API over shuttle's mutex (poisoning is ignored, as parking_lot has none).
    #[derive(Default)]
    pub(crate) struct Mutex<T>(s::Mutex<T>);
    /// A guard that a [`Condvar`] can take and give back through `&mut`.
    pub(crate) struct MutexGuard<'a, T>(Option<s::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) const fn new(v: T) -> Self {
            Mutex(s::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(|e| e.into_inner())))
        }
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(g) => Some(MutexGuard(Some(g))),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(MutexGuard(Some(e.into_inner()))),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }
    }
    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present outside a wait")
        }
    }
    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present outside a wait")
        }
    }

    /// `parking_lot::Condvar`'s API over shuttle's condition variable.
    #[derive(Default)]
    pub(crate) struct Condvar(s::Condvar);
    impl Condvar {
        pub(crate) const fn new() -> Self {
            Condvar(s::Condvar::new())
        }
        pub(crate) fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
            let inner = g.0.take().expect("guard present");
            g.0 = Some(self.0.wait(inner).unwrap_or_else(|e| e.into_inner()));
        }
        pub(crate) fn wait_while<T>(&self, g: &mut MutexGuard<'_, T>, mut cond: impl FnMut(&mut T) -> bool) {
            while cond(&mut *g) {
                self.wait(g);
            }
        }
        /// Shuttle never times a wait out: the waiter needs a notify (the engine's timed waits
        /// are idle polls, and every state change they watch for also notifies).
        pub(crate) fn wait_for<T>(&self, g: &mut MutexGuard<'_, T>, _timeout: Duration) {
            self.wait(g);
        }
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// `parking_lot::RwLock`'s API over shuttle's reader-writer lock.
    #[derive(Default)]
    pub(crate) struct RwLock<T>(s::RwLock<T>);
    impl<T> RwLock<T> {
        pub(crate) const fn new(v: T) -> Self {
            RwLock(s::RwLock::new(v))
        }
        pub(crate) fn read(&self) -> s::RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn write(&self) -> s::RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// `ShardedRwLock`: one reader-writer lock under shuttle (the sharding changes no ordering).
    pub(crate) type ShardedRwLock<T> = RwLock<T>;

    /// The single-writer lock, as a flag under a mutex (shuttle has no owned guards).
    #[derive(Default)]
    pub(crate) struct WriterLock(std::sync::Arc<(Mutex<bool>, Condvar)>);
    /// An owned hold on a [`WriterLock`]; released on drop.
    pub(crate) struct WriterGuard(std::sync::Arc<(Mutex<bool>, Condvar)>);

    impl WriterLock {
        pub(crate) fn lock(&self) -> WriterGuard {
            let mut held = self.0 .0.lock();
            self.0 .1.wait_while(&mut held, |h| *h);
            *held = true;
            WriterGuard(self.0.clone())
        }
        pub(crate) fn try_lock(&self) -> Option<WriterGuard> {
            let mut held = self.0 .0.lock();
            if *held {
                return None;
            }
            *held = true;
            Some(WriterGuard(self.0.clone()))
        }
    }
    impl Drop for WriterGuard {
        fn drop(&mut self) {
            *self.0 .0.lock() = false;
            self.0 .1.notify_one();
        }
    }
}

pub(crate) use imp::*;
