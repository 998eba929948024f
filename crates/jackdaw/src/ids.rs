//! Identifiers that cross the public API: transaction ids and page numbers, as newtypes so that
//! one cannot be passed where the other is expected.

use std::fmt;

/// A transaction id. Committed transactions are numbered 1, 2, 3, … in commit order; 0 is the
/// empty database (and the id of an empty transaction, which writes nothing). Ids only grow, and
/// a snapshot's id is the last transaction it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TxId(u64);

impl TxId {
    /// The id numbered `n`.
    pub const fn new(n: u64) -> TxId {
        TxId(n)
    }
    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for TxId {
    fn from(n: u64) -> TxId {
        TxId(n)
    }
}

impl From<TxId> for u64 {
    fn from(t: TxId) -> u64 {
        t.0
    }
}

impl PartialEq<u64> for TxId {
    fn eq(&self, other: &u64) -> bool {
        self.0 == *other
    }
}

impl PartialOrd<u64> for TxId {
    fn partial_cmp(&self, other: &u64) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

/// The number alone, as `u64` prints it (so it can be parsed back).
impl fmt::Display for TxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A page number in the data file (page `n` starts at byte `n × page_size`; 0 and 1 are the
/// header slots). Public where the API names a page: `Error::Corrupted`, `check()`'s `Problem`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PageNo(u64);

impl PageNo {
    /// Page number `n`.
    pub const fn new(n: u64) -> PageNo {
        PageNo(n)
    }
    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for PageNo {
    fn from(n: u64) -> PageNo {
        PageNo(n)
    }
}

impl From<PageNo> for u64 {
    fn from(p: PageNo) -> u64 {
        p.0
    }
}

impl PartialEq<u64> for PageNo {
    fn eq(&self, other: &u64) -> bool {
        self.0 == *other
    }
}

/// The number alone.
impl fmt::Display for PageNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
