//! Order-preserving key encodings: [`Key`], [`AsKey`] and [`KeyPrefix`]. The byte layout of each
//! type is documented in the [`typed`](crate::typed) module.

use crate::{Error, Result};

/// The error for key bytes that do not decode as the tree's key type.
fn bad(what: &str, why: &str) -> Error {
    Error::corrupted(None, format!("typed key does not decode as {what}: {why}"))
}

/// Split `n` bytes off the front of `input`.
/// The next `N` bytes as an array (fixed-width types).
fn take_array<const N: usize>(input: &mut &[u8], what: &str) -> Result<[u8; N]> {
    let mut a = [0u8; N];
    a.copy_from_slice(take(input, N, what)?);
    Ok(a)
}

fn take<'a>(input: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8]> {
    if input.len() < n {
        return Err(bad(what, &format!("{} bytes left, {n} needed", input.len())));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A value that encodes exactly as a key of type `K` does: `K` itself, and borrowed forms
/// (`str` for `String`, `[u8]` and `[u8; N]` for `Vec<u8>`, `&Q` for any `Q: AsKey<K>`, tuples of
/// these for tuples). Typed lookups take `&Q` with `Q: AsKey<K>`, so `tree.get(&rtx, "Ten")`
/// works on a `TypedTree<String, _>` without making a `String`.
pub trait AsKey<K: ?Sized> {
    /// Append the order-preserving encoding of `self` (as a `K`) to `out`.
    fn encode_key(&self, out: &mut Vec<u8>);
}

/// A key type of a [`TypedTree`](crate::TypedTree): its encoding preserves order
/// (`a.cmp(&b) == enc(a).cmp(&enc(b))`) and decodes back to the same value.
///
/// Implemented for `u8`..`u128`, `i8`..`i128`, `bool`, `String`, `Vec<u8>`, `[u8; N]` and tuples of
/// these of 1 to 4 components. Keys are owned types: what a tree returns must outlive the page it
/// was read from, so there is no `Key for &str` — use `String` (and pass `&str` to lookups, see
/// [`AsKey`]).
///
/// ```
/// use jackdaw::Key;
/// let a = ("Pearl Jam".to_string(), 1991u32).to_key_bytes();
/// let b = ("Pearl Jam".to_string(), 1993u32).to_key_bytes();
/// assert!(a < b);
/// // The first component's encoding is a byte prefix of the whole key's.
/// assert!(a.starts_with(&"Pearl Jam".to_string().to_key_bytes()));
/// assert_eq!(<(String, u32)>::from_key_bytes(&b).unwrap(), ("Pearl Jam".to_string(), 1993));
/// assert!(u32::from_key_bytes(&[1, 2, 3]).is_err());
/// ```
pub trait Key: Ord + Sized + AsKey<Self> {
    /// Decode one key from the front of `input`, advancing it past the bytes used (tuples
    /// decode their components in turn). Damaged bytes give `Error::Corrupted`, never a panic.
    fn decode_key(input: &mut &[u8]) -> Result<Self>;

    /// The encoding of `self`.
    fn to_key_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        <Self as AsKey<Self>>::encode_key(self, &mut out);
        out
    }

    /// Decode a whole key: the bytes must hold exactly one key (`Error::Corrupted` otherwise).
    fn from_key_bytes(bytes: &[u8]) -> Result<Self> {
        let mut input = bytes;
        let k = Self::decode_key(&mut input)?;
        if !input.is_empty() {
            return Err(bad(std::any::type_name::<Self>(), &format!("{} trailing bytes", input.len())));
        }
        Ok(k)
    }
}

impl<K: ?Sized, Q: AsKey<K> + ?Sized> AsKey<K> for &Q {
    fn encode_key(&self, out: &mut Vec<u8>) {
        <Q as AsKey<K>>::encode_key(*self, out)
    }
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl AsKey<$t> for $t {
            fn encode_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
        }
        impl Key for $t {
            fn decode_key(input: &mut &[u8]) -> Result<Self> {
                Ok(<$t>::from_be_bytes(take_array(input, stringify!($t))?))
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, u128);

macro_rules! signed {
    ($($t:ty => $u:ty),*) => {$(
        impl AsKey<$t> for $t {
            fn encode_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&((*self as $u) ^ (1 << (<$u>::BITS - 1))).to_be_bytes());
            }
        }
        impl Key for $t {
            fn decode_key(input: &mut &[u8]) -> Result<Self> {
                let u = <$u>::from_be_bytes(take_array(input, stringify!($t))?);
                Ok((u ^ (1 << (<$u>::BITS - 1))) as $t)
            }
        }
    )*};
}
signed!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128);

