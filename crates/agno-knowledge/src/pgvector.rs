//! PgVector: chunks in a PostgreSQL table with the pgvector extension, in the shape Python
//! Agno 3.1's `PgVector` creates (`id, name, meta_data, filters, content, embedding vector(d),
//! usage, created_at, updated_at, content_hash, content_id, user_id`, schema `ai`), so agno-rs and
//! Python can share a table. HNSW (default) or IVFFlat over cosine distance, a GIN index for full
//! text (the vector index is built by [`VectorDb::optimize`], as Agno's `optimize()`), and
//! Agno's scores: vector `max(0, 1 - cosine distance)`, keyword
//! `ts_rank_cd / (ts_rank_cd + 0.1)`, hybrid their 0.5/0.5 mix.
//!
//! Filters become SQL over `meta_data` with every key and value bound as a parameter.

use agno_core::{Document, Filter, KnowledgeError, SearchType};
use async_trait::async_trait;
use serde_json::{Map, Value};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::{Postgres, Row};

use crate::store::{
    UserColumn, VECTOR_SCORE_WEIGHT, VectorDb, VectorQuery, VectorRow, check_identifier, sql, store_err,
};

/// Agno's half-saturation point for `ts_rank_cd`.
const RANK_K: f64 = 0.1;

/// The approximate index over the embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorIndex {
    /// HNSW (Agno's default: `m = 16`, `ef_construction = 64`, `ef_search = 40`).
    Hnsw {
        /// Links per node.
        m: u32,
        /// Candidates while building.
        ef_construction: u32,
        /// Candidates while searching (`SET LOCAL hnsw.ef_search`).
        ef_search: u32,
    },
    /// IVFFlat with `lists` clusters, `probes` searched.
    Ivfflat {
        /// Clusters.
        lists: u32,
        /// Clusters searched (`SET LOCAL ivfflat.probes`).
        probes: u32,
    },
    /// Exact search only.
    None,
}

impl Default for VectorIndex {
    fn default() -> Self {
        VectorIndex::Hnsw { m: 16, ef_construction: 64, ef_search: 40 }
    }
}

/// A PgVector store.
#[derive(Debug, Clone)]
pub struct PgVectorDb {
    pool: PgPool,
    schema: String,
    table: String,
    dims: usize,
    index: VectorIndex,
    user_column: UserColumn,
}

/// A vector as pgvector's text form (`[1,2,3]`), bound and cast with `::vector`.
fn literal(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| if x.is_finite() { x.to_string() } else { "0".to_owned() }).collect();
    format!("[{}]", parts.join(","))
}

/// Bound parameters of a statement, in order (`$1`, `$2`, ...).
#[derive(Debug, Default)]
struct Params(Vec<Param>);

#[derive(Debug)]
enum Param {
    Text(String),
    Json(Value),
    Number(f64),
}

impl Params {
    fn push(&mut self, p: Param) -> String {
        self.0.push(p);
        format!("${}", self.0.len())
    }

    fn bind<'q>(
        self,
        mut q: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        for p in self.0 {
            q = match p {
                Param::Text(t) => q.bind(t),
                Param::Json(v) => q.bind(sqlx::types::Json(v)),
                Param::Number(n) => q.bind(n),
            };
        }
        q
    }
}

