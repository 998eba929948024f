//! Identifiers that cross the public API: transaction ids and page numbers, as newtypes so that
//! one cannot be passed where the other is expected.

use std::fmt;

/// A `u64` newtype with `new`/`get`, conversions both ways, comparison with a bare `u64`, and a
/// `Display` of the number alone (so it parses back).
macro_rules! id_newtype {
    ($(#[$m:meta])* $name:ident, $what:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(u64);

        impl $name {
            #[doc = concat!("The ", $what, " numbered `n`.")]
            pub const fn new(n: u64) -> $name {
                $name(n)
            }
            /// The number.
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl From<u64> for $name {
            fn from(n: u64) -> $name {
                $name(n)
            }
        }

        impl From<$name> for u64 {
            fn from(t: $name) -> u64 {
                t.0
            }
        }

        impl PartialEq<u64> for $name {
            fn eq(&self, other: &u64) -> bool {
                self.0 == *other
            }
        }

        impl PartialOrd<u64> for $name {
            fn partial_cmp(&self, other: &u64) -> Option<std::cmp::Ordering> {
                self.0.partial_cmp(other)
            }
        }

        /// The number alone, as `u64` prints it.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

id_newtype!(
    /// A transaction id. Committed transactions are numbered 1, 2, 3, … in commit order; 0 is the
    /// empty database (and the id of an empty transaction, which writes nothing). Ids only grow,
    /// and a snapshot's id is the last transaction it sees.
    TxId,
    "transaction id"
);

id_newtype!(
    /// A page number in the data file (page `n` starts at byte `n × page_size`; 0 and 1 are the
    /// header slots). Public where the API names a page: `Error::Corrupted`, `check()`'s `Problem`.
    PageNo,
    "page"
);

impl TxId {
    /// The transaction after this one.
    #[inline]
    pub const fn next(self) -> TxId {
        TxId(self.0 + 1)
    }
}

impl PageNo {
    /// The page `n` pages after this one.
    #[inline]
    pub const fn add(self, n: u64) -> PageNo {
        PageNo(self.0 + n)
    }
    /// The page after this one.
    #[inline]
    pub const fn next(self) -> PageNo {
        PageNo(self.0 + 1)
    }
    /// The byte offset of this page in the data file, with pages of `page_size` bytes.
    #[inline]
    pub const fn offset(self, page_size: u64) -> u64 {
        self.0 * page_size
    }
}
