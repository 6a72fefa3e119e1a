//! Agno's filter expression ([`agno_core::FilterExpr`]) as a SQL condition, written once for every
//! record kind that is searched (traces, sessions): a kind says how each field is read and bound
//! ([`SqlField`]); the values are always bound, never spliced.

use agno_core::{CompareOp, FilterExpr, FilterField, FilterValue};
use sea_query::{Condition, Expr, ExprTrait, Func, LikeExpr};

use super::Dialect;

/// A filter field as the SQL adapters read and bind it.
pub(crate) trait SqlField: FilterField {
    /// The expression the field is read by (its column, by default).
    fn expr<D: Dialect>(self) -> Expr {
        Expr::col(self.column())
    }

    /// `value` as the field's column binds it.
    fn bound(self, value: &FilterValue) -> sea_query::Value;
}

/// `field` compared as `op` says with `value`, as Agno's filter converter compares: `CONTAINS`
/// and `STARTSWITH` ignore case and match `%`, `_` and `/` literally.
fn compared<D: Dialect, F: SqlField>(field: F, op: CompareOp, value: &FilterValue) -> Expr {
    let read = field.expr::<D>();
    let like = |pattern: String| Expr::expr(Func::lower(read.clone())).like(LikeExpr::new(pattern).escape('/'));
    let escaped = || {
        let text = match value {
            FilterValue::Text(t) => t.to_lowercase(),
            FilterValue::Number(n) => n.to_string(),
        };
        text.replace('/', "//").replace('%', "/%").replace('_', "/_")
    };
    let v = || Expr::val(field.bound(value));
    match op {
        CompareOp::Eq => read.eq(v()),
        CompareOp::Neq => read.ne(v()),
        CompareOp::Gt => read.gt(v()),
        CompareOp::Gte => read.gte(v()),
        CompareOp::Lt => read.lt(v()),
        CompareOp::Lte => read.lte(v()),
        CompareOp::Contains => like(format!("%{}%", escaped())),
        CompareOp::StartsWith => like(format!("{}%", escaped())),
    }
}

/// `filter` as a condition.
pub(crate) fn condition<D: Dialect, F: SqlField>(filter: &FilterExpr<F>) -> Condition {
    match filter {
        FilterExpr::Compare(field, op, value) => Condition::all().add(compared::<D, F>(*field, *op, value)),
        FilterExpr::In(_, values) if values.is_empty() => Condition::all().add(Expr::val(1).eq(0)),
        FilterExpr::In(field, values) => {
            Condition::all().add(field.expr::<D>().is_in(values.iter().map(|v| field.bound(v))))
        }
        FilterExpr::And(all) => all.iter().fold(Condition::all(), |c, f| c.add(condition::<D, F>(f))),
        FilterExpr::Or(any) => any.iter().fold(Condition::any(), |c, f| c.add(condition::<D, F>(f))),
        FilterExpr::Not(inner) => condition::<D, F>(inner).not(),
    }
}

impl SqlField for agno_core::TraceField {
    /// `duration_ms` as an integer, the other fields as text.
    fn bound(self, value: &FilterValue) -> sea_query::Value {
        match value {
            FilterValue::Text(t) => t.clone().into(),
            #[allow(clippy::cast_possible_truncation)]
            FilterValue::Number(n) if self == agno_core::TraceField::DurationMs => (n.round() as i64).into(),
            FilterValue::Number(n) => n.to_string().into(),
        }
    }
}

impl SqlField for agno_core::SessionField {
    /// The name is read from `session_data`; the rest are columns.
    fn expr<D: Dialect>(self) -> Expr {
        match self {
            agno_core::SessionField::SessionName => Expr::cust(D::json_text("session_data", "session_name")),
            other => Expr::col(other.column()),
        }
    }

    /// The times as integers (epoch seconds), the other fields as text.
    fn bound(self, value: &FilterValue) -> sea_query::Value {
        match value {
            #[allow(clippy::cast_possible_truncation)]
            FilterValue::Number(n) if self.is_time() => (n.floor() as i64).into(),
            FilterValue::Text(t) => t.clone().into(),
            FilterValue::Number(n) => n.to_string().into(),
        }
    }
}