/// `filter` as a condition over `meta_data`, every key and value a parameter.
fn condition(filter: &Filter, params: &mut Params) -> String {
    let field = |key: &str, params: &mut Params| format!("(meta_data -> {})", params.push(Param::Text(key.to_owned())));
    let compare = |key: &str, value: &Value, op: &str, params: &mut Params| -> String {
        let f = field(key, params);
        match value {
            Value::Number(n) => {
                let v = params.push(Param::Number(n.as_f64().unwrap_or(f64::NAN)));
                format!("(jsonb_typeof({f}) = 'number' AND ({f})::text::float8 {op} {v})")
            }
            Value::String(s) => {
                let v = params.push(Param::Text(s.clone()));
                format!("(jsonb_typeof({f}) = 'string' AND ({f} #>> '{{}}') {op} {v})")
            }
            _ => "FALSE".to_owned(),
        }
    };
    match filter {
        Filter::Eq { key, value } => {
            let mut m = Map::new();
            m.insert(key.clone(), value.clone());
            format!("(meta_data @> {})", params.push(Param::Json(Value::Object(m))))
        }
        Filter::Neq { key, value } => {
            let mut m = Map::new();
            m.insert(key.clone(), value.clone());
            format!("(NOT (meta_data @> {}))", params.push(Param::Json(Value::Object(m))))
        }
        Filter::In { key, values } => {
            if values.is_empty() {
                return "FALSE".to_owned();
            }
            let parts: Vec<String> =
                values.iter().map(|v| condition(&Filter::Eq { key: key.clone(), value: v.clone() }, params)).collect();
            format!("({})", parts.join(" OR "))
        }
        Filter::Gt { key, value } => compare(key, value, ">", params),
        Filter::Gte { key, value } => compare(key, value, ">=", params),
        Filter::Lt { key, value } => compare(key, value, "<", params),
        Filter::Lte { key, value } => compare(key, value, "<=", params),
        Filter::Contains { key, value } => {
            let f = field(key, params);
            let element = params.push(Param::Json(Value::Array(vec![value.clone()])));
            match value {
                Value::String(s) => {
                    let needle = params.push(Param::Text(s.clone()));
                    format!(
                        "((jsonb_typeof({f}) = 'string' AND strpos({f} #>> '{{}}', {needle}) > 0) OR \
                         (jsonb_typeof({f}) = 'array' AND {f} @> {element}))"
                    )
                }
                _ => format!("(jsonb_typeof({f}) = 'array' AND {f} @> {element})"),
            }
        }
        Filter::Startswith { key, value } => match value {
            Value::String(s) => {
                let f = field(key, params);
                let prefix = params.push(Param::Text(s.clone()));
                format!("(jsonb_typeof({f}) = 'string' AND left({f} #>> '{{}}', length({prefix})) = {prefix})")
            }
            _ => "FALSE".to_owned(),
        },
        Filter::And { conditions } => {
            if conditions.is_empty() {
                return "TRUE".to_owned();
            }
            let parts: Vec<String> = conditions.iter().map(|c| condition(c, params)).collect();
            format!("({})", parts.join(" AND "))
        }
        Filter::Or { conditions } => {
            if conditions.is_empty() {
                return "FALSE".to_owned();
            }
            let parts: Vec<String> = conditions.iter().map(|c| condition(c, params)).collect();
            format!("({})", parts.join(" OR "))
        }
        Filter::Not { condition: inner } => format!("(NOT COALESCE({}, FALSE))", condition(inner, params)),
    }
}

impl PgVectorDb {
    /// A store in `schema.table` of the PostgreSQL database at `url`, for embeddings of `dims`
    /// dimensions (Agno's defaults: schema `ai`, HNSW).
    ///
    /// # Errors
    /// [`KnowledgeError::Store`] for bad names or an unreachable database.
    pub async fn connect(url: &str, schema: &str, table: &str, dims: usize) -> Result<Self, KnowledgeError> {
        check_identifier(schema, "schema")?;
        check_identifier(table, "table name")?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(|e| store_err(format!("cannot connect to {}: {e}", agno_core::redact_url(url))))?;
        Ok(Self {
            pool,
            schema: schema.to_owned(),
            table: table.to_owned(),
            dims: dims.max(1),
            index: VectorIndex::default(),
            user_column: UserColumn::default(),
        })
    }

    /// The vector index [`VectorDb::optimize`] builds, and the search setting it takes.
    pub fn index(mut self, index: VectorIndex) -> Self {
        self.index = index;
        self
    }

    /// The table's name (without its schema).
    pub fn table(&self) -> &str {
        &self.table
    }

    fn full(&self) -> String {
        format!("\"{}\".\"{}\"", self.schema, self.table)
    }

