//! openraft's own storage test suite (`openraft::testing::Suite`, every case) against the
//! Jackdaw log store and state machine.

use jackdaw_raft::store::{open_stores, LogStore, StateMachine};
use jackdaw_raft::{NodeId, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{StorageError, StorageIOError};

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).map_err(|e| StorageIOError::write(&e))?;
        let (log, sm) = open_stores(dir.path()).map_err(|e| StorageIOError::write(openraft::AnyError::error(e)))?;
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite() {
    Suite::test_all(Builder).unwrap();
}
