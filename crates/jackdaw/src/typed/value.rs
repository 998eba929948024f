//! Value encodings: [`Value`], [`AsValue`] and (feature `serde`) `Serde`.

use super::key::Key;
use crate::{Error, Result};

fn bad(what: &str, why: &str) -> Error {
    Error::corrupted(None, format!("typed value does not decode as {what}: {why}"))
}

/// A value that encodes exactly as a value of type `V` does: `V` itself, and borrowed forms (`str`
/// for `String`, `[u8]` and `[u8; N]` for `Vec<u8>`, `&Q` for any `Q: AsValue<V>`).
pub trait AsValue<V: ?Sized> {
    /// Append the encoding of `self` (as a `V`) to `out`. Only serde encodings can fail.
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()>;
}

/// A value type of a [`TypedTree`](crate::TypedTree).
///
/// Without features: `Vec<u8>` and `String` (the bytes as they are), `[u8; N]`, `bool`, `()`
/// (empty) and the integer types (fixed width, big-endian with the sign bit flipped: the key
/// encoding, so the values of a multi-value tree, which are kept in byte order, come out in
/// numeric order). With feature `serde`: any `T: Serialize + DeserializeOwned` through
/// `Serde<T>`. Values are owned types, like keys (see [`Key`]).
pub trait Value: Sized + AsValue<Self> {
    /// Decode a whole stored value. Damaged bytes give `Error::Corrupted`, never a panic.
    fn decode_value(bytes: &[u8]) -> Result<Self>;

    /// The encoding of `self`.
    fn to_value_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        <Self as AsValue<Self>>::encode_value(self, &mut out)?;
        Ok(out)
    }
}

impl<V: ?Sized, Q: AsValue<V> + ?Sized> AsValue<V> for &Q {
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        <Q as AsValue<V>>::encode_value(*self, out)
    }
}

macro_rules! as_key {
    ($($t:ty),*) => {$(
        impl AsValue<$t> for $t {
            fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
                super::key::AsKey::<$t>::encode_key(self, out);
                Ok(())
            }
        }
        impl Value for $t {
            fn decode_value(bytes: &[u8]) -> Result<Self> {
                <$t as Key>::from_key_bytes(bytes)
                    .map_err(|_| bad(stringify!($t), &format!("{} bytes", bytes.len())))
            }
        }
    )*};
}
as_key!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, bool);

impl<const N: usize> AsValue<[u8; N]> for [u8; N] {
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self);
        Ok(())
    }
}
impl<const N: usize> Value for [u8; N] {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        bytes.try_into().map_err(|_| bad("[u8; N]", &format!("{} bytes, {N} expected", bytes.len())))
    }
}

impl AsValue<()> for () {
    fn encode_value(&self, _: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
}
impl Value for () {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        if !bytes.is_empty() {
            return Err(bad("()", &format!("{} bytes", bytes.len())));
        }
        Ok(())
    }
}

macro_rules! raw {
    ($v:ty: $($q:ty),*) => {$(
        impl AsValue<$v> for $q {
            fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
                out.extend_from_slice(AsRef::<[u8]>::as_ref(self));
                Ok(())
            }
        }
    )*};
}
raw!(Vec<u8>: Vec<u8>, [u8]);
raw!(String: String, str);

impl<const N: usize> AsValue<Vec<u8>> for [u8; N] {
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self);
        Ok(())
    }
}

impl Value for Vec<u8> {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        Ok(bytes.to_vec())
    }
}
impl Value for String {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        String::from_utf8(bytes.to_vec()).map_err(|e| bad("String", &e.to_string()))
    }
}

/// A value stored through serde (feature `serde`), encoded with
/// [postcard](https://docs.rs/postcard) 1.2.
///
/// Why postcard: a compact format (varint integers, no field names, no padding), with a stable,
/// documented wire format (the postcard 1.x specification), `no_std`-friendly and small (only
/// `serde` and `cobs` with the features used here), and actively maintained. The format is not
/// self-describing: change the Rust type and old values no longer decode (an
/// `Error::Corrupted`, not a panic) — version your types if they will change.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use jackdaw::{Serde, Value};
/// #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
/// struct Album { title: String, year: u16 }
/// let v = Serde(Album { title: "Ten".into(), year: 1991 });
/// let bytes = v.to_value_bytes().unwrap();
/// assert_eq!(bytes.len(), 1 + 3 + 2); // length-prefixed title, varint year
/// assert_eq!(Serde::<Album>::decode_value(&bytes).unwrap(), v);
/// # }
/// ```
#[cfg(feature = "serde")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Serde<T>(pub T);

#[cfg(feature = "serde")]
impl<T> Serde<T> {
    /// The wrapped value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

#[cfg(feature = "serde")]
impl<T> std::ops::Deref for Serde<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(feature = "serde")]
impl<T: serde::Serialize> AsValue<Serde<T>> for Serde<T> {
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        let v = postcard::to_allocvec(&self.0)
            .map_err(|e| Error::Invalid(format!("value does not serialize with postcard: {e}")))?;
        if out.is_empty() {
            *out = v;
        } else {
            out.extend_from_slice(&v);
        }
        Ok(())
    }
}

#[cfg(feature = "serde")]
impl<T: serde::Serialize + serde::de::DeserializeOwned> Value for Serde<T> {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        let what = std::any::type_name::<T>();
        match postcard::take_from_bytes::<T>(bytes) {
            Ok((v, [])) => Ok(Serde(v)),
            Ok((_, rest)) => Err(bad(what, &format!("{} trailing bytes", rest.len()))),
            Err(e) => Err(bad(what, &e.to_string())),
        }
    }
}
