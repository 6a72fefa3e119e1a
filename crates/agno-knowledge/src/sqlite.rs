//! The embedded vector store: one SQLite table of chunks (in the same file as the sessions, or
//! any other), an FTS5 index over their text for keyword search, and exact cosine ranking over
//! the embeddings for vector search, from an in-process copy that is reloaded whenever another
//! writer (process or handle) changed the table.
//!
//! Keyword search needs no embedder, so a store without one is useful offline.

use std::collections::HashMap;
use std::sync::Arc;

use agno_core::{Document, KnowledgeError, SearchType};
use async_trait::async_trait;
use serde_json::{Map, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Row, SqliteConnection};
use tokio::sync::RwLock;

use crate::store::{
    UserColumn, VectorDb, VectorQuery, VectorRow, check_identifier, hybrid_score, query_words, sql, store_err, unit,
};

/// Half-saturation point of the text rank (`-bm25`) in hybrid scores.
const TEXT_RANK_K: f64 = 1.0;

/// The embedded store.
#[derive(Debug, Clone)]
pub struct SqliteVectorDb {
    pool: SqlitePool,
    table: String,
    cache: Arc<RwLock<Cache>>,
    user_column: UserColumn,
}

/// The embeddings, as of `version`.
#[derive(Debug, Default)]
struct Cache {
    version: Option<i64>,
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    rid: i64,
    user_id: Option<String>,
    meta: Map<String, Value>,
    embedding: Vec<f32>,
}

/// The dot product, in eight independent sums so the compiler can vectorize it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

impl SqliteVectorDb {
    /// A store in table `table` of the SQLite database at `url` (`sqlite://file.db`,
    /// `sqlite::memory:`), created if missing.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`] for a bad URL or table name, or when the file cannot be opened.
    pub async fn connect(url: &str, table: &str) -> Result<Self, KnowledgeError> {
        check_identifier(table, "table name")?;
        let options: SqliteConnectOptions = url.parse().map_err(store_err)?;
        let options = options
            .create_if_missing(true)
            .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
            .busy_timeout(std::time::Duration::from_secs(10));
        // One connection for `sqlite::memory:` (each connection would be its own database).
        let max = if url.contains(":memory:") || url.contains("mode=memory") { 1 } else { 4 };
        let pool = SqlitePoolOptions::new().max_connections(max).connect_with(options).await.map_err(store_err)?;
        Ok(Self { pool, table: table.to_owned(), cache: Arc::default(), user_column: UserColumn::default() })
    }