    async fn has_user_column(&self) -> Result<bool, KnowledgeError> {
        if self.user_column.known() {
            return Ok(true);
        }
        let found: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'user_id'",
        )
        .bind(&self.schema)
        .bind(&self.table)
        .fetch_optional(&self.pool)
        .await
        .map_err(store_err)?;
        Ok(self.user_column.seen(found.is_some()))
    }

    /// Chunks in the table.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    pub async fn count(&self) -> Result<u64, KnowledgeError> {
        let n: i64 = sqlx::query_scalar(sql(format!("SELECT COUNT(*) FROM {}", self.full())))
            .fetch_one(&self.pool)
            .await
            .map_err(store_err)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Builds the vector index over the chunks stored so far (Agno's `optimize()`, also
    /// [`VectorDb::optimize`]), replacing
    /// an older one: HNSW, or IVFFlat with `lists` clusters. As in Agno, [`VectorDb::create`]
    /// makes no vector index (a search is exact until this runs): building it once over the data
    /// is far cheaper than growing it row by row.
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    pub async fn build_index(&self) -> Result<(), KnowledgeError> {
        let (t, full) = (&self.table, self.full());
        let (name, build) = match self.index {
            VectorIndex::Hnsw { m, ef_construction, .. } => (
                format!("{t}_hnsw_index"),
                format!("USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef_construction})"),
            ),
            VectorIndex::Ivfflat { lists, .. } => (
                format!("{t}_ivfflat_index"),
                format!("USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists})"),
            ),
            VectorIndex::None => return Ok(()),
        };
        let schema = &self.schema;
        let mut tx = self.pool.begin().await.map_err(store_err)?;
        sqlx::query(sql(format!("DROP INDEX IF EXISTS \"{schema}\".\"{name}\"")))
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        sqlx::query(sql(format!("CREATE INDEX \"{name}\" ON {full} {build}")))
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        tx.commit().await.map_err(store_err)
    }

    /// Drops the table (tests, benchmarks).
    ///
    /// # Errors
    /// [`KnowledgeError::Store`].
    pub async fn drop_table(&self) -> Result<(), KnowledgeError> {
        sqlx::query(sql(format!("DROP TABLE IF EXISTS {}", self.full())))
            .execute(&self.pool)
            .await
            .map_err(store_err)?;
        Ok(())
    }
}

#[async_trait]
impl VectorDb for PgVectorDb {
    async fn create(&self) -> Result<(), KnowledgeError> {
        let (t, full, d) = (&self.table, self.full(), self.dims);
        let statements = vec![
            "CREATE EXTENSION IF NOT EXISTS vector".to_owned(),
            format!("CREATE SCHEMA IF NOT EXISTS \"{}\"", self.schema),
            format!(
                "CREATE TABLE IF NOT EXISTS {full} (id VARCHAR NOT NULL PRIMARY KEY, name VARCHAR, \
                 meta_data JSONB DEFAULT '{{}}'::jsonb, filters JSONB DEFAULT '{{}}'::jsonb, content TEXT, \
                 embedding vector({d}), usage JSONB, created_at TIMESTAMP WITH TIME ZONE DEFAULT now(), \
                 updated_at TIMESTAMP WITH TIME ZONE, content_hash VARCHAR, content_id VARCHAR, user_id VARCHAR)"
            ),
            format!("CREATE INDEX IF NOT EXISTS \"idx_{t}_id\" ON {full} (id)"),
            format!("CREATE INDEX IF NOT EXISTS \"idx_{t}_name\" ON {full} (name)"),
            format!("CREATE INDEX IF NOT EXISTS \"idx_{t}_content_hash\" ON {full} (content_hash)"),
            format!("CREATE INDEX IF NOT EXISTS \"idx_{t}_content_id\" ON {full} (content_id)"),
            format!(
                "CREATE INDEX IF NOT EXISTS \"{t}_content_gin_index\" ON {full} USING GIN (to_tsvector('english', content))"
            ),
        ];
        for statement in statements {
            sqlx::query(sql(statement)).execute(&self.pool).await.map_err(store_err)?;
        }
        if self.has_user_column().await? {
            sqlx::query(sql(format!("CREATE INDEX IF NOT EXISTS \"idx_{t}_user_id\" ON {full} (user_id)")))
                .execute(&self.pool)
                .await
                .map_err(store_err)?;
        }
        Ok(())
    }

