//! `agno_fs` as every SQL adapter reads and writes it (Agno 3.1's `DbFileSystem`): one row per
//! `(namespace, user_id, path)`, created on first use as Agno creates it (on PostgreSQL in the
//! schema `fs`). Every statement filters on the partition; a change of an existing file is a
//! conditional update on its version, so no write is lost to a concurrent one.

use agno_core::agent_files::{Expect, FileMeta, FileStore, Partition, StoredFile};
use agno_core::{DbErrorKind, DbResult};
use sea_query::{Condition, Expr, ExprTrait, Func, Order, Query};
use sea_query_sqlx::SqlxBinder;
use sqlx::Database;

use super::{Columns, Dialect, LazyTable, SqlDb, SqlFamily, changed, ensure, rows};

const META_COLUMNS: [&str; 4] = ["path", "size_bytes", "version", "updated_at"];

fn meta_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<FileMeta> {
    let c = Columns::<D>::of(row, "agno_fs");
    Ok(FileMeta {
        path: c.text("path")?.unwrap_or_default(),
        size_bytes: c.int("size_bytes")?.unwrap_or_default(),
        version: c.int("version")?.unwrap_or_default(),
        updated_at: c.int("updated_at")?,
    })
}

fn file_from_row<D: Dialect>(row: &<D::DB as Database>::Row) -> DbResult<StoredFile> {
    let content = Columns::<D>::of(row, "agno_fs").text("content")?.unwrap_or_default();
    Ok(StoredFile { meta: meta_from_row::<D>(row)?, content })
}

fn at<D: Dialect>(p: &Partition) -> Condition {
    Condition::all().add(Expr::col("namespace").eq(p.namespace.as_str())).add(D::exact("user_id", &p.user_id))
}

fn at_path<D: Dialect>(p: &Partition, path: &str) -> Condition {
    at::<D>(p).add(D::exact("path", path))
}

/// `path` is `directory` or under it, at a segment boundary (Agno's `_directory_predicate`).
fn under<D: Dialect>(directory: &str) -> Condition {
    if directory.is_empty() {
        return Condition::all();
    }
    let prefix = format!("{directory}/");
    let length = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
    let head = Func::cust("SUBSTR").arg(Expr::col("path")).arg(1).arg(length);
    Condition::any().add(D::exact("path", directory)).add(Expr::expr(head).eq(prefix))
}

fn size_of(content: &str) -> i64 {
    i64::try_from(content.len()).unwrap_or(i64::MAX)
}

async fn select<A: SqlFamily>(
    db: &SqlDb<A>,
    filter: Condition,
    content: bool,
    what: &str,
) -> DbResult<Vec<StoredFile>> {
    let db = &db.0;
    ensure(db, LazyTable::Files).await?;
    let mut q = Query::select();
    q.columns(META_COLUMNS).from(db.files_table()).cond_where(filter);
    if content {
        q.column("content");
    }
    let found = rows(db, q.build_sqlx(A::D::builder()), what).await?;
    found
        .iter()
        .map(|r| {
            if content {
                file_from_row::<A::D>(r)
            } else {
                meta_from_row::<A::D>(r).map(|meta| StoredFile { meta, content: String::new() })
            }
        })
        .collect()
}

#[async_trait::async_trait]
impl<A: SqlFamily> FileStore for SqlDb<A> {
    async fn read_file(&self, p: &Partition, path: &str) -> DbResult<Option<StoredFile>> {
        let what = format!("cannot read file {path}");
        Ok(select(self, at_path::<A::D>(p, path), true, &what).await?.into_iter().next())
    }

