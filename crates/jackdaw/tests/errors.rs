//! Error messages a user meets, from the real call paths: each names what went wrong in words
//! and what to do (the unit test in `src/error.rs` prints every variant).

mod common;

use common::{test_opts, TestDb};
use jackdaw::{Env, Error, Limit};

#[test]
fn opening_a_file_instead_of_a_directory_says_so() {
    let dir = TestDb::dir("err-file-path");
    std::fs::create_dir_all(dir.path()).unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"hello").unwrap();
    let e = Env::open(&file, test_opts()).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, Error::NotADatabase(_)), "{e:?}");
    assert!(m.contains("is a file, not a directory") && !m.contains("File exists"), "{m}");
    assert_eq!(std::fs::read(&file).unwrap(), b"hello", "the file is left alone");
}

#[test]
fn limits_are_named_in_the_errors() {
    let dir = TestDb::dir("err-limits");
    let env = Env::open(dir.path(), test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let name = "n".repeat(10_000);
    let m = tx.create_tree(&name).unwrap_err().to_string();
    assert!(m.starts_with("a tree name of 10000 bytes is over the limit of 1953 bytes"), "{m}");
    let t = tx.create_tree("t").unwrap();
    let e = tx.put(&t, vec![0u8; 3000], b"v").unwrap_err();
    assert!(matches!(e, Error::KeyTooLarge { limit: Limit::Key, len: 3000, max: 2001 }), "{e:?}");
    assert!(e.to_string().starts_with("a key of 3000 bytes is over the limit of 2001 bytes"), "{e}");
    let m = tx.create_multi_tree("m").unwrap();
    let e = tx.multi_put(&m, b"k", vec![0u8; 2002]).unwrap_err();
    assert!(matches!(e, Error::ValueTooLarge { limit: Limit::MultiValue, len: 2002, max: 2001 }), "{e:?}");
    assert!(e.to_string().contains("value of a multi-value tree of 2002 bytes"), "{e}");
    let e = tx.multi_put(&m, vec![0u8; 1954], b"v").unwrap_err();
    assert!(matches!(e, Error::KeyTooLarge { limit: Limit::MultiKey, len: 1954, max: 1953 }), "{e:?}");
}

#[test]
fn a_damaged_page_is_named_in_words() {
    let dir = TestDb::dir("err-damaged");
    let env = Env::open(dir.path(), test_opts()).unwrap();
    let mut tx = env.write().unwrap();
    let t = tx.create_tree("t").unwrap();
    for i in 0u32..2000 {
        tx.put(&t, i.to_be_bytes(), [7u8; 100]).unwrap();
    }
    tx.commit().unwrap();
    env.close().unwrap();
    drop(env);
    // Flip a byte in the middle of every leaf-sized page past the fixed ones.
    dir.skip_check("the test flips a byte in every page");
    let path = dir.path().join("data.jdb");
    let mut bytes = std::fs::read(&path).unwrap();
    for page in 4..bytes.len() / 4096 {
        bytes[page * 4096 + 2000] ^= 0x55;
    }
    std::fs::write(&path, &bytes).unwrap();
    let m = match Env::open(dir.path(), test_opts()) {
        Err(e) => e.to_string(),
        Ok(env) => {
            let r = env.read().unwrap();
            let t = r.open_tree("t").map(|t| t.unwrap());
            match t.and_then(|t| r.get(&t, 5u32.to_be_bytes())) {
                Err(e) => e.to_string(),
                Ok(v) => panic!("damaged leaves read back: {v:?}"),
            }
        }
    };
    assert!(m.starts_with("the database is damaged at page "), "{m}");
    assert!(!m.contains("Some(") && !m.contains("None"), "{m}");
}
