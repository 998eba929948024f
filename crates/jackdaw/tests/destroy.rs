//! `Env::destroy`: it removes a database's files and nothing else, refuses while the database is
//! open (and then removes nothing), and is a no-op where there is no database.

mod common;

use common::*;
use jackdaw::{Durability, Env, Error, Options};
use std::path::Path;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A database with committed data beside a file of the user's.
fn database_beside_a_user_file(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let env = Env::open(dir, Options::default().durability(Durability::Buffered)).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0..1000u32 {
        tx.put(&t, i.to_be_bytes(), [7u8; 100]).unwrap();
    }
    tx.commit().unwrap();
    drop(env);
    assert_eq!(names(dir), ["data.jdb", "journal", "lock", "notes.txt"]);
}

#[test]
fn destroy_removes_the_databases_files_and_nothing_else() {
    let dir = tmpdir("destroy");
    database_beside_a_user_file(&dir);
    Env::destroy(&*dir).unwrap();
    assert_eq!(names(&dir), ["notes.txt"]);
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
    // What opens there now is a new, empty database.
    let env = Env::open(&*dir, Options::default()).unwrap();
    assert!(env.read().unwrap().open_tree("t").unwrap().is_none());
    env.close().unwrap();
    Env::destroy(&*dir).unwrap();
    assert_eq!(names(&dir), ["notes.txt"]);
    // Where there is no database: nothing to do, nothing touched.
    Env::destroy(&*dir).unwrap();
    Env::destroy(dir.join("missing")).unwrap();
    assert_eq!(names(&dir), ["notes.txt"]);
}

#[test]
fn destroy_refuses_an_open_database_and_removes_nothing() {
    let dir = tmpdir("destroy-open");
    database_beside_a_user_file(&dir);
    let env = Env::open(&*dir, Options::default()).unwrap();
    let before = names(&dir);
    match Env::destroy(&*dir) {
        Err(Error::Locked { path, .. }) => assert_eq!(path, dir.to_path_buf()),
        other => panic!("destroy of an open database: {other:?}"),
    }
    assert_eq!(names(&dir), before);
    let r = env.read().unwrap();
    let t = r.open_tree("t").unwrap().unwrap();
    assert_eq!(r.get(&t, 999u32.to_be_bytes()).unwrap().as_deref(), Some(&[7u8; 100][..]));
    drop(r);
    env.close().unwrap();
    Env::destroy(&*dir).unwrap();
    assert_eq!(names(&dir), ["notes.txt"]);
}