    /// A write transaction that holds SQLite's write lock from its start (`BEGIN IMMEDIATE`).
    ///
    /// A deferred transaction that reads before it writes cannot wait for the lock: when another
    /// connection to the file (the OS's own storage writes traces, runs and jobs to the same
    /// file) committed in between, SQLite answers `database is locked` at once, without the busy
    /// timeout. Taking the lock first makes every writer wait its turn instead.
    async fn write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, KnowledgeError> {
        self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(store_err)
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    async fn has_user_column(&self) -> Result<bool, KnowledgeError> {
        if self.user_column.known() {
            return Ok(true);
        }
        let rows = sqlx::query(sql(format!("PRAGMA table_info({})", self.table)))
            .fetch_all(&self.pool)
            .await
            .map_err(store_err)?;
        Ok(self.user_column.seen(rows.iter().any(|r| r.try_get::<String, _>("name").is_ok_and(|n| n == "user_id"))))
    }

    async fn bump_version(&self, conn: &mut SqliteConnection) -> Result<(), KnowledgeError> {
        sqlx::query(sql(format!(
            "INSERT INTO {t}_version (id, version) VALUES (1, 1) \
             ON CONFLICT(id) DO UPDATE SET version = version + 1",
            t = self.table
        )))
        .execute(conn)
        .await
        .map_err(store_err)?;
        Ok(())
    }

    /// The cached embeddings, reloaded when the table changed since they were read.
    async fn entries(&self) -> Result<tokio::sync::RwLockReadGuard<'_, Cache>, KnowledgeError> {
        let current: Option<i64> =
            sqlx::query_scalar(sql(format!("SELECT version FROM {}_version WHERE id = 1", self.table)))
                .fetch_optional(&self.pool)
                .await
                .map_err(store_err)?;
        {
            let cache = self.cache.read().await;
            if cache.version == Some(current.unwrap_or(0)) {
                return Ok(cache);
            }
        }
        let mut cache = self.cache.write().await;
        let has_user = self.has_user_column().await?;
        let user_col = if has_user { "user_id" } else { "NULL AS user_id" };
        let rows = sqlx::query(sql(format!(
            "SELECT rid, {user_col}, meta_data, embedding FROM {} WHERE embedding IS NOT NULL",
            self.table
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(store_err)?;
        cache.entries = rows
            .iter()
            .map(|r| Entry {
                rid: r.try_get("rid").unwrap_or_default(),
                user_id: r.try_get("user_id").ok().flatten(),
                meta: meta_of(r),
                // Kept unit-length: a cosine is then one dot product.
                embedding: unit(from_blob(&r.try_get::<Vec<u8>, _>("embedding").unwrap_or_default())),
            })
            .collect();
        cache.version = Some(current.unwrap_or(0));
        Ok(cache.downgrade())
    }

    /// Text ranks (`-bm25`, higher is better) of the rows matching any query word, visible to
    /// the user.
    /// Text ranks of the matches (all of them, or the best `limit`).
    async fn text_ranks(
        &self,
        text: &str,
        user_id: Option<&str>,
        limit: Option<usize>,
    ) -> Result<HashMap<i64, f64>, KnowledgeError> {
        let words = query_words(text);
        if words.is_empty() {
            return Ok(HashMap::new());
        }
        // Each word quoted: FTS5 sees plain terms, never its query syntax.
        let fts_query = words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR ");
        // The user clause only when scoped: a pre-v3 table has no user_id column.
        let scope = if user_id.is_some() { " AND (t.user_id = ?2 OR t.user_id IS NULL)" } else { "" };
        let top = if limit.is_some() { " ORDER BY r, t.rid LIMIT ?3" } else { "" };
        let rows = sqlx::query(sql(format!(
            "SELECT t.rid AS rid, bm25({t}_fts) AS r FROM {t}_fts JOIN {t} t ON t.rid = {t}_fts.rowid \
             WHERE {t}_fts MATCH ?1{scope}{top}",
            t = self.table
        )))
        .bind(fts_query)
        .bind(user_id)
        .bind(limit.and_then(|n| i64::try_from(n).ok()))
        .fetch_all(&self.pool)
        .await
        .map_err(store_err)?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.try_get::<i64, _>("rid").ok()?, -r.try_get::<f64, _>("r").ok()?)))
            .collect())
    }

    async fn documents(&self, ranked: &[(i64, f64)]) -> Result<Vec<Document>, KnowledgeError> {
        if ranked.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; ranked.len()].join(", ");
        let sql_text =
            format!("SELECT rid, id, name, meta_data, content, content_id FROM {} WHERE rid IN ({marks})", self.table);
        let mut query = sqlx::query(sql(sql_text));
        for (rid, _) in ranked {
            query = query.bind(rid);
        }
        let rows = query.fetch_all(&self.pool).await.map_err(store_err)?;
        let mut by_rid: HashMap<i64, Document> = rows
            .iter()
            .filter_map(|r| {
                let rid: i64 = r.try_get("rid").ok()?;
                Some((
                    rid,
                    Document {
                        id: r.try_get("id").ok(),
                        name: r.try_get("name").ok().flatten(),
                        meta_data: meta_of(r),
                        content: r.try_get("content").unwrap_or_default(),
                        content_id: r.try_get("content_id").ok().flatten(),
                        reranking_score: None,
                    },
                ))
            })
            .collect();
        Ok(ranked
            .iter()
            .filter_map(|(rid, score)| {
                by_rid.remove(rid).map(|mut d| {
                    d.reranking_score = Some(*score);
                    d
                })
            })
            .collect())
    }

    /// Rows of the table (for tests and tools): id and content, in insertion order.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    pub async fn count(&self) -> Result<u64, KnowledgeError> {
        let n: i64 = sqlx::query_scalar(sql(format!("SELECT COUNT(*) FROM {}", self.table)))
            .fetch_one(&self.pool)
            .await
            .map_err(store_err)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

