//! The two header slots of the data file (pages 0 and 1).
//!
//! A slot holds the last state whose pages are all in the data file and synced: the flushed
//! transaction, the page high-water mark, and where in the journal the next record starts.
//! Slots are written alternately (`revision & 1` picks the slot), each after the data file is
//! synced, so a torn slot write leaves the other slot valid. Open takes the valid slot with the
//! higher revision.
//!
//! ```text
//! offset size field
//!      0    8 magic           "JKDWDATA"
//!      8    4 format_version  3 (1 and 2 are read too: see FORMAT.md §8)
//!     12    4 page_size
//!     16    8 revision        incremented by each header write
//!     24    8 db_id           random at creation; every journal record carries it
//!     32    8 flushed_txid    every transaction <= this is in the data file
//!     40    8 next_page       page high-water mark after flushed_txid
//!     48    8 journal_gen     journal position just after record flushed_txid: where record
//!     56    8 journal_offset  flushed_txid + 1 starts, or the next generation's offset 0 if it
//!                             did not fit in that file
//!     64   56 reserved        zero
//!    120    8 checksum        xxh3-64 of bytes [0, 120)
//! ```

use crate::{Error, Result};

pub(crate) const MAGIC: &[u8; 8] = b"JKDWDATA";
pub(crate) const FORMAT_VERSION: u32 = 3;
/// The oldest format version this build opens: a version-1 database differs only in its journal
/// (every record padded to 4 KiB), a version-2 one in its overflow references (none has a tail,
/// `tree/overflow.rs`), both of which this build reads; opening one to write rewrites the
/// header with `FORMAT_VERSION` before the first commit, so an older build never meets a record
/// or a reference it would misread.
pub(crate) const OLDEST_READ_VERSION: u32 = 1;
/// Encoded size of a header.
pub(crate) const HEADER_LEN: usize = 128;
/// Bytes written per header slot write (one aligned 4 KiB block holding the header).
pub(crate) const SLOT_WRITE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Header {
    /// The format version the slot was read with (`encode` always writes `FORMAT_VERSION`).
    pub version: u32,
    pub page_size: u32,
    pub revision: u64,
    pub db_id: u64,
    pub flushed_txid: u64,
    pub next_page: u64,
    pub journal_gen: u64,
    pub journal_offset: u64,
}

/// Why a slot could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SlotError {
    /// The magic is not Jackdaw's (never written, or a foreign file).
    Foreign,
    /// Jackdaw's magic with a bad checksum (torn or damaged).
    Damaged(String),
    /// A valid header of another format version or an unsupported page size.
    Incompatible(String),
}

fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn le64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.page_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.revision.to_le_bytes());
        b[24..32].copy_from_slice(&self.db_id.to_le_bytes());
        b[32..40].copy_from_slice(&self.flushed_txid.to_le_bytes());
        b[40..48].copy_from_slice(&self.next_page.to_le_bytes());
        b[48..56].copy_from_slice(&self.journal_gen.to_le_bytes());
        b[56..64].copy_from_slice(&self.journal_offset.to_le_bytes());
        let c = xxhash_rust::xxh3::xxh3_64(&b[..120]);
        b[120..128].copy_from_slice(&c.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header, SlotError> {
        if b.len() < HEADER_LEN || &b[0..8] != MAGIC {
            return Err(SlotError::Foreign);
        }
        let c = xxhash_rust::xxh3::xxh3_64(&b[..120]);
        if c != le64(b, 120) {
            return Err(SlotError::Damaged("header checksum mismatch".into()));
        }
        let version = le32(b, 8);
        if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(SlotError::Incompatible(format!(
                "format version {version}, this build reads {OLDEST_READ_VERSION} to {FORMAT_VERSION}"
            )));
        }
        let page_size = le32(b, 12);
        if !(4096..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(SlotError::Incompatible(format!("page size {page_size}")));
        }
        let h = Header {
            version,
            page_size,
            revision: le64(b, 16),
            db_id: le64(b, 24),
            flushed_txid: le64(b, 32),
            next_page: le64(b, 40),
            journal_gen: le64(b, 48),
            journal_offset: le64(b, 56),
        };
        if h.next_page < super::page::FIRST_FREE_PAGE {
            return Err(SlotError::Damaged(format!("next_page {} below the fixed pages", h.next_page)));
        }
        Ok(h)
    }

    /// Pick the newer of two decoded slots; map the failures of both to the right error.
    pub(crate) fn choose(a: Result<Header, SlotError>, b: Result<Header, SlotError>) -> Result<Header> {
        match (a, b) {
            (Ok(x), Ok(y)) => Ok(if y.revision > x.revision { y } else { x }),
            (Ok(x), Err(_)) | (Err(_), Ok(x)) => Ok(x),
            (Err(SlotError::Incompatible(m)), _) | (_, Err(SlotError::Incompatible(m))) => {
                Err(Error::IncompatibleFormat(m))
            }
            (Err(SlotError::Foreign), Err(SlotError::Foreign)) => {
                Err(Error::NotADatabase("no Jackdaw header in either slot".into()))
            }
            (Err(e1), Err(e2)) => {
                Err(Error::corrupted(Some(0), format!("both header slots are invalid: {e1:?}; {e2:?}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            version: FORMAT_VERSION,
            page_size: 8192,
            revision: 9,
            db_id: 0xdead_beef,
            flushed_txid: 77,
            next_page: 1000,
            journal_gen: 3,
            journal_offset: 8192,
        }
    }

    #[test]
    fn roundtrip_and_every_flip_detected() {
        let h = sample();
        let b = h.encode();
        assert_eq!(Header::decode(&b), Ok(h));
        for i in 0..HEADER_LEN {
            let mut c = b;
            c[i] ^= 1;
            assert!(Header::decode(&c).is_err(), "flip at byte {i} accepted");
        }
        assert_eq!(Header::decode(&b[..100]), Err(SlotError::Foreign));
    }

    #[test]
    fn choose_newest_and_classify() {
        let a = sample();
        let b = Header { revision: 10, flushed_txid: 80, ..a };
        assert_eq!(Header::choose(Ok(a), Ok(b)).unwrap(), b);
        assert_eq!(Header::choose(Err(SlotError::Damaged("x".into())), Ok(a)).unwrap(), a);
        assert!(matches!(
            Header::choose(Err(SlotError::Foreign), Err(SlotError::Foreign)),
            Err(Error::NotADatabase(_))
        ));
        assert!(matches!(
            Header::choose(Err(SlotError::Damaged("x".into())), Err(SlotError::Foreign)),
            Err(Error::Corrupted { .. })
        ));
        // A newer format version is reported as incompatible, not corrupt; so is version 0;
        // version 1 is read, and says so.
        let with_version = |v: u32| {
            let mut enc = a.encode();
            enc[8..12].copy_from_slice(&v.to_le_bytes());
            let c = xxhash_rust::xxh3::xxh3_64(&enc[..120]);
            enc[120..128].copy_from_slice(&c.to_le_bytes());
            Header::choose(Header::decode(&enc), Err(SlotError::Foreign))
        };
        for v in [0, FORMAT_VERSION + 1] {
            let r = with_version(v);
            assert!(matches!(r, Err(Error::IncompatibleFormat(_))), "{v}: {r:?}");
        }
        assert_eq!(with_version(1).unwrap(), Header { version: 1, ..a });
    }
}