    async fn replace_content(&self, content_id: &str, rows: &[VectorRow]) -> Result<(), KnowledgeError> {
        let full = self.full();
        let has_user = self.has_user_column().await?;
        if rows.iter().any(|r| r.user_id.is_some()) && !has_user {
            return Err(KnowledgeError::NeedsMigration { table: self.table.clone() });
        }
        let mut tx = self.pool.begin().await.map_err(store_err)?;
        sqlx::query(sql(format!("DELETE FROM {full} WHERE content_id = $1")))
            .bind(content_id)
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        let user_col = if has_user { ", user_id" } else { "" };
        for batch in rows.chunks(100) {
            let width = if has_user { 8 } else { 7 };
            let values: Vec<String> = (0..batch.len())
                .map(|i| {
                    let b = i * width;
                    let cols: Vec<String> = (1..=width)
                        .map(|c| match c {
                            3 => format!("${}::jsonb", b + c),
                            5 => format!("${}::vector", b + c),
                            _ => format!("${}", b + c),
                        })
                        .collect();
                    format!("({}, now())", cols.join(", "))
                })
                .collect();
            let text = format!(
                "INSERT INTO {full} (id, name, meta_data, content, embedding, content_hash, content_id{user_col}, updated_at) \
                 VALUES {}",
                values.join(", ")
            );
            let mut q = sqlx::query(sql(text));
            for row in batch {
                if row.embedding.as_ref().is_some_and(|e| e.len() != self.dims) {
                    return Err(KnowledgeError::Embed(format!(
                        "a vector of {} dimensions for a vector({}) column",
                        row.embedding.as_ref().map_or(0, Vec::len),
                        self.dims
                    )));
                }
                q = q
                    .bind(&row.id)
                    .bind(&row.name)
                    .bind(sqlx::types::Json(&row.meta_data))
                    // Agno replaces NUL characters, which PostgreSQL text refuses.
                    .bind(row.content.replace('\0', "\u{fffd}"))
                    .bind(row.embedding.as_deref().map(literal))
                    .bind(&row.content_hash)
                    .bind(&row.content_id);
                if has_user {
                    q = q.bind(&row.user_id);
                }
            }
            q.execute(&mut *tx).await.map_err(store_err)?;
        }
        tx.commit().await.map_err(store_err)
    }

    async fn delete_by_content_id(&self, content_id: &str) -> Result<u64, KnowledgeError> {
        let done = sqlx::query(sql(format!("DELETE FROM {} WHERE content_id = $1", self.full())))
            .bind(content_id)
            .execute(&self.pool)
            .await
            .map_err(store_err)?;
        Ok(done.rows_affected())
    }

    async fn update_metadata(&self, content_id: &str, metadata: &Map<String, Value>) -> Result<u64, KnowledgeError> {
        // As Agno's PgVector: metadata merged, `filters` set to the new metadata.
        let done = sqlx::query(sql(format!(
            "UPDATE {} SET meta_data = COALESCE(meta_data, '{{}}'::jsonb) || $1, filters = $1 WHERE content_id = $2",
            self.full()
        )))
        .bind(sqlx::types::Json(metadata))
        .bind(content_id)
        .execute(&self.pool)
        .await
        .map_err(store_err)?;
        Ok(done.rows_affected())
    }

    async fn content_hash_exists(&self, content_hash: &str, user_id: Option<&str>) -> Result<bool, KnowledgeError> {
        let scope = if user_id.is_some() { " AND (user_id = $2 OR user_id IS NULL)" } else { "" };
        let mut q = sqlx::query(sql(format!("SELECT 1 FROM {} WHERE content_hash = $1{scope} LIMIT 1", self.full())))
            .bind(content_hash);
        if let Some(u) = user_id {
            q = q.bind(u);
        }
        Ok(q.fetch_optional(&self.pool).await.map_err(store_err)?.is_some())
    }