impl AsKey<bool> for bool {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
}
impl Key for bool {
    fn decode_key(input: &mut &[u8]) -> Result<Self> {
        match take(input, 1, "bool")?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(bad("bool", &format!("byte {b:#04x}"))),
        }
    }
}

/// The escape that follows a 0x00 inside a variable-length component.
pub(crate) const ESCAPED_ZERO: u8 = 0xFF;
/// The byte that follows 0x00 to end a variable-length component.
pub(crate) const END: u8 = 0x01;

/// Append `bytes` escaped (0x00 → 0x00 0xFF), without the terminator: the encoding of a raw
/// prefix of a string or byte-string component.
pub(crate) fn put_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    let mut rest = bytes;
    while let Some(z) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..z]);
        out.extend_from_slice(&[0, ESCAPED_ZERO]);
        rest = &rest[z + 1..];
    }
    out.extend_from_slice(rest);
}

fn put_terminated(bytes: &[u8], out: &mut Vec<u8>) {
    put_escaped(bytes, out);
    out.extend_from_slice(&[0, END]);
}

fn take_terminated(input: &mut &[u8], what: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = *input;
    loop {
        let Some(z) = rest.iter().position(|&b| b == 0) else {
            return Err(bad(what, "no terminator (0x00 0x01)"));
        };
        out.extend_from_slice(&rest[..z]);
        match rest.get(z + 1) {
            Some(&ESCAPED_ZERO) => {
                out.push(0);
                rest = &rest[z + 2..];
            }
            Some(&END) => {
                *input = &rest[z + 2..];
                return Ok(out);
            }
            Some(b) => return Err(bad(what, &format!("0x00 followed by {b:#04x} (only 0xff or 0x01 may follow)"))),
            None => return Err(bad(what, "ends after 0x00")),
        }
    }
}

impl AsKey<Vec<u8>> for Vec<u8> {
    fn encode_key(&self, out: &mut Vec<u8>) {
        put_terminated(self, out);
    }
}
impl AsKey<Vec<u8>> for [u8] {
    fn encode_key(&self, out: &mut Vec<u8>) {
        put_terminated(self, out);
    }
}
impl<const N: usize> AsKey<Vec<u8>> for [u8; N] {
    fn encode_key(&self, out: &mut Vec<u8>) {
        put_terminated(self, out);
    }
}
impl Key for Vec<u8> {
    fn decode_key(input: &mut &[u8]) -> Result<Self> {
        take_terminated(input, "Vec<u8>")
    }
}

impl AsKey<String> for String {
    fn encode_key(&self, out: &mut Vec<u8>) {
        put_terminated(self.as_bytes(), out);
    }
}
impl AsKey<String> for str {
    fn encode_key(&self, out: &mut Vec<u8>) {
        put_terminated(self.as_bytes(), out);
    }
}
impl Key for String {
    fn decode_key(input: &mut &[u8]) -> Result<Self> {
        String::from_utf8(take_terminated(input, "String")?).map_err(|e| bad("String", &e.to_string()))
    }
}

impl<const N: usize> AsKey<[u8; N]> for [u8; N] {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}
impl<const N: usize> Key for [u8; N] {
    fn decode_key(input: &mut &[u8]) -> Result<Self> {
        take_array(input, "[u8; N]")
    }
}

/// A leading part of a key of type `K` — for a tuple key, a tuple of its first components (as
/// [`AsKey`] forms): `("Pearl Jam",)` for `(String, u64)`, `(a,)` or `(a, b)` for `(A, B, C)`.
/// Its encoding is a byte prefix of the encoding of every key that starts with it, so
/// [`TypedTree::prefix`](crate::TypedTree::prefix) finds exactly those keys.
pub trait KeyPrefix<K> {
    /// Append the prefix's encoding to `out`.
    fn encode_prefix(&self, out: &mut Vec<u8>);
}

