//! Integration tests of the built-in toolkits (calculator, http, file, shell), called through
//! `DynTool` as the runtime calls them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{call, options};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use agno_tools::builtin::{BuiltinError, by_name, calculator, file_tools, http_tools, shell_tools};
use agno_tools::{ToolError, ToolErrorKind, Toolkit};
use serde_json::{Map, Value, json};

/// Calls a tool that must succeed and parses its JSON result.
async fn call_ok(toolkit: &Toolkit, tool: &str, args: Value) -> Value {
    let text = call(toolkit, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool}({args}) failed: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool} returned non-JSON {text:?}: {e}"))
}

/// Calls a tool that must fail and returns the error.
async fn call_err(toolkit: &Toolkit, tool: &str, args: Value) -> ToolError {
    match call(toolkit, tool, args.clone()).await {
        Ok(out) => panic!("{tool}({args}) succeeded with {out}, expected an error"),
        Err(e) => e,
    }
}

fn names(toolkit: &Toolkit) -> Vec<String> {
    toolkit.tools().iter().map(|t| t.name().to_owned()).collect()
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "agno-tools-{label}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Calculator

#[tokio::test]
async fn calculator_results_match_agno_json() {
    let calc = calculator();
    let cases = [
        ("add", json!({"a": 2, "b": 3}), r#"{"operation":"addition","result":5.0}"#),
        ("subtract", json!({"a": 2, "b": 3.5}), r#"{"operation":"subtraction","result":-1.5}"#),
        ("multiply", json!({"a": 4, "b": 2.5}), r#"{"operation":"multiplication","result":10.0}"#),
        ("divide", json!({"a": 7, "b": 2}), r#"{"operation":"division","result":3.5}"#),
        ("exponentiate", json!({"a": 2, "b": 10}), r#"{"operation":"exponentiation","result":1024.0}"#),
        ("factorial", json!({"n": 5}), r#"{"operation":"factorial","result":120}"#),
        ("factorial", json!({"n": 0}), r#"{"operation":"factorial","result":1}"#),
        ("is_prime", json!({"n": 7}), r#"{"operation":"prime_check","result":true}"#),
        ("is_prime", json!({"n": 1}), r#"{"operation":"prime_check","result":false}"#),
        ("is_prime", json!({"n": -7}), r#"{"operation":"prime_check","result":false}"#),
        ("is_prime", json!({"n": 91}), r#"{"operation":"prime_check","result":false}"#),
        ("square_root", json!({"n": 16}), r#"{"operation":"square_root","result":4.0}"#),
    ];
    for (tool, args, expected) in cases {
        let out = call(&calc, tool, args.clone()).await.unwrap_or_else(|e| panic!("{tool}({args}): {e}"));
        assert_eq!(out, expected, "{tool}({args})");
    }
}

#[tokio::test]
async fn calculator_exposes_all_agno_tools_by_default() {
    assert_eq!(
        names(&calculator()),
        ["add", "subtract", "multiply", "divide", "exponentiate", "factorial", "is_prime", "square_root"]
    );
}

#[tokio::test]
async fn calculator_large_factorial_and_prime() {
    let calc = calculator();
    let out = call_ok(&calc, "factorial", json!({"n": 170})).await;
    assert!(out["result"].as_f64().unwrap() > 7.25e306);
    let out = call_ok(&calc, "is_prime", json!({"n": 9_223_372_036_854_775_783_i64})).await;
    assert_eq!(out["result"], true);
}

#[tokio::test]
async fn calculator_errors_are_tool_errors() {
    let calc = calculator();
    let cases = [
        ("divide", json!({"a": 1, "b": 0}), "division by zero is undefined"),
        ("factorial", json!({"n": -1}), "negative"),
        ("factorial", json!({"n": 171}), "too large"),
        ("square_root", json!({"n": -4}), "negative"),
        ("exponentiate", json!({"a": 10, "b": 400}), "not produce a finite number"),
        ("exponentiate", json!({"a": -8, "b": 0.5}), "not produce a finite number"),
        ("add", json!({"a": 1e308, "b": 1e308}), "addition"),
        ("multiply", json!({"a": 1e308, "b": -10}), "multiplication"),
        ("subtract", json!({"a": -1e308, "b": 1e308}), "subtraction"),
    ];
    for (tool, args, needle) in cases {
        let err = call_err(&calc, tool, args.clone()).await;
        assert_eq!(err.kind, ToolErrorKind::Execution, "{tool}({args})");
        assert!(err.message.contains(needle), "{tool}({args}): {}", err.message);
        assert_eq!(err.message, err.message.to_lowercase(), "error messages are lowercase");
    }
    assert_eq!(call_err(&calc, "divide", json!({"a": 1, "b": 0})).await.message, "division by zero is undefined");
}

#[tokio::test]
async fn calculator_bad_arguments_are_invalid_arguments() {
    let calc = calculator();
    for (tool, args) in [
        ("add", json!({"a": "two", "b": 3})),
        ("add", json!({"a": 1})),
        ("factorial", json!({"n": 2.5})),
        ("is_prime", json!({"n": "7"})),
    ] {
        assert_eq!(call_err(&calc, tool, args).await.kind, ToolErrorKind::InvalidArguments, "{tool}");
    }
}

#[tokio::test]
async fn calculator_schema_documents_arguments() {
    let calc = calculator();
    let tools = calc.tools();
    let add = tools.iter().find(|t| t.name() == "add").unwrap();
    let params = &add.definition().parameters;
    assert_eq!(params["required"], json!(["a", "b"]));
    assert!(params["properties"]["a"]["description"].is_string());
}

// ---------------------------------------------------------------------------------------------
// Toolkit lookup, flags and ids

#[test]
fn unknown_toolkit_is_an_error() {
    assert!(matches!(by_name("nope", &Map::new()), Err(BuiltinError::Unknown(name)) if name == "nope"));
}

#[test]
fn factorial_flag_hides_factorial_in_both_spellings() {
    for flag in ["factorial", "enable_factorial"] {
        let calc = by_name("calculator", &options(json!({ flag: false }))).unwrap();
        let exposed = names(&calc);
        assert!(!exposed.iter().any(|n| n == "factorial"), "{flag}: {exposed:?}");
        assert!(exposed.iter().any(|n| n == "add"), "{flag}: {exposed:?}");
    }
}

#[test]
fn unknown_flag_is_an_error() {
    assert!(matches!(by_name("calculator", &options(json!({"logarithm": true}))), Err(BuiltinError::Toolkit(_))));
}

#[test]
fn toolkit_ids_are_stable() {
    assert_eq!(calculator().id(), "calculator");
    assert_eq!(http_tools().id(), "http");
    assert_eq!(file_tools(std::env::temp_dir()).id(), "file");
    assert_eq!(shell_tools().id(), "shell");
    assert_eq!(Toolkit::new("My Tools_X").id(), "my-tools-x");
}

// ---------------------------------------------------------------------------------------------
// Shell

#[test]
fn shell_exposes_nothing_by_default() {
    let shell = shell_tools();
    assert!(shell.tools().is_empty());
    assert_eq!(shell.tool_names(), ["run_shell_command"]);
    assert!(shell.instructions().is_some_and(|i| i.contains("host")));
}

#[test]
fn shell_is_enabled_by_set_config_legacy_flag_and_all() {
    let expected = ["run_shell_command"];
    assert_eq!(names(&shell_tools().set("run_shell_command", true).unwrap()), expected);
    assert_eq!(names(&shell_tools().configure(&options(json!({"run_shell_command": true})), &[]).unwrap()), expected);
    assert_eq!(
        names(&shell_tools().configure(&options(json!({"enable_run_shell_command": true})), &[]).unwrap()),
        expected
    );
    assert_eq!(names(&shell_tools().configure(&options(json!({"all": true})), &[]).unwrap()), expected);
    assert_eq!(names(&by_name("shell", &options(json!({"run_shell_command": true}))).unwrap()), expected);
    assert!(by_name("shell", &Map::new()).unwrap().tools().is_empty());
}

#[cfg(unix)]
#[tokio::test]
async fn shell_runs_a_command_without_a_shell() {
    let shell = shell_tools().set("run_shell_command", true).unwrap();
    let out = call_ok(&shell, "run_shell_command", json!({"args": ["echo", "hi"]})).await;
    assert_eq!(out["exit_code"], 0);
    assert_eq!(out["stdout"].as_str().unwrap().trim(), "hi");
    assert_eq!(out["stderr"], "");

    // Arguments are not interpreted by a shell.
    let out = call_ok(&shell, "run_shell_command", json!({"args": ["echo", "$HOME", "*", "|", "x"]})).await;
    assert_eq!(out["stdout"].as_str().unwrap().trim(), "$HOME * | x");
}

#[cfg(unix)]
#[tokio::test]
async fn shell_reports_exit_codes_stderr_and_tails() {
    let shell = shell_tools().set("run_shell_command", true).unwrap();
    let out = call_ok(&shell, "run_shell_command", json!({"args": ["sh", "-c", "echo oops >&2; exit 3"]})).await;
    assert_eq!(out["exit_code"], 3);
    assert_eq!(out["stderr"].as_str().unwrap().trim(), "oops");

    let out = call_ok(
        &shell,
        "run_shell_command",
        json!({"args": ["sh", "-c", "for i in 1 2 3 4 5; do echo $i; done"], "tail": 2}),
    )
    .await;
    assert_eq!(out["stdout"], "4\n5\n");
}

#[tokio::test]
async fn shell_rejects_empty_args_and_names_missing_programs() {
    let shell = shell_tools().set("run_shell_command", true).unwrap();
    let err = call_err(&shell, "run_shell_command", json!({"args": []})).await;
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    let err = call_err(&shell, "run_shell_command", json!({"args": ["agno-no-such-program-xyz"]})).await;
    assert_eq!(err.kind, ToolErrorKind::Execution);
    assert!(err.message.contains("agno-no-such-program-xyz"), "{}", err.message);
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// Serves a few fixed routes on 127.0.0.1 and returns the base URL.
async fn serve() -> String {
    use axum::Router;
    use axum::http::{StatusCode, header};
    use axum::routing::get;

    let app = Router::new()
        .route("/hello", get(|| async { ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "héllo world") }))
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "no such page") }))
        // 3 MiB + 1 byte: an odd prefix so the 2 MiB cut falls inside a two-byte character.
        .route("/big", get(|| async { format!("a{}", "é".repeat(3 * 1024 * 1024 / 2)) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn fetch_url_returns_status_type_and_body() {
    let base = serve().await;
    let http = http_tools();
    let out = call_ok(&http, "fetch_url", json!({"url": format!("{base}/hello")})).await;
    assert_eq!(
        out,
        json!({"status": 200, "content_type": "text/plain; charset=utf-8", "body": "héllo world", "truncated": false})
    );

    let out = call_ok(&http, "fetch_url", json!({"url": format!("{base}/missing")})).await;
    assert_eq!(out["status"], 404);
    assert_eq!(out["body"], "no such page");
}

#[tokio::test]
async fn fetch_url_truncates_to_max_chars_at_char_boundaries() {
    let base = serve().await;
    let http = http_tools();
    let out = call_ok(&http, "fetch_url", json!({"url": format!("{base}/hello"), "max_chars": 2})).await;
    assert_eq!(out["body"], "hé");
    assert_eq!(out["truncated"], true);

    let out = call_ok(&http, "fetch_url", json!({"url": format!("{base}/big")})).await;
    assert_eq!(out["body"].as_str().unwrap().chars().count(), 20_000);
    assert_eq!(out["truncated"], true);
}

#[tokio::test]
async fn fetch_url_stops_reading_at_two_mib() {
    let base = serve().await;
    let http = http_tools();
    let out = call_ok(&http, "fetch_url", json!({"url": format!("{base}/big"), "max_chars": 100_000_000})).await;
    let body = out["body"].as_str().unwrap();
    assert!(body.len() <= 2 * 1024 * 1024 && body.len() > 2 * 1024 * 1024 - 4, "{} bytes", body.len());
    assert!(!body.contains('\u{FFFD}'), "a character cut in half was kept");
    assert_eq!(out["truncated"], true);
}

#[tokio::test]
async fn fetch_url_rejects_other_schemes() {
    let http = http_tools();
    for url in ["file:///etc/passwd", "ftp://example.com/x", "not a url"] {
        let err = call_err(&http, "fetch_url", json!({ "url": url })).await;
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{url}");
    }
}

#[tokio::test]
async fn fetch_url_connection_error_names_the_url() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/gone", listener.local_addr().unwrap());
    drop(listener);
    let err = call_err(&http_tools(), "fetch_url", json!({ "url": url })).await;
    assert_eq!(err.kind, ToolErrorKind::Execution);
    assert!(err.message.contains(&url), "{}", err.message);
}

// ---------------------------------------------------------------------------------------------
// Files

#[tokio::test]
async fn file_tools_save_read_list_and_search() {
    let dir = TempDir::new("files");
    let files = file_tools(dir.path().to_owned());

    let out = call_ok(&files, "save_file", json!({"path": "notes/a.txt", "contents": "hello"})).await;
    assert_eq!(out, json!({"path": "notes/a.txt", "bytes_written": 5}));
    call_ok(&files, "save_file", json!({"path": "b.md", "contents": "# b"})).await;
    call_ok(&files, "save_file", json!({"path": "./notes/deep/c.txt", "contents": "c"})).await;
    assert_eq!(std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap(), "hello");

    let out = call_ok(&files, "read_file", json!({"path": "notes/a.txt"})).await;
    assert_eq!(out, json!({"path": "notes/a.txt", "contents": "hello", "truncated": false}));
    let out = call_ok(&files, "read_file", json!({"path": "notes/a.txt", "max_chars": 2})).await;
    assert_eq!(out["contents"], "he");
    assert_eq!(out["truncated"], true);

    assert_eq!(call_ok(&files, "list_files", json!({})).await, json!(["b.md", "notes/"]));
    assert_eq!(call_ok(&files, "list_files", json!({"path": "notes"})).await, json!(["a.txt", "deep/"]));

    let out = call_ok(&files, "search_files", json!({"pattern": "*.txt"})).await;
    assert_eq!(out["files"], json!(["notes/a.txt", "notes/deep/c.txt"]));
    assert_eq!(out["matches_found"], 2);
    let out = call_ok(&files, "search_files", json!({"pattern": "notes/*.txt"})).await;
    assert_eq!(out["files"], json!(["notes/a.txt"]));
    let out = call_ok(&files, "search_files", json!({"pattern": "**/?.*"})).await;
    assert_eq!(out["files"], json!(["b.md", "notes/a.txt", "notes/deep/c.txt"]));
    let out = call_ok(&files, "search_files", json!({"pattern": "*.rs"})).await;
    assert_eq!(out["matches_found"], 0);
}

#[tokio::test]
async fn save_file_overwrites_unless_told_not_to() {
    let dir = TempDir::new("overwrite");
    let files = file_tools(dir.path().to_owned());
    call_ok(&files, "save_file", json!({"path": "a.txt", "contents": "one"})).await;
    call_ok(&files, "save_file", json!({"path": "a.txt", "contents": "two"})).await;
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "two");
    let err = call_err(&files, "save_file", json!({"path": "a.txt", "contents": "three", "overwrite": false})).await;
    assert!(err.message.contains("\"a.txt\""), "{}", err.message);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "two");
}

#[tokio::test]
async fn save_file_leaves_no_temporary_file() {
    let dir = TempDir::new("atomic");
    let files = file_tools(dir.path().to_owned());
    for contents in ["first", "second", "third"] {
        call_ok(&files, "save_file", json!({"path": "sub/out.txt", "contents": contents})).await;
    }
    let entries: Vec<String> = std::fs::read_dir(dir.path().join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["out.txt"]);
    assert_eq!(std::fs::read_to_string(dir.path().join("sub/out.txt")).unwrap(), "third");
}

#[tokio::test]
async fn file_errors_name_the_path() {
    let dir = TempDir::new("errors");
    let files = file_tools(dir.path().to_owned());
    let err = call_err(&files, "read_file", json!({"path": "missing.txt"})).await;
    assert_eq!(err.kind, ToolErrorKind::Execution);
    assert!(err.message.contains("\"missing.txt\""), "{}", err.message);
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let err = call_err(&files, "read_file", json!({"path": "d"})).await;
    assert!(err.message.contains("\"d\""), "{}", err.message);
    let err = call_err(&files, "list_files", json!({"path": "nowhere"})).await;
    assert!(err.message.contains("\"nowhere\""), "{}", err.message);
    std::fs::write(dir.path().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
    let err = call_err(&files, "read_file", json!({"path": "bin"})).await;
    assert!(err.message.contains("utf-8"), "{}", err.message);
    let err = call_err(&files, "search_files", json!({"pattern": ""})).await;
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
}

#[tokio::test]
async fn file_paths_cannot_escape_the_base() {
    let dir = TempDir::new("confine");
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
    let files = file_tools(base.clone()).set("delete_file", true).unwrap();

    for path in ["../outside.txt", "/etc/passwd", "a/../../outside.txt", "..", "./.."] {
        let err = call_err(&files, "read_file", json!({ "path": path })).await;
        assert_eq!(err.kind, ToolErrorKind::InvalidArguments, "{path}: {}", err.message);
        assert!(err.message.contains(&format!("{path:?}")), "{}", err.message);
    }
    let err = call_err(&files, "save_file", json!({"path": "../escaped.txt", "contents": "x"})).await;
    assert_eq!(err.kind, ToolErrorKind::InvalidArguments);
    assert!(!dir.path().join("escaped.txt").exists());
    call_err(&files, "save_file", json!({"path": "/tmp/agno-escaped.txt", "contents": "x"})).await;
    call_err(&files, "list_files", json!({"path": ".."})).await;
    call_err(&files, "delete_file", json!({"path": "../outside.txt"})).await;
    assert!(dir.path().join("outside.txt").exists());

    // `..` that stays inside is fine.
    call_ok(&files, "save_file", json!({"path": "a/../inside.txt", "contents": "ok"})).await;
    assert!(base.join("inside.txt").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_out_of_the_base_are_refused() {
    let dir = TempDir::new("symlink");
    let base = dir.path().join("base");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&base).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(&outside, base.join("out_dir")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), base.join("out_file")).unwrap();
    std::os::unix::fs::symlink(outside.join("nothing"), base.join("dangling")).unwrap();
    std::fs::write(base.join("real.txt"), "real").unwrap();
    std::os::unix::fs::symlink(base.join("real.txt"), base.join("in_file")).unwrap();
    let files = file_tools(base.clone()).set("delete_file", true).unwrap();

    for (tool, args) in [
        ("read_file", json!({"path": "out_dir/secret.txt"})),
        ("read_file", json!({"path": "out_file"})),
        ("list_files", json!({"path": "out_dir"})),
        ("save_file", json!({"path": "out_dir/new.txt", "contents": "x"})),
        ("save_file", json!({"path": "out_dir/sub/new.txt", "contents": "x"})),
        ("save_file", json!({"path": "out_file", "contents": "overwritten"})),
        ("save_file", json!({"path": "dangling", "contents": "x"})),
        ("save_file", json!({"path": "dangling/x.txt", "contents": "x"})),
        ("delete_file", json!({"path": "out_dir/secret.txt"})),
    ] {
        let err = call_err(&files, tool, args.clone()).await;
        assert!(err.message.contains("out_") || err.message.contains("dangling"), "{tool}({args}): {}", err.message);
    }
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "secret");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1, "nothing was written outside");

    // Search does not follow links out of the base.
    let out = call_ok(&files, "search_files", json!({"pattern": "secret*"})).await;
    assert_eq!(out["matches_found"], 0);

    // A link that stays inside the base works.
    let out = call_ok(&files, "read_file", json!({"path": "in_file"})).await;
    assert_eq!(out["contents"], "real");
}

#[tokio::test]
async fn delete_file_is_off_by_default() {
    let dir = TempDir::new("delete");
    let files = file_tools(dir.path().to_owned());
    assert_eq!(names(&files), ["read_file", "list_files", "search_files", "save_file"]);
    assert!(files.tool_names().contains(&"delete_file"));

    let files = files.set("delete_file", true).unwrap();
    assert!(names(&files).iter().any(|n| n == "delete_file"));
    call_ok(&files, "save_file", json!({"path": "gone.txt", "contents": "x"})).await;
    let out = call_ok(&files, "delete_file", json!({"path": "gone.txt"})).await;
    assert_eq!(out, json!({"path": "gone.txt", "deleted": true}));
    assert!(!dir.path().join("gone.txt").exists());
    let err = call_err(&files, "delete_file", json!({"path": "gone.txt"})).await;
    assert!(err.message.contains("\"gone.txt\""), "{}", err.message);
    call_err(&files, "delete_file", json!({"path": "."})).await;
    assert!(dir.path().exists());

    let by_config =
        by_name("file", &options(json!({"base_dir": dir.path().to_string_lossy(), "delete_file": true}))).unwrap();
    assert!(names(&by_config).iter().any(|n| n == "delete_file"));
}