    async fn search(&self, q: VectorQuery<'_>) -> Result<Vec<Document>, KnowledgeError> {
        if q.user_id.is_some() && !self.has_user_column().await? {
            return Err(KnowledgeError::NeedsMigration { table: self.table.clone() });
        }
        let mut params = Params::default();
        let mut wheres: Vec<String> = Vec::new();
        if let Some(user) = q.user_id {
            let u = params.push(Param::Text(user.to_owned()));
            wheres.push(format!("(user_id = {u} OR user_id IS NULL)"));
        }
        if let Some(filter) = q.filter {
            wheres.push(condition(filter, &mut params));
        }
        let text_rank = |params: &mut Params| {
            let query = params.push(Param::Text(q.text.to_owned()));
            format!("ts_rank_cd(to_tsvector('english', content), websearch_to_tsquery('english', {query}))")
        };
        let score = match q.search_type {
            SearchType::Keyword => {
                let query = params.push(Param::Text(q.text.to_owned()));
                wheres.push(format!("to_tsvector('english', content) @@ websearch_to_tsquery('english', {query})"));
                let r = text_rank(&mut params);
                format!("({r}) / (({r}) + {RANK_K})")
            }
            SearchType::Vector | SearchType::Hybrid => {
                let Some(embedding) = q.embedding else {
                    return Err(KnowledgeError::Unsupported(format!(
                        "{} search needs an embedder: configure one, or search with search_type keyword",
                        q.search_type.as_str()
                    )));
                };
                let v = params.push(Param::Text(literal(embedding)));
                let vector = format!("GREATEST(0.0, 1 - (embedding <=> {v}::vector))");
                if q.search_type == SearchType::Vector {
                    vector
                } else {
                    let r = text_rank(&mut params);
                    let w = VECTOR_SCORE_WEIGHT;
                    format!("({w} * {vector}) + ({} * (({r}) / (({r}) + {RANK_K})))", 1.0 - w)
                }
            }
        };
        let order = if q.search_type == SearchType::Vector {
            // Ordered by distance so the vector index can serve it.
            let v = params.push(Param::Text(literal(q.embedding.unwrap_or_default())));
            format!("embedding <=> {v}::vector")
        } else {
            "score DESC".to_owned()
        };
        let limit = params.push(Param::Number(q.limit as f64));
        let where_sql = if wheres.is_empty() { String::new() } else { format!(" WHERE {}", wheres.join(" AND ")) };
        let text = format!(
            "SELECT id, name, meta_data, content, content_id, ({score})::float8 AS score FROM {}{where_sql} \
             ORDER BY {order} LIMIT ({limit})::bigint",
            self.full()
        );
        let mut tx = self.pool.begin().await.map_err(store_err)?;
        match self.index {
            VectorIndex::Hnsw { ef_search, .. } => {
                sqlx::query(sql(format!("SET LOCAL hnsw.ef_search = {ef_search}")))
                    .execute(&mut *tx)
                    .await
                    .map_err(store_err)?;
            }
            VectorIndex::Ivfflat { probes, .. } => {
                sqlx::query(sql(format!("SET LOCAL ivfflat.probes = {probes}")))
                    .execute(&mut *tx)
                    .await
                    .map_err(store_err)?;
            }
            VectorIndex::None => {}
        }
        let rows = params.bind(sqlx::query(sql(text))).fetch_all(&mut *tx).await.map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(rows
            .iter()
            .map(|r| Document {
                id: r.try_get("id").ok(),
                name: r.try_get("name").ok().flatten(),
                meta_data: r
                    .try_get::<Option<sqlx::types::Json<Map<String, Value>>>, _>("meta_data")
                    .ok()
                    .flatten()
                    .map(|j| j.0)
                    .unwrap_or_default(),
                content: r.try_get::<Option<String>, _>("content").ok().flatten().unwrap_or_default(),
                content_id: r.try_get("content_id").ok().flatten(),
                reranking_score: r.try_get("score").ok(),
            })
            .collect())
    }

    async fn optimize(&self) -> Result<(), KnowledgeError> {
        self.build_index().await
    }

    async fn migrate_user_id(&self) -> Result<bool, KnowledgeError> {
        if self.has_user_column().await? {
            return Ok(false);
        }
        let (t, full) = (&self.table, self.full());
        let mut tx = self.pool.begin().await.map_err(store_err)?;
        sqlx::query(sql(format!("ALTER TABLE {full} ADD COLUMN IF NOT EXISTS user_id VARCHAR")))
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        sqlx::query(sql(format!("CREATE INDEX IF NOT EXISTS \"idx_{t}_user_id\" ON {full} (user_id)")))
            .execute(&mut *tx)
            .await
            .map_err(store_err)?;
        tx.commit().await.map_err(store_err)?;
        Ok(true)
    }
}