macro_rules! tuple {
    ($(($($T:ident $Q:ident $i:tt),+))*) => {$(
        impl<$($T: Key, $Q: AsKey<$T>),+> AsKey<($($T,)+)> for ($($Q,)+) {
            fn encode_key(&self, out: &mut Vec<u8>) {
                $(<$Q as AsKey<$T>>::encode_key(&self.$i, out);)+
            }
        }
        impl<$($T: Key),+> Key for ($($T,)+) {
            fn decode_key(input: &mut &[u8]) -> Result<Self> {
                Ok(($($T::decode_key(input)?,)+))
            }
        }
    )*};
}
tuple! {
    (A QA 0)
    (A QA 0, B QB 1)
    (A QA 0, B QB 1, C QC 2)
    (A QA 0, B QB 1, C QC 2, D QD 3)
}

/// `KeyPrefix<($($T),+)>` for the tuple of the first components `($($Q),*)`.
macro_rules! prefix {
    ($(($($T:ident),+) for ($($P:ident $Q:ident $i:tt),+);)*) => {$(
        impl<$($T: Key,)+ $($Q: AsKey<$P>),+> KeyPrefix<($($T,)+)> for ($($Q,)+) {
            fn encode_prefix(&self, out: &mut Vec<u8>) {
                $(<$Q as AsKey<$P>>::encode_key(&self.$i, out);)+
            }
        }
    )*};
}
prefix! {
    (A, B) for (A QA 0);
    (A, B, C) for (A QA 0);
    (A, B, C) for (A QA 0, B QB 1);
    (A, B, C, D) for (A QA 0);
    (A, B, C, D) for (A QA 0, B QB 1);
    (A, B, C, D) for (A QA 0, B QB 1, C QC 2);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_layouts_are_as_documented() {
        assert_eq!(0x0102u16.to_key_bytes(), [1, 2]);
        assert_eq!((-1i16).to_key_bytes(), [0x7f, 0xff]);
        assert_eq!(0i8.to_key_bytes(), [0x80]);
        assert_eq!(i32::MIN.to_key_bytes(), [0, 0, 0, 0]);
        assert_eq!(true.to_key_bytes(), [1]);
        assert_eq!("a\0b".to_string().to_key_bytes(), [b'a', 0, 0xff, b'b', 0, 1]);
        assert_eq!(Vec::<u8>::new().to_key_bytes(), [0, 1]);
        assert_eq!([7u8, 0].to_key_bytes(), [7, 0]);
        assert_eq!(("x".to_string(), 1u8).to_key_bytes(), [b'x', 0, 1, 1]);
        let mut p = Vec::new();
        KeyPrefix::<(String, u8)>::encode_prefix(&("x",), &mut p);
        assert_eq!(p, [b'x', 0, 1]);
    }

    #[test]
    fn a_single_zero_terminator_would_misorder_tuples() {
        // With 0x00 alone as the terminator, ("a", 255, 5) would encode as 61 00 ff 05 and sort
        // after ("a\0", 0, 0) = 61 00 ff 00 .., though "a" < "a\0". The two-byte end 00 01 sorts
        // below the escape 00 ff, whatever follows.
        let a = ("a".to_string(), 255u8, 5u8);
        let b = ("a\0".to_string(), 0u8, 0u8);
        assert!(a < b);
        assert!(a.to_key_bytes() < b.to_key_bytes());
        assert_eq!(<(String, u8, u8)>::from_key_bytes(&a.to_key_bytes()).unwrap(), a);
    }

    #[test]
    fn damaged_variable_length_components_are_errors() {
        for bad in [&[b'a'][..], &[b'a', 0], &[b'a', 0, 2], &[0xff, 0xfe, 0, 1]] {
            assert!(matches!(String::from_key_bytes(bad), Err(Error::Corrupted { .. })), "{bad:?}");
        }
        assert!(matches!(bool::from_key_bytes(&[2]), Err(Error::Corrupted { .. })));
        assert!(matches!(<(u8, u8)>::from_key_bytes(&[1]), Err(Error::Corrupted { .. })));
        assert!(matches!(u8::from_key_bytes(&[1, 2]), Err(Error::Corrupted { .. })));
    }
}