fn meta_of(r: &sqlx::sqlite::SqliteRow) -> Map<String, Value> {
    r.try_get::<String, _>("meta_data")
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

#[async_trait]
impl VectorDb for SqliteVectorDb {
    async fn create(&self) -> Result<(), KnowledgeError> {
        let t = &self.table;
        let statements = [
            format!(
                "CREATE TABLE IF NOT EXISTS {t} (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT, \
                 meta_data TEXT NOT NULL DEFAULT '{{}}', content TEXT NOT NULL, embedding BLOB, \
                 created_at INTEGER, updated_at INTEGER, content_hash TEXT, content_id TEXT, user_id TEXT)"
            ),
            format!("CREATE INDEX IF NOT EXISTS ix_{t}_content_id ON {t} (content_id)"),
            format!("CREATE INDEX IF NOT EXISTS ix_{t}_content_hash ON {t} (content_hash)"),
            format!(
                "CREATE VIRTUAL TABLE IF NOT EXISTS {t}_fts USING fts5(content, content='{t}', content_rowid='rid', \
                 tokenize='unicode61')"
            ),
            format!(
                "CREATE TRIGGER IF NOT EXISTS {t}_ai AFTER INSERT ON {t} BEGIN \
                 INSERT INTO {t}_fts (rowid, content) VALUES (new.rid, new.content); END"
            ),
            format!(
                "CREATE TRIGGER IF NOT EXISTS {t}_ad AFTER DELETE ON {t} BEGIN \
                 INSERT INTO {t}_fts ({t}_fts, rowid, content) VALUES ('delete', old.rid, old.content); END"
            ),
            format!(
                "CREATE TABLE IF NOT EXISTS {t}_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)"
            ),
        ];
        let fts_existed: Option<String> = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE name = ?1")
            .bind(format!("{t}_fts"))
            .fetch_optional(&self.pool)
            .await
            .map_err(store_err)?;
        let mut tx = self.write().await?;
        for statement in statements {
            sqlx::query(sql(statement)).execute(&mut *tx).await.map_err(store_err)?;
        }
        if fts_existed.is_none() {
            // A table that had rows before its index (an older store): index them now.
            sqlx::query(sql(format!("INSERT INTO {t}_fts ({t}_fts) VALUES ('rebuild')")))
                .execute(&mut *tx)
                .await
                .map_err(store_err)?;
        }
        tx.commit().await.map_err(store_err)?;
        if self.has_user_column().await? {
            sqlx::query(sql(format!("CREATE INDEX IF NOT EXISTS ix_{t}_user_id ON {t} (user_id)")))
                .execute(&self.pool)
                .await
                .map_err(store_err)?;
        }
        Ok(())
    }

    async fn replace_content(&self, content_id: &str, rows: &[VectorRow]) -> Result<(), KnowledgeError> {
        let t = &self.table;
        let now = agno_core::now_epoch_secs();
        let mut tx = self.write().await?;
        sqlx::query(sql(format!("DELETE FROM {t} WHERE content_id = ?1")))
            .bind(content_id)
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        // Many rows per statement (9 parameters each, well under SQLite's limit).
        for batch in rows.chunks(200) {
            let values = vec!["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"; batch.len()].join(", ");
            let text = format!(
                "INSERT INTO {t} (id, name, meta_data, content, embedding, created_at, updated_at, content_hash, \
                 content_id, user_id) VALUES {values}"
            );
            let mut query = sqlx::query(sql(text));
            for row in batch {
                let meta = serde_json::to_string(&row.meta_data).map_err(store_err)?;
                query = query
                    .bind(&row.id)
                    .bind(&row.name)
                    .bind(meta)
                    .bind(&row.content)
                    .bind(row.embedding.as_deref().map(to_blob))
                    .bind(now)
                    .bind(now)
                    .bind(&row.content_hash)
                    .bind(&row.content_id)
                    .bind(&row.user_id);
            }
            query.execute(&mut *tx).await.map_err(store_err)?;
        }
        self.bump_version(&mut tx).await?;
        tx.commit().await.map_err(store_err)
    }

    async fn delete_by_content_id(&self, content_id: &str) -> Result<u64, KnowledgeError> {
        let mut tx = self.write().await?;
        let done = sqlx::query(sql(format!("DELETE FROM {} WHERE content_id = ?1", self.table)))
            .bind(content_id)
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        self.bump_version(&mut tx).await?;
        tx.commit().await.map_err(store_err)?;
        Ok(done.rows_affected())
    }

    async fn update_metadata(&self, content_id: &str, metadata: &Map<String, Value>) -> Result<u64, KnowledgeError> {
        let t = &self.table;
        let mut tx = self.write().await?;
        let rows = sqlx::query(sql(format!("SELECT rid, meta_data FROM {t} WHERE content_id = ?1")))
            .bind(content_id)
            .fetch_all(&mut *tx)
            .await
            .map_err(store_err)?;
        for r in &rows {
            let rid: i64 = r.try_get("rid").map_err(store_err)?;
            let mut meta = meta_of(r);
            meta.extend(metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
            sqlx::query(sql(format!("UPDATE {t} SET meta_data = ?1, updated_at = ?2 WHERE rid = ?3")))
                .bind(serde_json::to_string(&meta).map_err(store_err)?)
                .bind(agno_core::now_epoch_secs())
                .bind(rid)
                .execute(&mut *tx)
                .await
                .map_err(store_err)?;
        }
        // The cached metadata (filters read it) is stale now.
        self.bump_version(&mut tx).await?;
        tx.commit().await.map_err(store_err)?;
        Ok(rows.len() as u64)
    }

    async fn content_hash_exists(&self, content_hash: &str, user_id: Option<&str>) -> Result<bool, KnowledgeError> {
        let found: Option<i64> = sqlx::query_scalar(sql(format!(
            "SELECT 1 FROM {} WHERE content_hash = ?1 AND (?2 IS NULL OR user_id = ?2 OR user_id IS NULL) LIMIT 1",
            self.table
        )))
        .bind(content_hash)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_err)?;
        Ok(found.is_some())
    }

    async fn search(&self, q: VectorQuery<'_>) -> Result<Vec<Document>, KnowledgeError> {
        if q.user_id.is_some() && !self.has_user_column().await? {
            return Err(KnowledgeError::NeedsMigration { table: self.table.clone() });
        }
        let visible = |user: &Option<String>, meta: &Map<String, Value>| {
            let user_ok = match (q.user_id, user) {
                (None, _) | (Some(_), None) => true,
                (Some(want), Some(owner)) => want == owner,
            };
            user_ok && q.filter.is_none_or(|f| f.matches(meta))
        };
        let needs_vector = matches!(q.search_type, SearchType::Vector | SearchType::Hybrid);
        let embedding = match (needs_vector, q.embedding) {
            (true, None) => {
                return Err(KnowledgeError::Unsupported(format!(
                    "{} search needs an embedder: configure one, or search with search_type keyword",
                    q.search_type.as_str()
                )));
            }
            (_, e) => e,
        };
        let mut ranked: Vec<(i64, f64)> = match q.search_type {
            SearchType::Keyword => {
                // Without a filter the index returns only the best; a filter needs every match.
                let top = q.filter.is_none().then_some(q.limit);
                let ranks = self.text_ranks(q.text, q.user_id, top).await?;
                if q.filter.is_some() {
                    // Filters apply to the stored metadata: read it for the matches.
                    let cache = self.entries().await?;
                    let meta: HashMap<i64, &Entry> = cache.entries.iter().map(|e| (e.rid, e)).collect();
                    let mut kept: Vec<(i64, f64)> = Vec::new();
                    let unembedded = self.unembedded_meta(ranks.keys().filter(|r| !meta.contains_key(r))).await?;
                    for (rid, r) in ranks {
                        let ok = match meta.get(&rid) {
                            Some(e) => visible(&e.user_id, &e.meta),
                            None => unembedded.get(&rid).is_some_and(|(u, m)| visible(u, m)),
                        };
                        if ok {
                            kept.push((rid, r));
                        }
                    }
                    kept
                } else {
                    ranks.into_iter().collect()
                }
            }
            SearchType::Vector | SearchType::Hybrid => {
                let query = unit(embedding.unwrap_or_default().to_vec());
                let ranks = if q.search_type == SearchType::Hybrid {
                    self.text_ranks(q.text, q.user_id, None).await?
                } else {
                    HashMap::new()
                };
                let cache = self.entries().await?;
                cache
                    .entries
                    .iter()
                    .filter(|e| visible(&e.user_id, &e.meta))
                    .map(|e| {
                        let sim = dot(&query, &e.embedding);
                        let score = if q.search_type == SearchType::Hybrid {
                            hybrid_score(Some(sim), ranks.get(&e.rid).copied().unwrap_or(0.0), TEXT_RANK_K)
                        } else {
                            f64::from(sim)
                        };
                        (e.rid, score)
                    })
                    .collect()
            }
        };
        if q.search_type == SearchType::Keyword {
            // -bm25 onto [0, 1), order kept: scores stay comparable with cosine ones.
            for (_, score) in &mut ranked {
                *score = score.max(0.0) / (score.max(0.0) + TEXT_RANK_K);
            }
        }
        // Best first, ties by insertion order; only the top `limit` are ordered.
        let order = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > q.limit && q.limit > 0 {
            ranked.select_nth_unstable_by(q.limit - 1, order);
            ranked.truncate(q.limit);
        }
        ranked.sort_by(order);
        ranked.truncate(q.limit);
        self.documents(&ranked).await
    }

    async fn migrate_user_id(&self) -> Result<bool, KnowledgeError> {
        // The index and version row first (an older table may have neither).
        self.create().await?;
        if self.has_user_column().await? {
            return Ok(false);
        }
        let t = &self.table;
        let mut tx = self.write().await?;
        sqlx::query(sql(format!("ALTER TABLE {t} ADD COLUMN user_id TEXT")))
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        sqlx::query(sql(format!("CREATE INDEX IF NOT EXISTS ix_{t}_user_id ON {t} (user_id)")))
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        self.bump_version(&mut tx).await?;
        tx.commit().await.map_err(store_err)?;
        Ok(true)
    }
}

impl SqliteVectorDb {
    /// Owner and metadata of rows without an embedding (keyword-only stores).
    async fn unembedded_meta(
        &self,
        rids: impl Iterator<Item = &i64>,
    ) -> Result<HashMap<i64, (Option<String>, Map<String, Value>)>, KnowledgeError> {
        let rids: Vec<i64> = rids.copied().collect();
        let user_col = if self.has_user_column().await? { "user_id" } else { "NULL AS user_id" };
        let mut out = HashMap::new();
        for batch in rids.chunks(500) {
            let marks = vec!["?"; batch.len()].join(", ");
            let sql_text = format!("SELECT rid, {user_col}, meta_data FROM {} WHERE rid IN ({marks})", self.table);
            let mut query = sqlx::query(sql(sql_text));
            for rid in batch {
                query = query.bind(rid);
            }
            for r in query.fetch_all(&self.pool).await.map_err(store_err)? {
                let rid: i64 = r.try_get("rid").map_err(store_err)?;
                out.insert(rid, (r.try_get("user_id").ok().flatten(), meta_of(&r)));
            }
        }
        Ok(out)
    }
}
