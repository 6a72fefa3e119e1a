//! Compatibility with Python Agno 3.1: a `RunOutput.to_dict()` written by Agno 3.1.10
//! (`fixtures/make_run_output.py`) reads into our types and writes back identical JSON, and
//! unknown fields survive a read-modify-write.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use agno_core::{PauseType, RunOutput, RunStatus};
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("fixtures/run_output_3_1_10.json");

#[test]
fn agno_run_output_round_trips_unchanged() {
    let original: Value = serde_json::from_str(FIXTURE).unwrap();
    let run: RunOutput = serde_json::from_value(original.clone()).unwrap();
    assert_eq!(run.status, RunStatus::Paused);
    assert_eq!(run.id(), "run-1");
    assert_eq!(run.tools_requiring_user_input().len(), 1);
    let req = &run.active_requirements()[0];
    assert_eq!(req.pause_type(), PauseType::UserInput);
    assert_eq!(run.messages()[2].tool_calls()[0].function.name, "add");
    let written = serde_json::to_value(&run).unwrap();
    assert_eq!(written, original, "written:\n{}", serde_json::to_string_pretty(&written).unwrap());
}

#[test]
fn unknown_fields_survive_read_modify_write() {
    let mut original: Value = serde_json::from_str(FIXTURE).unwrap();
    original["field_from_the_future"] = json!({"nested": [1, 2]});
    original["messages"][0]["checkpoint_status"] = json!("done");
    original["tools"][0]["new_tool_field"] = json!(true);
    let mut run: RunOutput = serde_json::from_value(original.clone()).unwrap();
    run.status = RunStatus::Completed;
    let written = serde_json::to_value(&run).unwrap();
    assert_eq!(written["field_from_the_future"], original["field_from_the_future"]);
    assert_eq!(written["messages"][0]["checkpoint_status"], "done");
    assert_eq!(written["tools"][0]["new_tool_field"], true);
    assert_eq!(written["status"], "COMPLETED");
}
