//! The data file: header slots, page headers and checksums, growth, and bounds-checked page
//! reads through the map.
//!
//! Layout: page 0 and page 1 are the two header slots; page 2 is the free-space bitmap of the
//! first section and page 3 the meta page (owned by the layer above, created empty). Every other
//! page is allocated by the transaction layer. See docs/FORMAT.md.

pub(crate) mod file;
pub(crate) mod header;
pub(crate) mod page;

pub(crate) use file::{DataFile, MapState, WriteBack};
pub(crate) use header::Header;

/// The data file's name in the database's folder.
pub(crate) const DATA_FILE: &str = "data.jdb";
