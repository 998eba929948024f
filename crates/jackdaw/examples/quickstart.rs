use jackdaw::{Durability, Env, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("jackdaw-quickstart-{}", std::process::id()));
    let env = Env::open(&dir, Options::default().durability(Durability::Sync))?;

    let mut tx = env.write()?;
    let albums = tx.create_tree("albums")?;
    tx.put(&albums, b"0000000000000001", b"Ten")?;
    tx.put(&albums, b"0000000000000002", b"Vs.")?;
    tx.put(&albums, b"0000000000000003", b"Vitalogy")?;
    tx.commit()?;

    let rtx = env.read()?;
    let albums = rtx.open_tree("albums")?.expect("created above");
    let v = rtx.get(&albums, b"0000000000000002")?.expect("present");
    assert_eq!(v.as_ref(), b"Vs.");
    let mut n = 0;
    for item in rtx.range(&albums, b"0000000000000002".as_slice()..)? {
        let (k, _v) = item?;
        assert!(k.as_ref() >= b"0000000000000002".as_slice());
        n += 1;
    }
    assert_eq!(n, 2);
    let last = rtx.prefix(&albums, b"00000000")?.rev().next().expect("non-empty")?;
    assert_eq!(last.1.as_ref(), b"Vitalogy");
    drop(rtx);

    let mut tx = env.write()?;
    assert!(tx.delete(&albums, b"0000000000000001")?);
    tx.commit()?;
    env.check().and_then(jackdaw::CheckReport::into_result)?;
    println!("{:?}", env.stats());
    drop(env);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
