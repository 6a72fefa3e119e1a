//! Eval runs: which a listing shows and in which order.

use agno_core::{EvalFilterType, EvalQuery, EvalRunRecord};

/// True when `e` passes the listing's filters (owner, component ids, model, component kind,
/// eval types).
pub(crate) fn eval_matches(e: &EvalRunRecord, q: &EvalQuery) -> bool {
    let eq = |want: &Option<String>, have: &Option<String>| want.as_deref().is_none_or(|w| have.as_deref() == Some(w));
    eq(&q.user_id, &e.user_id)
        && eq(&q.agent_id, &e.agent_id)
        && eq(&q.team_id, &e.team_id)
        && eq(&q.workflow_id, &e.workflow_id)
        && eq(&q.model_id, &e.model_id)
        && q.filter_type.is_none_or(|f| match f {
            EvalFilterType::Agent => e.agent_id.is_some(),
            EvalFilterType::Team => e.team_id.is_some(),
            EvalFilterType::Workflow => e.workflow_id.is_some(),
        })
        && q.eval_types.as_ref().is_none_or(|types| types.contains(&e.eval_type))
}

/// The page of `records` the listing `q` asks for (by `created_at`, then `run_id`), with the
/// number of matching records.
pub(crate) fn page_evals(records: impl IntoIterator<Item = EvalRunRecord>, q: &EvalQuery) -> (Vec<EvalRunRecord>, u64) {
    let list = records.into_iter().filter(|e| eval_matches(e, q)).collect();
    let by_time =
        |a: &EvalRunRecord, b: &EvalRunRecord| a.created_at.cmp(&b.created_at).then_with(|| a.run_id.cmp(&b.run_id));
    super::sort_and_page(list, by_time, q.sort_order, q.limit, q.page)
}
