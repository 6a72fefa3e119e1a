//! One description per stored record: its table's columns in order, each with how it is stored
//! ([`Kind`]). The record's serde shape is the row Agno writes (the document family stores the
//! same shape as a JSON document), so a row reads back by decoding its columns as that document,
//! and a record writes by taking each column's value from its document. The insert and select
//! column lists, the bind loop and the row decoding of every described record come from here.

use agno_core::{Cell, DbError, DbErrorKind, DbResult};
use sea_query::{Condition, Expr, ExprTrait, InsertStatement, Query};
use sea_query_sqlx::SqlxBinder;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{Dialect, Row, SqlAdapter, changed, rows};

/// How a column is stored, and read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Text.
    Text,
    /// Text a user or a model wrote (an error, a name), stored as the database can hold it
    /// (see [`Dialect::storable`]).
    FreeText,
    /// An integer.
    Int,
    /// A boolean (an integer 0/1 where the database has no booleans).
    Bool,
    /// JSON of any shape.
    Json,
    /// A JSON object; anything else reads back as none.
    Object,
    /// A JSON list; anything else reads back as none.
    List,
}

/// One column of a described record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    /// The column's name, which is also the record's key in its serde shape.
    pub(crate) name: &'static str,
    kind: Kind,
    /// A SQL NULL reads as the kind's empty value (the field has no serde default).
    required: bool,
    /// Stored as JSON `null` rather than SQL NULL when the record has none (a NOT NULL JSON
    /// column, as SQLAlchemy stores `None` in it).
    json_null: bool,
}

impl Column {
    const fn of(name: &'static str, kind: Kind) -> Self {
        Self { name, kind, required: false, json_null: false }
    }

    /// A text column.
    pub(crate) const fn text(name: &'static str) -> Self {
        Self::of(name, Kind::Text)
    }

    /// A column of text a user or a model wrote.
    pub(crate) const fn free_text(name: &'static str) -> Self {
        Self::of(name, Kind::FreeText)
    }

    /// An integer column.
    pub(crate) const fn int(name: &'static str) -> Self {
        Self::of(name, Kind::Int)
    }

    /// A boolean column.
    pub(crate) const fn bool(name: &'static str) -> Self {
        Self::of(name, Kind::Bool)
    }

    /// A JSON column of any shape.
    pub(crate) const fn json(name: &'static str) -> Self {
        Self::of(name, Kind::Json)
    }

    /// A JSON column holding an object.
    pub(crate) const fn object(name: &'static str) -> Self {
        Self::of(name, Kind::Object)
    }

    /// A JSON column holding a list.
    pub(crate) const fn list(name: &'static str) -> Self {
        Self::of(name, Kind::List)
    }

    /// A column whose field the record always has: a NULL reads as empty text, 0, false, an
    /// empty object or list.
    pub(crate) const fn required(self) -> Self {
        Self { required: true, ..self }
    }

    /// A JSON column stored as JSON `null` when the record has no value.
    pub(crate) const fn json_null(self) -> Self {
        Self { json_null: true, ..self }
    }

    /// The value of this column in a row, as the record's document holds it; none for SQL NULL
    /// (and for a column the statement did not select).
    fn read<D: Dialect>(&self, row: &Row<D>) -> Result<Option<Value>, sqlx::Error> {
        let name = self.name;
        let read = match self.kind {
            Kind::Text | Kind::FreeText => D::read_text(row, name).map(|v| v.map(Value::String)),
            Kind::Int => D::read_int(row, name).map(|v| v.map(Value::from)),
            Kind::Bool => D::read_bool(row, name).map(|v| v.map(Value::Bool)),
            Kind::Json => D::read_json(row, name),
            Kind::Object => D::read_json(row, name).map(|v| v.filter(Value::is_object)),
            Kind::List => D::read_json(row, name).map(|v| v.filter(Value::is_array)),
        };
        match read {
            Err(sqlx::Error::ColumnNotFound(_)) => Ok(None),
            other => other,
        }
    }

    /// The kind's empty value, for a required column read as NULL.
    fn empty(&self) -> Value {
        match self.kind {
            Kind::Text | Kind::FreeText => Value::String(String::new()),
            Kind::Int => Value::from(0),
            Kind::Bool => Value::Bool(false),
            Kind::Json => Value::Null,
            Kind::Object => Value::Object(Map::new()),
            Kind::List => Value::Array(Vec::new()),
        }
    }

    /// The cell this column binds for a document's `value` (none: absent or null).
    fn cell<D: Dialect>(&self, value: Option<Value>) -> Cell {
        let value = value.filter(|v| !v.is_null());
        let text = |v: Option<Value>| {
            v.map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
        };
        match self.kind {
            Kind::Text => Cell::Text(text(value)),
            Kind::FreeText => Cell::Text(D::storable(text(value).as_deref())),
            Kind::Int => Cell::Int(value.as_ref().and_then(Value::as_i64)),
            Kind::Bool => Cell::Bool(value.as_ref().and_then(Value::as_bool).unwrap_or(false)),
            Kind::Json | Kind::Object | Kind::List if self.json_null => Cell::Json(Some(value.unwrap_or(Value::Null))),
            Kind::Json | Kind::Object | Kind::List => Cell::Json(value),
        }
    }
}

