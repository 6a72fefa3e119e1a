//! sea-query's SQLite builder with identifiers quoted in backticks.
//!
//! SQLite reads a double-quoted identifier that names no column as a string literal (its
//! "double-quoted string" misfeature, on in the bundled library). A statement over a table of an
//! older schema would then read the column's *name* as its value (`user_id` = "user_id") instead
//! of failing with "no such column", which the adapter reports as a schema to migrate. Backticks
//! are identifiers only, so a missing column is an error, as on the other databases.

use std::fmt::Write;

use sea_query::{
    BinOper, EscapeBuilder, ExplainStatement, Expr, LockClause, OperLeftAssocDecider, PrecedenceDecider, QueryBuilder,
    Quote, QuotedBuilder, SelectInto, SelectStatement, SqlWriter, SqliteQueryBuilder, SubQueryOper, SubQueryStatement,
    TableRefBuilder, UnionType, Value, WithClause,
};

/// [`SqliteQueryBuilder`], quoting identifiers in backticks (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SqliteBuilder;

impl QuotedBuilder for SqliteBuilder {
    fn quote(&self) -> Quote {
        Quote::new(b'`')
    }
}

impl EscapeBuilder for SqliteBuilder {
    fn write_escaped(&self, buffer: &mut impl Write, string: &str) {
        SqliteQueryBuilder.write_escaped(buffer, string);
    }
    fn unescape_string(&self, string: &str) -> String {
        SqliteQueryBuilder.unescape_string(string)
    }
}

impl TableRefBuilder for SqliteBuilder {}

impl PrecedenceDecider for SqliteBuilder {
    fn inner_expr_well_known_greater_precedence(&self, inner: &Expr, outer_oper: &sea_query::Oper) -> bool {
        SqliteQueryBuilder.inner_expr_well_known_greater_precedence(inner, outer_oper)
    }
}

impl OperLeftAssocDecider for SqliteBuilder {
    fn well_known_left_associative(&self, op: &BinOper) -> bool {
        SqliteQueryBuilder.well_known_left_associative(op)
    }
}

/// The methods SQLite's builder has of its own that these stores can reach, as SQLite's builder
/// writes them (row locks and `SELECT INTO` left out; NULL placement is never asked of SQLite).
impl QueryBuilder for SqliteBuilder {
    fn prepare_select_lock(&self, lock: &LockClause, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.prepare_select_lock(lock, sql);
    }
    fn prepare_select_into(&self, into: &SelectInto, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.prepare_select_into(into, sql);
    }
    fn prepare_sub_query_oper(&self, oper: &SubQueryOper, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.prepare_sub_query_oper(oper, sql);
    }
    fn prepare_bin_oper(&self, bin_oper: &BinOper, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.prepare_bin_oper(bin_oper, sql);
    }
    // SQLite takes no parentheses around the members of a compound select.
    fn prepare_union_statement(&self, union_type: UnionType, select: &SelectStatement, sql: &mut impl SqlWriter) {
        let keyword = match union_type {
            UnionType::Intersect => " INTERSECT ",
            UnionType::Distinct => " UNION ",
            UnionType::Except => " EXCEPT ",
            // `UnionType::All`, and any kind a later sea-query adds (the non-exhaustive enum).
            _ => " UNION ALL ",
        };
        let _ = sql.write_str(keyword);
        self.prepare_select_statement(select, sql);
    }
    fn prepare_query_statement(&self, query: &SubQueryStatement, sql: &mut impl SqlWriter) {
        match query {
            SubQueryStatement::SelectStatement(s) => self.prepare_select_statement(s, sql),
            SubQueryStatement::InsertStatement(s) => self.prepare_insert_statement(s, sql),
            SubQueryStatement::UpdateStatement(s) => self.prepare_update_statement(s, sql),
            SubQueryStatement::DeleteStatement(s) => self.prepare_delete_statement(s, sql),
            SubQueryStatement::WithStatement(s) => self.prepare_with_query(s, sql),
        }
    }
    fn prepare_explain_statement(&self, explain: &ExplainStatement, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.prepare_explain_statement(explain, sql);
    }
    fn prepare_with_clause_recursive_options(&self, with: &WithClause, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.prepare_with_clause_recursive_options(with, sql);
    }
    fn prepare_value(&self, value: Value, sql: &mut impl SqlWriter) {
        sql.push_param(value, self as _);
    }
    fn greatest_function(&self) -> &str {
        SqliteQueryBuilder.greatest_function()
    }
    fn least_function(&self) -> &str {
        SqliteQueryBuilder.least_function()
    }
    fn char_length_function(&self) -> &str {
        SqliteQueryBuilder.char_length_function()
    }
    fn insert_default_values(&self, rows: u32, sql: &mut impl SqlWriter) {
        SqliteQueryBuilder.insert_default_values(rows, sql);
    }
}

#[cfg(test)]
mod tests {
    use sea_query::{Expr, ExprTrait, Query};

    use super::SqliteBuilder;

    #[test]
    fn identifiers_are_quoted_in_backticks_and_values_bound() {
        let (sql, values) = Query::select()
            .column("user_id")
            .from("agno_sessions")
            .and_where(Expr::col("session_id").eq("s\"1"))
            .build(SqliteBuilder);
        assert_eq!(sql, "SELECT `user_id` FROM `agno_sessions` WHERE `session_id` = ?");
        assert_eq!(values.0.len(), 1);
    }
}
