//! The typed layer: [`TypedTree<K, V>`](TypedTree), a handle over a bytes-level [`Tree`] that
//! encodes keys with an order-preserving encoding ([`Key`]) and values with [`Value`]. The bytes
//! API stays underneath and the two interoperate: `TypedTree::from(tree)`, `typed.tree()`.
//!
//! ```
//! use jackdaw::{Env, Options, TypedTree};
//! # let dir = std::env::temp_dir().join(format!("jackdaw-typed-doc-{}", std::process::id()));
//! let env = Env::open(&dir, Options::default())?;
//! let mut tx = env.write()?;
//! let albums: TypedTree<(String, u16), String> = tx.create_typed("albums")?;
//! albums.put(&mut tx, &("Pearl Jam", 1991), "Ten")?;
//! albums.put(&mut tx, &("Pearl Jam", 1993), "Vs.")?;
//! albums.put(&mut tx, &("Nirvana", 1991), "Nevermind")?;
//! tx.commit()?;
//!
//! let rtx = env.read()?;
//! assert_eq!(albums.get(&rtx, &("Pearl Jam", 1993))?.as_deref(), Some("Vs."));
//! // Every key whose first component is "Pearl Jam", newest first.
//! let pj: Vec<_> = albums.prefix(&rtx, &("Pearl Jam",))?.rev().collect::<Result<_, _>>()?;
//! assert_eq!(pj, [(("Pearl Jam".into(), 1993), "Vs.".into()), (("Pearl Jam".into(), 1991), "Ten".into())]);
//! // Typed bounds, inferred from the tree's key type.
//! assert_eq!(albums.range(&rtx, ..)?.count(), 3);
//! assert_eq!(albums.range(&rtx, ("Pearl Jam".to_string(), 0)..)?.count(), 2);
//! // A raw string prefix of the first component.
//! assert_eq!(albums.prefix_str(&rtx, "Pearl")?.count(), 2);
//! // The bytes API sees the encoded keys.
//! let (k, v) = rtx.range(albums.tree(), ..)?.next().unwrap()?;
//! assert_eq!((k.as_ref(), v.as_ref()), (&b"Nirvana\x00\x01\x07\xc7"[..], &b"Nevermind"[..]));
//! # drop(rtx); drop(env); std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Key encoding (on-disk format)
//!
//! Keys are stored as the bytes below and compared as bytes (memcmp), so the encoding preserves
//! the order of the Rust type: `a.cmp(&b) == enc(a).cmp(&enc(b))`. This is a format users depend
//! on: a tree written with one key type must be read with the same type.
//!
//! | Type | Bytes |
//! |---|---|
//! | `u8`, `u16`, `u32`, `u64`, `u128` | the value big-endian, 1/2/4/8/16 bytes: `0x0102u16` → `01 02` |
//! | `i8`, `i16`, `i32`, `i64`, `i128` | two's complement big-endian with the sign bit flipped (so negatives sort first): `-1i16` → `7f ff`, `0i16` → `80 00`, `i16::MIN` → `00 00` |
//! | `bool` | one byte, `00` (false) or `01` (true) |
//! | `[u8; N]` | the N bytes as they are (fixed width: no terminator) |
//! | `String`, `Vec<u8>` | the bytes (UTF-8 for strings), each `00` written as `00 ff`, then the terminator `00 01`: `"a\0b"` → `61 00 ff 62 00 01`, `""` → `00 01` |
//! | tuples of 1 to 4 of the above | the components' encodings concatenated, each in its own form (a string component is terminated wherever it is, also last) |
//!
//! Variable-length components are escaped and terminated, as in FoundationDB's tuple layer, not
//! length-prefixed, so the encoding of a tuple's first components is a byte prefix of the whole
//! key's encoding: [`TypedTree::prefix`] with `("Pearl Jam",)` finds every `("Pearl Jam", _)`.
//! The terminator is two bytes, `00 01`, not FoundationDB's single `00`: with no type code
//! between components, a single `00` followed by a component starting with `ff` would read as
//! an escaped zero, and `("a", 255u8, 5u8)` (`61 00 ff 05`) would sort after `("a\0", 0u8, 0u8)`
//! (`61 00 ff 00 01 00 00`). After a `00` only `ff` (a zero byte) or `01` (the end) can
//! follow, and the end sorts below every continuation, so a string sorts before its
//! extensions. A raw prefix of a string ([`TypedTree::prefix_str`]) is the escaped bytes
//! without the terminator.
//!
//! Decoding checks everything (lengths, terminators, escapes, UTF-8, no trailing bytes) and
//! returns `Error::Corrupted` for bytes that do not decode — never a panic.
//!
//! # Value encoding
//!
//! Values are not compared except in multi-value trees (where a key's values are kept in byte
//! order). `Vec<u8>` and `String` are stored as they are; `[u8; N]` as its N bytes; `()` as no
//! bytes; integers and `bool` as keys are (fixed width, big-endian, sign flipped), so the values
//! of a multi-value tree come out in numeric order. `Serde<T>` (feature `serde`) stores
//! any serde type with postcard.
//!
//! # Owned types and borrowed arguments
//!
//! `K` and `V` are owned types (`String`, not `&str`): what a tree returns is decoded out of a
//! page and must outlive it. Arguments are borrowed and may be borrowed forms ([`AsKey`],
//! [`AsValue`]): on a `TypedTree<(String, u32), String>`, `put(&mut tx, &("Ten", 1991), "x")`.
//!
//! # Transactions
//!
//! Reading methods take [`ReadAccess`]: `&ReadTxn` or `&mut WriteTxn` (the latter sees the
//! transaction's own changes; reborrow with `&mut *tx` when `tx` is already a `&mut WriteTxn`).
//! Writing methods take `&mut WriteTxn`. Batches take typed trees too: `batch.put(&albums, &k, &v)`
//! (see [`WriteBatch`](crate::WriteBatch)).