/// Describes a record stored one per row ([`SqlRecord`]): what one is called, its table's
/// default name, its key column, and its columns in table order, each `name: kind flags` where
/// the kind is a [`Column`] constructor (`text`, `free_text`, `int`, `bool`, `json`, `object`,
/// `list`) and the flags its modifiers (`required`, `json_null`).
///
/// ```ignore
/// sql_record! {
///     /// Doc comments go on the `impl`.
///     EvalRunRecord {
///         noun: "eval run", table: "agno_eval_runs", key: "run_id",
///         columns: [run_id: text required, eval_input: object json_null, created_at: int],
///     }
/// }
/// ```
macro_rules! sql_record {
    ($(#[$attr:meta])* $record:ty {
        noun: $noun:literal, table: $table:literal, key: $key:literal,
        columns: [$($name:ident: $kind:ident $($flag:ident)*),* $(,)?] $(,)?
    }) => {
        $(#[$attr])*
        impl $crate::sql::record::SqlRecord for $record {
            const NOUN: &'static str = $noun;
            const TABLE: &'static str = $table;
            const KEY: &'static str = $key;
            const COLUMNS: &'static [$crate::sql::record::Column] =
                &[$($crate::sql::record::Column::$kind(stringify!($name))$(.$flag())*),*];
        }
    };
}
pub(crate) use sql_record;

/// A record stored one per row of an SQL table, described once.
pub(crate) trait SqlRecord: Serialize + DeserializeOwned {
    /// What one record is called in messages (`approval`, `eval run`).
    const NOUN: &'static str;
    /// The table's default name, as read errors name it.
    const TABLE: &'static str;
    /// The key column.
    const KEY: &'static str;
    /// The columns, in table order.
    const COLUMNS: &'static [Column];

    /// The column names, in table order.
    fn names() -> impl Iterator<Item = &'static str> + Clone {
        Self::COLUMNS.iter().map(|c| c.name)
    }

    /// The record read back from a row holding its columns (a column the statement did not
    /// select reads as its field's default).
    ///
    /// # Errors
    /// A column cannot be read, a JSON column holds text that is not JSON, or the values do not
    /// make a record.
    fn from_row<D: Dialect>(row: &Row<D>) -> DbResult<Self> {
        let mut doc = Map::with_capacity(Self::COLUMNS.len());
        for column in Self::COLUMNS {
            let value = column
                .read::<D>(row)
                .map_err(|e| D::error(&format!("cannot read {}.{}", Self::TABLE, column.name), e))?;
            match value {
                Some(v) => doc.insert(column.name.to_owned(), v),
                None if column.required => doc.insert(column.name.to_owned(), column.empty()),
                None => None,
            };
        }
        let key = doc.get(Self::KEY).and_then(Value::as_str).unwrap_or("").to_owned();
        serde_json::from_value(Value::Object(doc)).map_err(|e| {
            DbError::new(DbErrorKind::Other, format!("stored {} {key} cannot be read: {e}", Self::NOUN)).with_source(e)
        })
    }

    /// The values of the columns for this record, in table order.
    ///
    /// # Errors
    /// The record does not encode as a JSON object.
    fn cells<D: Dialect>(&self) -> DbResult<Vec<Cell>> {
        let mut doc = crate::codec::to_doc(self)?;
        Ok(Self::COLUMNS.iter().map(|c| c.cell::<D>(doc.remove(c.name))).collect())
    }
}

/// The key among a record's `cells` (in [`SqlRecord::COLUMNS`] order); none when it has none.
pub(crate) fn key_in<R: SqlRecord>(cells: &[Cell]) -> Option<String> {
    let at = R::COLUMNS.iter().position(|c| c.name == R::KEY);
    match at.and_then(|at| cells.get(at)) {
        Some(Cell::Text(Some(key))) => Some(key.clone()),
        Some(Cell::Int(Some(key))) => Some(key.to_string()),
        _ => None,
    }
}

/// The insert of `record` into `table`, with every column, and the record's key.
///
/// # Errors
/// A value cannot be encoded.
pub(crate) fn insert_of<A: SqlAdapter, R: SqlRecord>(
    db: &A,
    table: &str,
    record: &R,
) -> DbResult<(String, InsertStatement)> {
    let cells = record.cells::<A::D>()?;
    let key = key_in::<R>(&cells).unwrap_or_default();
    let values = super::values::<A::D>(cells)?;
    let mut insert = Query::insert();
    insert
        .into_table(db.table_ref(table))
        .columns(R::names())
        .values(values)
        .map_err(|e| DbError::new(DbErrorKind::Other, format!("cannot build the insert of {} {key}: {e}", R::NOUN)))?;
    Ok((key, insert))
}

