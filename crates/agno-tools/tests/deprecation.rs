//! Old `enable_*` toolkit flags keep working and log a deprecation warning naming the new flag.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use agno_tools::builtin;
use serde_json::json;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn enable_prefixed_flags_work_and_warn() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || sink.clone()).with_ansi(false).finish();
    tracing::subscriber::with_default(subscriber, || {
        let old = builtin::by_name("calculator", json!({"enable_factorial": false}).as_object().unwrap()).unwrap();
        assert!(!old.is_enabled("factorial"));
        let new = builtin::by_name("calculator", json!({"factorial": false}).as_object().unwrap()).unwrap();
        assert!(!new.is_enabled("factorial"));
        let shell = builtin::shell_tools().set_legacy("enable_run_shell_command", true).unwrap();
        assert!(shell.is_enabled("run_shell_command"));
        // A flag that is not the tool's name (Slack's `send_message` -> `send_slack_message`),
        // and one Agno renamed beyond the prefix (`enable_news` -> `search_news`).
        let slack =
            builtin::by_name("slack", json!({"token": "xoxb-t", "enable_send_message": true}).as_object().unwrap())
                .unwrap();
        assert!(slack.is_enabled("send_slack_message"));
        let search = json!({"provider": "searxng", "host": "http://127.0.0.1:9", "enable_news": false});
        let search = builtin::by_name("websearch", search.as_object().unwrap()).unwrap();
        assert!(!search.is_enabled("web_search_news") && search.is_enabled("web_search"));
    });
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("`enable_factorial` is deprecated since Agno v3; use `factorial` instead"), "{logs}");
    assert!(logs.contains("`enable_run_shell_command` is deprecated"), "{logs}");
    assert!(logs.contains("`enable_send_message` is deprecated since Agno v3; use `send_message` instead"), "{logs}");
    assert!(logs.contains("`enable_news` is deprecated since Agno v3; use `search_news` instead"), "{logs}");
    assert_eq!(logs.matches("deprecated").count(), 4, "the new spelling does not warn: {logs}");
}