pub(crate) mod key;
pub(crate) mod value;

pub use key::{AsKey, Key, KeyPrefix};
#[cfg(feature = "serde")]
pub use value::Serde;
pub use value::{AsValue, Value};

use crate::api::iter::{SnapSource, TxSource};
use crate::{Bytes, Range, ReadTxn, Result, Tree, TreeStats, Values, WriteRange, WriteTxn};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

mod sealed {
    pub trait Sealed {}
    impl Sealed for &crate::ReadTxn {}
    impl Sealed for &mut crate::WriteTxn {}
}

/// A transaction typed trees can read through: `&ReadTxn` (a snapshot) or `&mut WriteTxn`
/// (seeing its own uncommitted changes). Sealed.
pub trait ReadAccess: sealed::Sealed {
    /// The bytes-level range this access gives (`Range` or `WriteRange`).
    type Range: DoubleEndedIterator<Item = Result<(Bytes, Bytes)>>;
    /// The bytes-level values of one key of a multi-value tree.
    type Values: DoubleEndedIterator<Item = Result<Bytes>>;
    #[doc(hidden)]
    fn open_raw(self, name: &str) -> Result<Option<Tree>>;
    #[doc(hidden)]
    fn get_raw(self, tree: &Tree, key: &[u8]) -> Result<Option<Bytes>>;
    #[doc(hidden)]
    fn range_raw(self, tree: &Tree, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Result<Self::Range>;
    #[doc(hidden)]
    fn prefix_raw(self, tree: &Tree, prefix: &[u8]) -> Result<Self::Range>;
    #[doc(hidden)]
    fn multi_get_raw(self, tree: &Tree, key: &[u8]) -> Result<Self::Values>;
    #[doc(hidden)]
    fn multi_count_raw(self, tree: &Tree, key: &[u8]) -> Result<u64>;
    #[doc(hidden)]
    fn stats_raw(self, tree: &Tree) -> Result<TreeStats>;
}

/// One `ReadAccess` impl per transaction reference: each forwards to the bytes API's method of
/// the same name.
macro_rules! read_access {
    ($($t:ty => $range:ty, $values:ty;)*) => {$(
        impl<'a> ReadAccess for $t {
            type Range = $range;
            type Values = $values;
            fn open_raw(self, name: &str) -> Result<Option<Tree>> {
                self.open_tree(name)
            }
            fn get_raw(self, tree: &Tree, key: &[u8]) -> Result<Option<Bytes>> {
                self.get(tree, key)
            }
            fn range_raw(self, tree: &Tree, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Result<$range> {
                self.range(tree, (lo, hi))
            }
            fn prefix_raw(self, tree: &Tree, prefix: &[u8]) -> Result<$range> {
                self.prefix(tree, prefix)
            }
            fn multi_get_raw(self, tree: &Tree, key: &[u8]) -> Result<$values> {
                self.multi_get(tree, key)
            }
            fn multi_count_raw(self, tree: &Tree, key: &[u8]) -> Result<u64> {
                self.multi_count(tree, key)
            }
            fn stats_raw(self, tree: &Tree) -> Result<TreeStats> {
                self.tree_stats(tree)
            }
        }
    )*};
}
read_access! {
    &'a ReadTxn => Range, Values<SnapSource>;
    &'a mut WriteTxn => WriteRange<'a>, Values<TxSource<'a>>;
}

/// A handle to a named tree with typed keys `K` and values `V`: a [`Tree`] plus the types. Cheap
/// to clone; like `Tree`, bound to the tree's identity. Works on plain trees (`get`, `put`,
/// `delete`) and on multi-value trees (`multi_put`, `multi_get`, ...); ranges and prefixes work
/// on both (one item per value in a multi-value tree).
///
/// The types are not recorded in the database: opening a tree with other types than it was
/// written with gives `Error::Corrupted` when a key or value does not decode (or wrong values
/// when it happens to decode).
///
/// ```
/// use jackdaw::{Env, Options, TypedTree};
/// # let dir = std::env::temp_dir().join(format!("jackdaw-typedtree-doc-{}", std::process::id()));
/// let env = Env::open(&dir, Options::default())?;
/// let mut tx = env.write()?;
/// let years = TypedTree::<String, u16>::create(&mut tx, "years")?;
/// years.put(&mut tx, "Ten", &1991)?;
/// years.put(&mut tx, "Vs.", &1993)?;
/// assert_eq!(years.get(&mut tx, "Ten")?, Some(1991));
/// tx.commit()?;
/// let rtx = env.read()?;
/// let years: TypedTree<String, u16> = rtx.open_typed("years")?.expect("created");
/// let all: Vec<(String, u16)> = years.range(&rtx, ..)?.collect::<Result<_, _>>()?;
/// assert_eq!(all, [("Ten".to_string(), 1991), ("Vs.".to_string(), 1993)]);
/// # drop(rtx); drop(env); std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TypedTree<K, V> {
    tree: Tree,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for TypedTree<K, V> {
    fn clone(&self) -> Self {
        TypedTree { tree: self.tree.clone(), types: PhantomData }
    }
}

impl<K, V> std::fmt::Debug for TypedTree<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedTree")
            .field("tree", &self.tree)
            .field("key", &std::any::type_name::<K>())
            .field("value", &std::any::type_name::<V>())
            .finish()
    }
}

