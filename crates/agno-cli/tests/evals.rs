//! `agno eval run FILE` as a process: a table of cases, exit status 1 when a case fails (0 when
//! all pass), results stored per case; a file with an unknown field names the field and line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use agno_testkit::{FakeProvider, Reply};
use common::{agno, scratch_dir};

fn run_eval(config: &std::path::Path, file: &std::path::Path) -> (Option<i32>, String, String) {
    let out = agno().args(["eval", "run", "--config"]).arg(config).arg(file).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const CASES: &str = r#"
[[cases]]
name = "greets"
agent = "geo"
input = "Say hello"
criteria = "The answer greets the user."

[[cases]]
name = "greets again"
agent = "geo"
input = "Say hello"
criteria = "The answer greets the user."
judge_mode = "numeric"
judge_threshold = 6
user_id = "ann"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agno_eval_run_prints_a_table_and_fails_on_a_failing_case() {
    let provider = FakeProvider::start().await.unwrap();
    let dir = scratch_dir("evals");
    let db = format!("sqlite://{}", dir.join("os.db").display());
    let config = dir.join("agentos.toml");
    std::fs::write(
        &config,
        format!(
            "[db]\nurl = \"{db}\"\n[[agents]]\nid = \"geo\"\n\
             model = {{ provider = \"openai-chat\", id = \"gpt-4o-mini\", base_url = \"{}\", api_key = \"sk\" }}\n",
            provider.base_url()
        ),
    )
    .unwrap();
    let cases = dir.join("evals.toml");
    std::fs::write(&cases, CASES).unwrap();

    // Both pass: the agent's answer then the judge's verdict, per case.
    provider.push_all([
        Reply::text("Hello there!"),
        Reply::text(r#"{"passed": true, "reason": "it greets"}"#),
        Reply::text("Hello again!"),
        Reply::text(r#"{"score": 8, "reason": "warm greeting"}"#),
    ]);
    let (code, out, err) = run_eval(&config, &cases);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("greets again") && out.contains("pass (8)") && out.contains("2 of 2 cases passed"), "{out}");

    // The numeric case scores under its threshold: exit status 1, the reason shown.
    provider.push_all([
        Reply::text("Hello there!"),
        Reply::text(r#"{"passed": true, "reason": "it greets"}"#),
        Reply::text("Go away."),
        Reply::text(r#"{"score": 2, "reason": "no greeting at all"}"#),
    ]);
    let (code, out, err) = run_eval(&config, &cases);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("fail (2)") && out.contains("FAIL") && out.contains("no greeting at all"), "{out}");
    assert!(out.contains("1 of 2 cases passed") && err.contains("1 of 2 eval cases failed"), "{out}{err}");

    // Stored: four judged runs, Ann's two under her name.
    let store = agno::db::open_ready(&db).await.unwrap();
    let (all, _) = store.get_eval_runs(&agno::core::EvalQuery::default()).await.unwrap();
    assert_eq!(all.len(), 4);
    let anns = all.iter().filter(|r| r.user_id.as_deref() == Some("ann")).count();
    assert_eq!(anns, 2);

    // A file with a typo names the field and its line; nothing runs.
    let before = provider.request_count();
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, "[[cases]]\nname = \"x\"\nagent = \"geo\"\ninput = \"hi\"\ncritera = \"greets\"\n").unwrap();
    let (code, _, err) = run_eval(&config, &typo);
    assert_eq!(code, Some(1));
    assert!(err.contains("unknown field `critera`") && err.contains("line 5"), "{err}");
    let yaml = dir.join("typo.yaml");
    std::fs::write(&yaml, "cases:\n  - name: x\n    agent: geo\n    input: hi\n    expected_tools: [add]\n").unwrap();
    let (code, _, err) = run_eval(&config, &yaml);
    assert_eq!(code, Some(1));
    assert!(err.contains("unknown field `expected_tools`") && err.contains("line 5"), "{err}");
    let none = dir.join("none.toml");
    std::fs::write(&none, "[[cases]]\nname = \"x\"\nagent = \"geo\"\ninput = \"hi\"\n").unwrap();
    let (code, _, err) = run_eval(&config, &none);
    assert_eq!(code, Some(1));
    assert!(err.contains("case \"x\" has no checks"), "{err}");
    assert_eq!(provider.request_count(), before, "nothing ran");
}
