//! Conformance cases of agent files (`agno_fs`): the store's primitives on every database that
//! keeps them, and Agno's rules of [`FileSystem`] over them (caps, appends, line edits, moves,
//! search, line checks, partitions, concurrent appends that all land).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, clippy::needless_pass_by_value)]

use std::sync::Arc;

use agno_core::agent_files::{Expect, FileStore, FileSystem, FsError, Partition};
use agno_core::{Db, DbErrorKind};

fn at(namespace: &str, user: &str) -> Partition {
    Partition { namespace: namespace.to_owned(), user_id: user.to_owned() }
}

/// Files round-trip; versions count changes and guard compare-and-swap; partitions and
/// namespaces never see one another; directories match at segment boundaries; a move keeps the
/// content and refuses an existing target; the users holding files are listed.
pub async fn agent_files_round_trip_and_isolate(db: Arc<dyn Db>) {
    let ns = format!("notes-{}", agno_core::new_id());
    let shared = at(&ns, "");
    let ann = at(&ns, "ann");
    let other = at(&format!("{ns}-other"), "");

    let first = db.write_file(&shared, "notes/a.md", "héllo\n", Expect::Any, 100).await.unwrap();
    assert_eq!((first.version, first.size_bytes, first.updated_at), (1, 7, Some(100)));
    let second = db.write_file(&shared, "notes/a.md", "hello again\n", Expect::Any, 101).await.unwrap();
    assert_eq!(second.version, 2);
    let stale = db.write_file(&shared, "notes/a.md", "lost", Expect::Version(1), 102).await.unwrap_err();
    assert_eq!(stale.kind(), DbErrorKind::Conflict);
    let exists = db.write_file(&shared, "notes/a.md", "lost", Expect::Absent, 102).await.unwrap_err();
    assert_eq!(exists.kind(), DbErrorKind::Conflict);
    let swapped = db.write_file(&shared, "notes/a.md", "third\n", Expect::Version(2), 103).await.unwrap();
    assert_eq!(swapped.version, 3);
    let read = db.read_file(&shared, "notes/a.md").await.unwrap().unwrap();
    assert_eq!((read.content.as_str(), read.meta.version, read.meta.updated_at), ("third\n", 3, Some(103)));

    db.write_file(&ann, "notes/a.md", "ann's\n", Expect::Any, 104).await.unwrap();
    db.write_file(&shared, "notes-old/b.md", "old\n", Expect::Any, 105).await.unwrap();
    db.write_file(&shared, "NOTES/c.md", "case\n", Expect::Any, 105).await.unwrap();
    assert!(db.read_file(&other, "notes/a.md").await.unwrap().is_none());
    assert_eq!(db.read_file(&ann, "notes/a.md").await.unwrap().unwrap().content, "ann's\n");
    assert!(db.read_file(&shared, "Notes/a.md").await.unwrap().is_none(), "paths compare exactly");

    let mut under: Vec<String> = db.list_files(&shared, "notes").await.unwrap().into_iter().map(|f| f.path).collect();
    under.sort();
    assert_eq!(under, ["notes/a.md"]);
    assert_eq!(db.list_files(&shared, "").await.unwrap().len(), 3);
    assert_eq!(db.scan_files(&shared, "notes-old").await.unwrap()[0].content, "old\n");

    let moved = db.rename_file(&shared, "notes-old/b.md", "archive/b.md", 106).await.unwrap().unwrap();
    assert_eq!((moved.path.as_str(), moved.version), ("archive/b.md", 2));
    assert_eq!(
        db.rename_file(&shared, "archive/b.md", "notes/a.md", 107).await.unwrap_err().kind(),
        DbErrorKind::Conflict
    );
    assert!(db.rename_file(&shared, "missing.md", "x.md", 107).await.unwrap().is_none());
    assert_eq!(db.read_file(&shared, "notes/a.md").await.unwrap().unwrap().content, "third\n", "nothing clobbered");

    assert!(!db.delete_file(&shared, "archive/b.md", Some(1)).await.unwrap(), "a stale delete is refused");
    assert!(db.delete_file(&shared, "archive/b.md", Some(2)).await.unwrap());
    assert!(!db.delete_file(&shared, "archive/b.md", None).await.unwrap());
    assert_eq!(db.file_partitions(&ns).await.unwrap(), ["ann"]);
}