impl<K, V> From<Tree> for TypedTree<K, V> {
    /// View a bytes-level tree through types (nothing is checked: see [`TypedTree`]).
    fn from(tree: Tree) -> Self {
        TypedTree { tree, types: PhantomData }
    }
}

impl<K, V> From<TypedTree<K, V>> for Tree {
    fn from(t: TypedTree<K, V>) -> Tree {
        t.tree
    }
}

fn enc_key<K, Q: AsKey<K> + ?Sized>(key: &Q) -> Vec<u8> {
    let mut out = Vec::new();
    key.encode_key(&mut out);
    out
}

fn enc_value<V, Q: AsValue<V> + ?Sized>(value: &Q) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    value.encode_value(&mut out)?;
    Ok(out)
}

fn enc_bound<K: Key>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_key_bytes()),
        Bound::Excluded(k) => Bound::Excluded(k.to_key_bytes()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<K: Key, V: Value> TypedTree<K, V> {
    /// Create the plain tree `name`, or open it if it exists (as `WriteTxn::create_tree`).
    pub fn create(tx: &mut WriteTxn, name: &str) -> Result<Self> {
        tx.create_tree(name).map(TypedTree::from)
    }

    /// Create the multi-value tree `name`, or open it if it exists.
    pub fn create_multi(tx: &mut WriteTxn, name: &str) -> Result<Self> {
        tx.create_multi_tree(name).map(TypedTree::from)
    }

    /// The tree `name` (plain or multi-value), if it exists.
    pub fn open<X: ReadAccess>(tx: X, name: &str) -> Result<Option<Self>> {
        Ok(tx.open_raw(name)?.map(TypedTree::from))
    }

    /// The bytes-level handle (keys and values as encoded).
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The bytes-level handle, by value.
    pub fn into_tree(self) -> Tree {
        self.tree
    }

    /// The value of `key`, if present.
    pub fn get<X: ReadAccess, Q: AsKey<K> + ?Sized>(&self, tx: X, key: &Q) -> Result<Option<V>> {
        match tx.get_raw(&self.tree, &enc_key(key))? {
            Some(v) => V::decode_value(&v).map(Some),
            None => Ok(None),
        }
    }

    /// Insert or replace `key`.
    pub fn put<QK: AsKey<K> + ?Sized, QV: AsValue<V> + ?Sized>(
        &self,
        tx: &mut WriteTxn,
        key: &QK,
        value: &QV,
    ) -> Result<()> {
        tx.put(&self.tree, enc_key(key), enc_value(value)?)
    }

    /// Delete `key`; true if it was present.
    pub fn delete<Q: AsKey<K> + ?Sized>(&self, tx: &mut WriteTxn, key: &Q) -> Result<bool> {
        tx.delete(&self.tree, enc_key(key))
    }

    /// Entries with keys in `range`, in key order (double-ended). The bounds are of the tree's
    /// key type, so `tree.range(&rtx, ..)` needs no annotation.
    pub fn range<X: ReadAccess, R: RangeBounds<K>>(&self, tx: X, range: R) -> Result<TypedRange<K, V, X::Range>> {
        let (lo, hi) = (enc_bound(range.start_bound()), enc_bound(range.end_bound()));
        Ok(TypedRange::new(tx.range_raw(&self.tree, lo, hi)?))
    }

    /// Every entry, in key order (double-ended): `range(tx, ..)`.
    pub fn iter<X: ReadAccess>(&self, tx: X) -> Result<TypedRange<K, V, X::Range>> {
        self.range(tx, ..)
    }

    /// Entries whose keys start with `prefix`, a tuple of the key's first components:
    /// `("Pearl Jam",)` on a `(String, u64)` tree.
    pub fn prefix<X: ReadAccess, P: KeyPrefix<K> + ?Sized>(
        &self,
        tx: X,
        prefix: &P,
    ) -> Result<TypedRange<K, V, X::Range>> {
        let mut p = Vec::new();
        prefix.encode_prefix(&mut p);
        Ok(TypedRange::new(tx.prefix_raw(&self.tree, &p)?))
    }

    /// Entries whose key starts with a string (or whose first component does) that starts with
    /// `prefix`: `"Pearl"` finds `"Pearl Jam"` on a `String` or `(String, ..)` tree. On other
    /// key types it matches the keys whose encoding starts with the escaped bytes of `prefix`.
    pub fn prefix_str<X: ReadAccess>(&self, tx: X, prefix: &str) -> Result<TypedRange<K, V, X::Range>> {
        self.prefix_bytes(tx, prefix.as_bytes())
    }

    /// As [`prefix_str`](Self::prefix_str), for byte-string keys (`Vec<u8>`, or a first
    /// component of that type).
    pub fn prefix_bytes<X: ReadAccess>(&self, tx: X, prefix: &[u8]) -> Result<TypedRange<K, V, X::Range>> {
        let mut p = Vec::new();
        key::put_escaped(prefix, &mut p);
        Ok(TypedRange::new(tx.prefix_raw(&self.tree, &p)?))
    }

    /// Number of entries (values, in a multi-value tree), from the tree's descriptor.
    pub fn len<X: ReadAccess>(&self, tx: X) -> Result<u64> {
        Ok(tx.stats_raw(&self.tree)?.entries)
    }

    /// Multi-value tree: add `value` to `key`'s values; false if it was there already.
    pub fn multi_put<QK: AsKey<K> + ?Sized, QV: AsValue<V> + ?Sized>(
        &self,
        tx: &mut WriteTxn,
        key: &QK,
        value: &QV,
    ) -> Result<bool> {
        tx.multi_put(&self.tree, enc_key(key), enc_value(value)?)
    }

    /// Multi-value tree: remove `value` from `key`'s values; false if it was not there.
    pub fn multi_delete<QK: AsKey<K> + ?Sized, QV: AsValue<V> + ?Sized>(
        &self,
        tx: &mut WriteTxn,
        key: &QK,
        value: &QV,
    ) -> Result<bool> {
        tx.multi_delete(&self.tree, enc_key(key), enc_value(value)?)
    }

    /// Multi-value tree: remove every value of `key`; returns how many there were.
    pub fn multi_delete_all<Q: AsKey<K> + ?Sized>(&self, tx: &mut WriteTxn, key: &Q) -> Result<u64> {
        tx.multi_delete_all(&self.tree, enc_key(key))
    }

    /// Multi-value tree: the values of `key`, in the byte order of their encodings
    /// (double-ended).
    pub fn multi_get<X: ReadAccess, Q: AsKey<K> + ?Sized>(&self, tx: X, key: &Q) -> Result<TypedValues<V, X::Values>> {
        Ok(TypedValues { inner: tx.multi_get_raw(&self.tree, &enc_key(key))?, types: PhantomData })
    }

    /// Multi-value tree: the number of values of `key`, in O(1).
    pub fn multi_count<X: ReadAccess, Q: AsKey<K> + ?Sized>(&self, tx: X, key: &Q) -> Result<u64> {
        tx.multi_count_raw(&self.tree, &enc_key(key))
    }
}

/// Typed entries of a range or prefix: `Result<(K, V)>` in key order, double-ended (`.rev()`).
/// An entry that does not decode as `(K, V)` is an `Err(Error::Corrupted)` item.
pub struct TypedRange<K, V, I> {
    inner: I,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V, I> TypedRange<K, V, I> {
    fn new(inner: I) -> Self {
        TypedRange { inner, types: PhantomData }
    }
    /// The bytes-level iterator underneath (encoded keys and values).
    pub fn into_inner(self) -> I {
        self.inner
    }
}

fn decode_pair<K: Key, V: Value>(item: Result<(Bytes, Bytes)>) -> Result<(K, V)> {
    let (k, v) = item?;
    Ok((K::from_key_bytes(&k)?, V::decode_value(&v)?))
}

impl<K: Key, V: Value, I: Iterator<Item = Result<(Bytes, Bytes)>>> Iterator for TypedRange<K, V, I> {
    type Item = Result<(K, V)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(decode_pair)
    }
}

impl<K: Key, V: Value, I: DoubleEndedIterator<Item = Result<(Bytes, Bytes)>>> DoubleEndedIterator
    for TypedRange<K, V, I>
{
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(decode_pair)
    }
}

