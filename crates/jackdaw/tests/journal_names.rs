//! Journal file names and generations (faults issue §1): the next generation comes from the
//! header and the records that verify, never from a file name; a `.jnl` file without a verified
//! record of this database is set aside, never trusted; names parse at any width the engine
//! writes.

mod common;

use common::{test_opts, TestDb};
use jackdaw::{Durability, Env};
use std::path::Path;

fn put_keys(env: &Env, from: u32, to: u32) {
    for i in from..to {
        let mut tx = env.write().unwrap();
        let t = match tx.open_tree("t").unwrap() {
            Some(t) => t,
            None => tx.create_tree("t").unwrap(),
        };
        tx.put(&t, i.to_be_bytes(), format!("value {i}").as_bytes()).unwrap();
        tx.set_durability(Durability::Sync);
        tx.commit().unwrap();
    }
}

fn count_keys(env: &Env) -> u32 {
    let r = env.read().unwrap();
    let Some(t) = r.open_tree("t").unwrap() else { return 0 };
    let mut n = 0;
    for item in r.prefix(&t, b"").unwrap() {
        let (k, v) = item.unwrap();
        let i = u32::from_be_bytes(k.as_ref().try_into().unwrap());
        assert_eq!(v.as_ref(), format!("value {i}").as_bytes());
        assert_eq!(i, n, "keys must be 0..n without holes");
        n += 1;
    }
    n
}

fn journal_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("journal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// The reproduction of §1: an empty `9999999999999999.jnl` left in the journal directory used to
/// move the next generation to 10^16, whose 17-digit file names recovery did not list: every
/// `Sync` commit after the open was lost in a crash, and `check()` passed.
#[test]
fn a_stray_journal_file_does_not_move_the_generation() {
    for stray in ["9999999999999999.jnl", "18446744073709551615.jnl", "0000000000000005.jnl"] {
        let dir = TestDb::dir("stray-gen");
        let env = Env::open(dir.path(), test_opts()).unwrap();
        put_keys(&env, 0, 10);
        env.close().unwrap();
        drop(env);
        std::fs::write(dir.path().join("journal").join(stray), b"").unwrap();

        let env = Env::open(dir.path(), test_opts()).unwrap();
        assert_eq!(env.stats().stray_journal_files, 1, "{stray}: counted");
        assert!(
            !journal_names(dir.path()).contains(&stray.to_string()),
            "{stray}: set aside, not left under its name: {:?}",
            journal_names(dir.path())
        );
        assert!(journal_names(dir.path()).contains(&format!("{stray}.ignored")), "{:?}", journal_names(dir.path()));
        // Enough commits to rotate through several 256 KiB journal files.
        put_keys(&env, 10, 400);
        env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
        // A crash image of the live directory: every acknowledged Sync commit must be in it.
        let image = TestDb::dir("stray-gen-image");
        common::copy_dir(dir.path(), image.path());
        drop(env);
        let env = Env::open(image.path(), test_opts()).unwrap();
        assert_eq!(count_keys(&env), 400, "{stray}: every Sync commit survives the crash");
        env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
        drop(env);
    }
}

/// Names are parsed strictly: a generation at any width the engine writes (16 digits, zero padded,
/// up to 20 for the largest u64) is a journal file; anything else (17 digits with a leading zero,
/// a sign, a short name) is not one and stays where it is, untouched.
#[test]
fn non_canonical_names_stay_ignored_and_untouched() {
    let dir = TestDb::dir("stray-names");
    let env = Env::open(dir.path(), test_opts()).unwrap();
    put_keys(&env, 0, 5);
    env.close().unwrap();
    drop(env);
    let odd = ["00000000000000099.jnl", "+000000000000099.jnl", "99.jnl", "000000000000009x.jnl"];
    for name in odd {
        std::fs::write(dir.path().join("journal").join(name), b"keep me").unwrap();
    }
    let env = Env::open(dir.path(), test_opts()).unwrap();
    assert_eq!(env.stats().stray_journal_files, 0);
    put_keys(&env, 5, 50);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    drop(env);
    for name in odd {
        assert_eq!(std::fs::read(dir.path().join("journal").join(name)).unwrap(), b"keep me", "{name}");
    }
    let env = Env::open(dir.path(), test_opts()).unwrap();
    assert_eq!(count_keys(&env), 50);
}

/// A journal file of another database (its records verify, but not for this database's id) is not
/// trusted either: set aside, and its generation does not count.
#[test]
fn a_journal_file_of_another_database_is_set_aside() {
    let other = TestDb::dir("stray-other");
    other.skip_check("its Env is leaked (std::mem::forget) and keeps the database locked");
    let env = Env::open(other.path(), test_opts().journal_files_kept(8)).unwrap();
    put_keys(&env, 0, 300);
    // Not closed (a clean close removes the journal files): as if the process had stopped.
    std::mem::forget(env);
    let theirs = journal_names(other.path());
    let foreign = theirs.iter().find(|n| n.ends_with(".jnl")).expect("the other database kept a journal file").clone();

    let dir = TestDb::dir("stray-mine");
    let env = Env::open(dir.path(), test_opts()).unwrap();
    put_keys(&env, 0, 20);
    env.close().unwrap();
    drop(env);
    // Under a generation far above ours.
    let far = "0000000000999999.jnl";
    std::fs::copy(other.path().join("journal").join(&foreign), dir.path().join("journal").join(far)).unwrap();
    let env = Env::open(dir.path(), test_opts()).unwrap();
    assert_eq!(env.stats().stray_journal_files, 1);
    put_keys(&env, 20, 300);
    let image = TestDb::dir("stray-mine-image");
    common::copy_dir(dir.path(), image.path());
    drop(env);
    let env = Env::open(image.path(), test_opts()).unwrap();
    assert_eq!(count_keys(&env), 300);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}

/// `check()` compares the journal directory with the header and the writer: a `.jnl` file whose
/// generation the writer has not reached (put there while the database is open) is reported.
#[test]
fn check_reports_a_journal_file_ahead_of_the_writer() {
    let dir = TestDb::dir("stray-check");
    let env = Env::open(dir.path(), test_opts()).unwrap();
    put_keys(&env, 0, 20);
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
    std::fs::write(dir.path().join("journal").join("9999999999999999.jnl"), b"").unwrap();
    let report = env.check().unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == jackdaw::ProblemKind::Journal && p.detail.contains("9999999999999999")),
        "{:#?}",
        report.problems
    );
    let e = report.into_result().unwrap_err().to_string();
    assert!(e.contains("9999999999999999"), "{e}");
    std::fs::remove_file(dir.path().join("journal").join("9999999999999999.jnl")).unwrap();
    env.check().and_then(jackdaw::CheckReport::into_result).unwrap();
}
