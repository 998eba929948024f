//! The test fixture itself (`common::TestDb`): its drop runs the full `check()` on the
//! database's final state and fails the test on any problem; it does not when the database is
//! sound, when the test says it damaged it on purpose, or when the test is failing already.
mod common;
use common::*;
use jackdaw::internals::tree_layout;
use jackdaw::{Env, FlusherMode};
use std::os::unix::fs::FileExt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Drop `db` under `catch_unwind`: the panic message, if it panicked.
fn drop_caught(db: TestDb) -> Option<String> {
    catch_unwind(AssertUnwindSafe(move || drop(db))).err().map(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// A database with a few leaves' worth of keys in tree "t"; returns a leaf page that is not the
/// root.
fn fill_tree(db: &TestDb) -> u64 {
    let mut tx = db.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0u32..2000 {
        tx.put(&t, i.to_be_bytes(), [7u8; 40]).unwrap();
    }
    tx.commit().unwrap();
    let r = db.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    let layout = tree_layout(&r, &t).unwrap();
    assert!(layout.depth >= 2, "{} levels", layout.depth);
    layout.pages.iter().find(|p| p.level == 0).unwrap().pgno
}

/// Garbage over page `pgno` of the data file (the environment is closed).
fn smash(db: &TestDb, pgno: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(db.path().join("data.jdb")).unwrap();
    f.write_all_at(&[0x5a; 4096], pgno * 4096).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn a_sound_database_passes_the_drop_check() {
    let db = TestDb::new("fixture-sound");
    fill_tree(&db);
    assert_eq!(drop_caught(db), None);
}

#[test]
fn a_damaged_page_fails_the_drop_check() {
    let db = TestDb::new("fixture-damaged");
    let leaf = fill_tree(&db);
    db.close().unwrap();
    smash(&db, leaf);
    let path = db.path().to_path_buf();
    let msg = drop_caught(db).expect("the drop check passed over a smashed leaf");
    assert!(msg.contains("TestDb check") && msg.contains("problem"), "{msg}");
    assert!(msg.contains(&format!("{leaf}")), "the message names the page: {msg}");
    // A failing test keeps its directory for a look.
    assert!(path.join("data.jdb").exists());
    std::fs::remove_dir_all(path).unwrap();
}

#[test]
fn damage_on_purpose_opts_out() {
    let db = TestDb::new("fixture-opt-out");
    let leaf = fill_tree(&db);
    db.close().unwrap();
    smash(&db, leaf);
    db.skip_check("smashed a leaf to see the opt-out work");
    let path = db.path().to_path_buf();
    assert_eq!(drop_caught(db), None);
    assert!(!path.exists(), "the directory is removed");
}

#[test]
fn the_check_runs_on_the_open_environment_and_after_a_close_by_the_test() {
    // Open at drop: checked as it is (the flusher has not written the pages yet).
    let db = TestDb::with_opts("fixture-open", test_opts().flusher(FlusherMode::Manual));
    fill_tree(&db);
    assert_eq!(drop_caught(db), None);
    // Closed through `Env::close` (the deref): reopened and checked.
    let db = TestDb::new("fixture-closed");
    fill_tree(&db);
    db.close().unwrap();
    assert_eq!(drop_caught(db), None);
    // Reopened, with other options; and a crash image of it, recovered and checked on its own.
    let mut db = TestDb::new("fixture-reopen");
    fill_tree(&db);
    db.reopen_with(test_opts().flusher(FlusherMode::Manual));
    let r = db.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.range::<[u8], _>(&t, ..).unwrap().count(), 2000);
    drop(r);
    let img = db.image("fixture-reopen-image");
    assert!(!img.is_open());
    assert_eq!(drop_caught(img), None);
    assert_eq!(drop_caught(db), None);
    // Taken and dropped by the test: reopened (recovery) and checked.
    let mut db = TestDb::new("fixture-taken");
    fill_tree(&db);
    let env: Env = db.take();
    drop(env);
    assert_eq!(drop_caught(db), None);
}

#[test]
fn a_directory_the_test_opens_itself_is_checked_once_its_environments_are_gone() {
    let db = TestDb::dir("fixture-dir");
    let env = Env::open(&db, test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    tx.put(&t, b"k", b"v").unwrap();
    tx.commit().unwrap();
    drop(env);
    assert_eq!(drop_caught(db), None);
    // Damaged under the test's own environment: found.
    let db = TestDb::dir("fixture-dir-damaged");
    let env = Env::open(&db, test_opts()).unwrap();
    let leaf = {
        let mut tx = env.write().unwrap();
        let t = tx.create_tree("t").unwrap();
        for i in 0u32..2000 {
            tx.put(&t, i.to_be_bytes(), [7u8; 40]).unwrap();
        }
        tx.commit().unwrap();
        let r = env.read().unwrap();
        let layout = tree_layout(&r, &r.open_tree("t").unwrap().unwrap()).unwrap();
        layout.pages.iter().find(|p| p.level == 0).unwrap().pgno
    };
    env.close().unwrap();
    drop(env);
    smash(&db, leaf);
    let path = db.path().to_path_buf();
    let msg = drop_caught(db).expect("the drop check passed over a smashed leaf");
    assert!(msg.contains("TestDb check"), "{msg}");
    std::fs::remove_dir_all(path).unwrap();
}

#[test]
fn raw_pages_are_checked_against_the_live_set_the_test_gives() {
    // Raw pages reachable from no tree are leaked pages to the tree walk...
    let db = TestDb::new("fixture-raw-leak");
    let mut tx = db.write().unwrap();
    let a = alloc(&mut tx, 1);
    tx.commit().unwrap();
    let path = db.path().to_path_buf();
    let msg = drop_caught(db).expect("raw pages passed the tree walk");
    assert!(msg.contains("TestDb check"), "{msg}");
    std::fs::remove_dir_all(path).unwrap();
    // ...and in use when the test names them.
    let db = TestDb::new("fixture-raw");
    let mut tx = db.write().unwrap();
    let b = alloc(&mut tx, 1);
    tx.commit().unwrap();
    assert_eq!(a, b);
    db.raw_pages([b]);
    assert_eq!(drop_caught(db), None);
}

#[test]
fn a_failing_test_is_not_checked_again() {
    let mut path = std::path::PathBuf::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        let db = TestDb::new("fixture-failing");
        path = db.path().to_path_buf();
        let leaf = fill_tree(&db);
        db.close().unwrap();
        smash(&db, leaf);
        panic!("the test's own failure");
    }));
    let p = r.unwrap_err();
    assert_eq!(p.downcast_ref::<&str>(), Some(&"the test's own failure"));
    // The directory stays for a look.
    assert!(path.join("data.jdb").exists());
    std::fs::remove_dir_all(path).unwrap();
}