/// The typed values of one key of a multi-value tree: `Result<V>`, double-ended.
pub struct TypedValues<V, I> {
    inner: I,
    types: PhantomData<fn() -> V>,
}

impl<V, I> TypedValues<V, I> {
    /// The bytes-level iterator underneath.
    pub fn into_inner(self) -> I {
        self.inner
    }
}

impl<V: Value, I: Iterator<Item = Result<Bytes>>> Iterator for TypedValues<V, I> {
    type Item = Result<V>;
    fn next(&mut self) -> Option<Result<V>> {
        self.inner.next().map(|r| r.and_then(|v| V::decode_value(&v)))
    }
}

impl<V: Value, I: DoubleEndedIterator<Item = Result<Bytes>>> DoubleEndedIterator for TypedValues<V, I> {
    fn next_back(&mut self) -> Option<Result<V>> {
        self.inner.next_back().map(|r| r.and_then(|v| V::decode_value(&v)))
    }
}

impl WriteTxn {
    /// Create the plain tree `name` (or open it if it exists) as a typed tree.
    pub fn create_typed<K: Key, V: Value>(&mut self, name: &str) -> Result<TypedTree<K, V>> {
        TypedTree::create(self, name)
    }

    /// Create the multi-value tree `name` (or open it if it exists) as a typed tree.
    pub fn create_typed_multi<K: Key, V: Value>(&mut self, name: &str) -> Result<TypedTree<K, V>> {
        TypedTree::create_multi(self, name)
    }

    /// The tree `name` as a typed tree, if it exists.
    pub fn open_typed<K: Key, V: Value>(&mut self, name: &str) -> Result<Option<TypedTree<K, V>>> {
        TypedTree::open(self, name)
    }
}

impl ReadTxn {
    /// The tree `name` as a typed tree, if it exists in this snapshot.
    pub fn open_typed<K: Key, V: Value>(&self, name: &str) -> Result<Option<TypedTree<K, V>>> {
        TypedTree::open(self, name)
    }
}