/// Agno's rules over the store: caps refuse and keep the file, appends are line-oriented (and
/// `unique`), line edits keep the trailing newline, search reports the first match's line and
/// the count, line checks keep the input's order, paths escaping the namespace are refused, and
/// concurrent appends to one file all land.
pub async fn agent_files_follow_agnos_rules(db: Arc<dyn Db>) {
    let store: Arc<dyn FileStore> = db;
    let fs = FileSystem::new(Arc::clone(&store), at(&format!("rules-{}", agno_core::new_id()), ""), 64, 100);

    fs.write("log.md", "one\n", true).await.unwrap();
    let (meta, added) = fs.append("log.md", "two\r\n\nthree", false).await.unwrap();
    assert_eq!((added, meta.unwrap().size_bytes), (10, 14));
    let (_, added) = fs.append("log.md", "two\nfour\nfour", true).await.unwrap();
    assert_eq!(added, 5, "only the new line, once");
    assert_eq!(fs.read("log.md").await.unwrap().unwrap().content, "one\ntwo\nthree\nfour\n");
    let (none, zero) = fs.append("empty.md", "\n\n", false).await.unwrap();
    assert!(none.is_none() && zero == 0 && fs.read("empty.md").await.unwrap().is_none());

    fs.replace_lines("log.md", 2, 3, "TWO-THREE").await.unwrap();
    assert_eq!(fs.read("log.md").await.unwrap().unwrap().content, "one\nTWO-THREE\nfour\n");
    fs.replace_lines("log.md", 1, 1, "").await.unwrap();
    assert_eq!(fs.read("log.md").await.unwrap().unwrap().content, "TWO-THREE\nfour\n");
    assert!(matches!(fs.replace_lines("log.md", 9, 9, "x").await, Err(FsError::Invalid(_))));
    assert!(matches!(fs.replace_lines("nope.md", 1, 1, "x").await, Err(FsError::NotFound(_))));

    let too_big = "x".repeat(65);
    assert!(matches!(fs.write("big.md", &too_big, true).await, Err(FsError::Quota { scope: "file", .. })));
    fs.write("fill.md", &"y".repeat(60), true).await.unwrap();
    assert!(matches!(fs.write("more.md", &"z".repeat(30), true).await, Err(FsError::Quota { scope: "namespace", .. })));
    assert!(fs.read("more.md").await.unwrap().is_none(), "nothing written past a cap");
    assert!(matches!(fs.write("fill.md", "new", false).await, Err(FsError::Exists(_))));
    for bad in ["../escape.md", "/", "a/../../b", "a\\b"] {
        assert!(matches!(fs.write(bad, "x", true).await, Err(FsError::InvalidPath(_))), "{bad} accepted");
    }
    fs.delete("fill.md").await.unwrap();

    fs.write("notes/b.md", "alpha\nBeta beta\ngamma\n", true).await.unwrap();
    let found = fs.search("BETA", ".", 10).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].line, found[0].match_count, found[0].path.as_str()), (2, 2, "notes/b.md"));
    assert!(fs.search("beta", "notes-x", 10).await.unwrap().is_empty());
    let (found, missing) = fs.contains(&["gamma".into(), "delta".into(), "alpha\n".into()], "").await.unwrap();
    assert_eq!((found, missing), (vec!["gamma".to_owned(), "alpha".to_owned()], vec!["delta".to_owned()]));

    fs.rename("notes/b.md", "archive/b.md", false).await.unwrap();
    assert!(matches!(fs.rename("notes/b.md", "x.md", false).await, Err(FsError::NotFound(_))));
    fs.write("x.md", "x\n", true).await.unwrap();
    assert!(matches!(fs.rename("archive/b.md", "x.md", false).await, Err(FsError::Exists(_))));
    fs.rename("archive/b.md", "x.md", true).await.unwrap();
    assert_eq!(fs.read("x.md").await.unwrap().unwrap().content, "alpha\nBeta beta\ngamma\n");

    // Concurrent appends to one file: every line lands (compare and swap, retried).
    let roomy = FileSystem::new(store, fs.partition().clone(), 100_000, 100_000);
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let fs = roomy.clone();
            tokio::spawn(async move { fs.append("shared.md", &format!("line {i}"), false).await.map(|_| ()) })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let mut lines: Vec<String> =
        roomy.read("shared.md").await.unwrap().unwrap().content.lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines, (0..6).map(|i| format!("line {i}")).collect::<Vec<_>>());
}

/// A database that does not keep agent files says so.
pub async fn agent_files_unsupported(db: Arc<dyn Db>) {
    let e = db.read_file(&at("x", ""), "a.md").await.unwrap_err();
    assert_eq!(e.kind(), DbErrorKind::Unsupported);
}