/// Inserts `record` as a new row of `table`; a record with its key exists already: a conflict
/// naming it.
///
/// # Errors
/// The record exists already, or the write fails.
pub(crate) async fn insert_new<A: SqlAdapter, R: SqlRecord>(db: &A, table: &str, record: &R) -> DbResult<()> {
    let (key, insert) = insert_of(db, table, record)?;
    let noun = R::NOUN;
    match changed(db, insert.build_sqlx(A::D::builder()), &format!("cannot write {noun} {key}")).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == DbErrorKind::Conflict => {
            Err(DbError::new(DbErrorKind::Conflict, format!("{noun} {key} already exists")).with_source(e))
        }
        Err(e) => Err(e),
    }
}

/// The record of `table` whose key is `key`, among the rows `visible` lets the caller see.
///
/// # Errors
/// The statement fails or the row cannot be read.
pub(crate) async fn get_one<A: SqlAdapter, R: SqlRecord>(
    db: &A,
    table: &str,
    key: &str,
    visible: Condition,
) -> DbResult<Option<R>> {
    let select = Query::select()
        .columns(R::names())
        .from(db.table_ref(table))
        .and_where(Expr::col(R::KEY).eq(key))
        .cond_where(visible)
        .build_sqlx(A::D::builder());
    let found = rows(db, select, &format!("cannot read {} {key}", R::NOUN)).await?;
    found.first().map(R::from_row::<A::D>).transpose()
}

/// The records of a listing's `rows` that decode; one that does not is left out with a warning
/// naming it (see [`crate::codec::readable`]).
pub(crate) fn readable<D: Dialect, R: SqlRecord>(rows: &[Row<D>]) -> Vec<R> {
    super::listing::readable::<D, R>(rows, R::NOUN, R::KEY, R::from_row::<D>)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use agno_core::{
        ApprovalRecord, CompactionRecord, ComponentConfig, ComponentLink, ComponentRecord, EvalRunRecord, KnowledgeRow,
        LearningRecord, Schedule, ScheduleRun, ServiceAccount, SpanRecord, TraceRecord, UserMemory,
    };
    use serde_json::json;

    use super::*;

    /// A record of `R` holding a value in every column (`given` where the column needs one its
    /// kind's sample is not), and the keys its document has beyond its columns.
    fn described<R: SqlRecord>(given: &[(&str, Value)]) -> Vec<String> {
        let mut doc = Map::new();
        for c in R::COLUMNS {
            let sample = match c.kind {
                Kind::Text | Kind::FreeText => json!("x"),
                Kind::Int => json!(7),
                Kind::Bool => json!(true),
                Kind::Json | Kind::Object => json!({"k": "v"}),
                Kind::List => json!(["v"]),
            };
            doc.insert(c.name.to_owned(), sample);
        }
        for (name, value) in given {
            doc.insert((*name).to_owned(), value.clone());
        }
        let record: R = serde_json::from_value(Value::Object(doc.clone()))
            .unwrap_or_else(|e| panic!("{} does not decode from its columns: {e}", R::NOUN));
        let written = crate::codec::to_doc(&record).unwrap();
        for c in R::COLUMNS {
            assert_eq!(
                written.get(c.name),
                doc.get(c.name),
                "{}.{} does not write back what it read",
                R::TABLE,
                c.name
            );
        }
        written.keys().filter(|k| !R::COLUMNS.iter().any(|c| c.name == k.as_str())).cloned().collect()
    }

    /// Every column of every described record is a key of the record's serde shape that reads and
    /// writes back unchanged, and no field is left without a column (but the counts a trace is
    /// given on read): a renamed field can never turn into a column silently written NULL.
    #[test]
    fn every_description_matches_its_record() {
        let none: Vec<String> = Vec::new();
        assert_eq!(described::<ApprovalRecord>(&[]), none);
        assert_eq!(described::<ServiceAccount>(&[]), none);
        assert_eq!(described::<CompactionRecord>(&[]), none);
        assert_eq!(described::<ComponentRecord>(&[]), none);
        assert_eq!(described::<ComponentConfig>(&[]), none);
        assert_eq!(described::<ComponentLink>(&[]), none);
        assert_eq!(described::<TraceRecord>(&[]), ["total_spans", "error_count"]);
        assert_eq!(described::<SpanRecord>(&[]), none);
        assert_eq!(described::<LearningRecord>(&[]), none);
        assert_eq!(described::<EvalRunRecord>(&[("eval_type", json!("accuracy"))]), none);
        assert_eq!(described::<KnowledgeRow>(&[]), none);
        assert_eq!(described::<Schedule>(&[("payload", json!({"k": "v"}))]), none);
        assert_eq!(described::<ScheduleRun>(&[]), none);
        assert_eq!(described::<UserMemory>(&[("memory", json!("text"))]), none);
    }

    /// A NULL in a required column reads as its kind's empty value, and a record with no value
    /// for a `json_null` column writes JSON `null`, not SQL NULL.
    #[test]
    fn required_and_json_null_columns() {
        let c = Column::object("eval_input").json_null();
        assert!(matches!(c.cell::<sqlx::Sqlite>(None), Cell::Json(Some(Value::Null))));
        assert!(matches!(Column::object("x").cell::<sqlx::Sqlite>(None), Cell::Json(None)));
        assert_eq!(Column::list("scopes").required().empty(), json!([]));
        assert_eq!(Column::text("id").required().empty(), json!(""));
    }
}
