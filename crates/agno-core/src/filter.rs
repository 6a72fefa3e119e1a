//! Agno's filter expression (`EQ`, `NEQ`, `GT`, `GTE`, `LT`, `LTE`, `CONTAINS`, `STARTSWITH`,
//! `IN`, `AND`, `OR`, `NOT`), written once over any record's fields: a record kind names its
//! fields ([`FilterField`]: traces' [`crate::TraceField`], sessions' [`crate::SessionField`]),
//! and the same [`FilterExpr`] is evaluated in process ([`FilterExpr::holds`]) or compiled to SQL by the
//! adapters (bound values, never spliced).

/// A field a [`FilterExpr`] can name: its column (and JSON key) name, and every field of its kind.
pub trait FilterField: Copy + Eq + std::fmt::Debug + Send + Sync + 'static {
    /// Every field, in the order of the kind's filter schema.
    const ALL: &'static [Self];

    /// The column (and JSON key) name.
    fn column(self) -> &'static str;

    /// The field named `column`.
    fn from_column(column: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|f| f.column() == column)
    }

    /// The names of every field, sorted (for the error naming an unknown one).
    fn allowed() -> Vec<&'static str> {
        let mut all: Vec<&'static str> = Self::ALL.iter().map(|f| f.column()).collect();
        all.sort_unstable();
        all
    }
}

/// A value a [`FilterExpr`] compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterValue {
    /// Text (ids, names, ISO-8601 times).
    Text(String),
    /// A number (durations, epoch seconds).
    Number(f64),
}

/// How a [`FilterExpr`] compares a field with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `EQ`.
    Eq,
    /// `NEQ`.
    Neq,
    /// `GT`.
    Gt,
    /// `GTE`.
    Gte,
    /// `LT`.
    Lt,
    /// `LTE`.
    Lte,
    /// `CONTAINS` (a substring, ignoring case, as Agno's converter matches).
    Contains,
    /// `STARTSWITH` (a prefix, ignoring case, as Agno's converter matches).
    StartsWith,
}

/// Agno's filter expression over the fields `F`.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterExpr<F> {
    /// A field compared with a value.
    Compare(F, CompareOp, FilterValue),
    /// A field equal to one of the values.
    In(F, Vec<FilterValue>),
    /// Every condition holds.
    And(Vec<FilterExpr<F>>),
    /// Some condition holds.
    Or(Vec<FilterExpr<F>>),
    /// The condition does not hold.
    Not(Box<FilterExpr<F>>),
}

impl<F: FilterField> FilterExpr<F> {
    /// Whether the record whose fields `value_of` reads matches, as SQL decides: a comparison
    /// with a missing field is unknown, `NOT` of unknown is unknown, and unknown does not match.
    pub fn holds(&self, value_of: &impl Fn(F) -> Option<FilterValue>) -> bool {
        self.truth(value_of) == Some(true)
    }

    /// SQL's three-valued truth (`None`: unknown, a comparison with NULL).
    fn truth(&self, value_of: &impl Fn(F) -> Option<FilterValue>) -> Option<bool> {
        match self {
            FilterExpr::Compare(field, op, value) => value_of(*field).map(|actual| compare(&actual, *op, value)),
            FilterExpr::In(field, values) => {
                value_of(*field).map(|actual| values.iter().any(|v| compare(&actual, CompareOp::Eq, v)))
            }
            FilterExpr::And(all) => all
                .iter()
                .try_fold(Some(true), |acc, f| match (acc, f.truth(value_of)) {
                    (_, Some(false)) => Err(()),
                    (Some(true), t) => Ok(t),
                    (None, _) => Ok(None),
                    (Some(false), _) => Err(()),
                })
                .unwrap_or(Some(false)),
            FilterExpr::Or(any) => any
                .iter()
                .try_fold(Some(false), |acc, f| match (acc, f.truth(value_of)) {
                    (_, Some(true)) => Err(()),
                    (Some(false), t) => Ok(t),
                    (None, _) => Ok(None),
                    (Some(true), _) => Err(()),
                })
                .unwrap_or(Some(true)),
            FilterExpr::Not(inner) => inner.truth(value_of).map(|t| !t),
        }
    }
}

fn compare(actual: &FilterValue, op: CompareOp, expected: &FilterValue) -> bool {
    use std::cmp::Ordering;
    let order = match (actual, expected) {
        (FilterValue::Number(a), FilterValue::Number(b)) => a.partial_cmp(b),
        (FilterValue::Text(a), FilterValue::Text(b)) => match op {
            CompareOp::Contains => return a.to_lowercase().contains(&b.to_lowercase()),
            CompareOp::StartsWith => return a.to_lowercase().starts_with(&b.to_lowercase()),
            _ => Some(a.as_str().cmp(b.as_str())),
        },
        (FilterValue::Number(a), FilterValue::Text(b)) => b.parse::<f64>().ok().and_then(|b| a.partial_cmp(&b)),
        (FilterValue::Text(_), FilterValue::Number(_)) => None,
    };
    let Some(order) = order else { return false };
    match op {
        CompareOp::Eq => order == Ordering::Equal,
        CompareOp::Neq => order != Ordering::Equal,
        CompareOp::Gt => order == Ordering::Greater,
        CompareOp::Gte => order != Ordering::Less,
        CompareOp::Lt => order == Ordering::Less,
        CompareOp::Lte => order != Ordering::Greater,
        CompareOp::Contains | CompareOp::StartsWith => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Field {
        Name,
        Owner,
    }

    impl FilterField for Field {
        const ALL: &'static [Field] = &[Field::Name, Field::Owner];
        fn column(self) -> &'static str {
            match self {
                Field::Name => "name",
                Field::Owner => "owner",
            }
        }
    }

    fn eq(field: Field, v: &str) -> FilterExpr<Field> {
        FilterExpr::Compare(field, CompareOp::Eq, FilterValue::Text(v.into()))
    }

    /// A record with a name and no owner, as SQL sees NULL: neither a comparison with the owner
    /// nor its negation matches; AND and OR follow SQL's three-valued logic.
    #[test]
    fn a_missing_field_is_unknown_as_in_sql() {
        let read = |f: Field| (f == Field::Name).then(|| FilterValue::Text("report".into()));
        assert!(eq(Field::Name, "report").holds(&read));
        assert!(!eq(Field::Owner, "alice").holds(&read));
        assert!(!FilterExpr::Not(Box::new(eq(Field::Owner, "alice"))).holds(&read));
        assert!(FilterExpr::Or(vec![eq(Field::Owner, "alice"), eq(Field::Name, "report")]).holds(&read));
        assert!(!FilterExpr::And(vec![eq(Field::Owner, "alice"), eq(Field::Name, "report")]).holds(&read));
        let unknown_and_false = FilterExpr::And(vec![eq(Field::Owner, "alice"), eq(Field::Name, "other")]);
        assert!(FilterExpr::Not(Box::new(unknown_and_false)).holds(&read), "NOT (unknown AND false) is true");
        let unknown_or_false = FilterExpr::Or(vec![eq(Field::Owner, "alice"), eq(Field::Name, "other")]);
        assert!(!FilterExpr::Not(Box::new(unknown_or_false)).holds(&read), "NOT (unknown OR false) is unknown");
        assert_eq!(Field::allowed(), ["name", "owner"]);
        assert_eq!(Field::from_column("owner"), Some(Field::Owner));
    }
}