    async fn write_file(
        &self,
        p: &Partition,
        path: &str,
        content: &str,
        expect: Expect,
        now: i64,
    ) -> DbResult<FileMeta> {
        let what = format!("cannot write file {path}");
        let size = size_of(content);
        let mut expect = expect;
        // Last writer wins: replace the version read, or create; retried when another writer
        // changed the file in between.
        for _ in 0..16 {
            let version = match expect {
                Expect::Any => match self.read_file(p, path).await? {
                    Some(f) => Some(f.meta.version),
                    None => None,
                },
                Expect::Absent => None,
                Expect::Version(v) => Some(v),
            };
            let db = &self.0;
            ensure(db, LazyTable::Files).await?;
            let outcome = match version {
                None => {
                    let mut insert = Query::insert();
                    insert
                        .into_table(db.files_table())
                        .columns([
                            "namespace",
                            "path",
                            "content",
                            "size_bytes",
                            "version",
                            "created_at",
                            "updated_at",
                            "user_id",
                        ])
                        .values([
                            p.namespace.as_str().into(),
                            path.into(),
                            content.into(),
                            size.into(),
                            1i64.into(),
                            now.into(),
                            now.into(),
                            p.user_id.as_str().into(),
                        ])
                        .map_err(|e| agno_core::DbError::new(DbErrorKind::Other, format!("{what}: {e}")))?;
                    changed(db, insert.build_sqlx(A::D::builder()), &what).await.map(|_| 1)
                }
                Some(v) => {
                    let update = Query::update()
                        .table(db.files_table())
                        .value("content", content)
                        .value("size_bytes", size)
                        .value("version", v + 1)
                        .value("updated_at", now)
                        .cond_where(at_path::<A::D>(p, path).add(Expr::col("version").eq(v)))
                        .build_sqlx(A::D::builder());
                    changed(db, update, &what).await
                }
            };
            let version = version.map_or(1, |v| v + 1);
            match outcome {
                Ok(1) => {
                    return Ok(FileMeta { path: path.to_owned(), size_bytes: size, version, updated_at: Some(now) });
                }
                Ok(_) if expect == Expect::Any => {}
                Err(e) if e.kind() == DbErrorKind::Conflict && expect == Expect::Any => {}
                Ok(_) => {
                    return Err(agno_core::DbError::new(DbErrorKind::Conflict, format!("{path} changed meanwhile")));
                }
                Err(e) => return Err(e),
            }
            expect = Expect::Any;
        }
        Err(agno_core::DbError::new(DbErrorKind::Conflict, format!("{path} kept changing while being written")))
    }

    async fn list_files(&self, p: &Partition, directory: &str) -> DbResult<Vec<FileMeta>> {
        let what = format!("cannot list the files of {}", p.namespace);
        let files = select(self, at::<A::D>(p).add(under::<A::D>(directory)), false, &what).await?;
        Ok(files.into_iter().map(|f| f.meta).collect())
    }

    async fn scan_files(&self, p: &Partition, directory: &str) -> DbResult<Vec<StoredFile>> {
        let what = format!("cannot read the files of {}", p.namespace);
        select(self, at::<A::D>(p).add(under::<A::D>(directory)), true, &what).await
    }

    async fn delete_file(&self, p: &Partition, path: &str, expected_version: Option<i64>) -> DbResult<bool> {
        let db = &self.0;
        ensure(db, LazyTable::Files).await?;
        let mut filter = at_path::<A::D>(p, path);
        if let Some(v) = expected_version {
            filter = filter.add(Expr::col("version").eq(v));
        }
        let delete = Query::delete().from_table(db.files_table()).cond_where(filter).build_sqlx(A::D::builder());
        Ok(changed(db, delete, &format!("cannot delete file {path}")).await? > 0)
    }

    async fn rename_file(&self, p: &Partition, src: &str, dst: &str, now: i64) -> DbResult<Option<FileMeta>> {
        let db = &self.0;
        ensure(db, LazyTable::Files).await?;
        let update = Query::update()
            .table(db.files_table())
            .value("path", dst)
            .value("version", Expr::col("version").add(1))
            .value("updated_at", now)
            .cond_where(at_path::<A::D>(p, src))
            .build_sqlx(A::D::builder());
        match changed(db, update, &format!("cannot move file {src} to {dst}")).await {
            Ok(0) => Ok(None),
            Ok(_) => Ok(self.read_file(p, dst).await?.map(|f| f.meta)),
            Err(e) if e.kind() == DbErrorKind::Conflict => {
                Err(agno_core::DbError::new(DbErrorKind::Conflict, format!("file exists: {dst}")).with_source(e))
            }
            Err(e) => Err(e),
        }
    }

    async fn file_partitions(&self, namespace: &str) -> DbResult<Vec<String>> {
        let db = &self.0;
        ensure(db, LazyTable::Files).await?;
        let select = Query::select()
            .distinct()
            .column("user_id")
            .from(db.files_table())
            .and_where(Expr::col("namespace").eq(namespace))
            .and_where(Expr::col("user_id").ne(""))
            .order_by("user_id", Order::Asc)
            .build_sqlx(A::D::builder());
        let found = rows(db, select, &format!("cannot list the users of {namespace}")).await?;
        found.iter().map(|r| Columns::<A::D>::of(r, "agno_fs").text("user_id").map(Option::unwrap_or_default)).collect()
    }
}
