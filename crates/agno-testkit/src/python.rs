//! Finding the Python with Agno 3.1 that interop tests drive.

/// The Python interpreter with `agno==3.1.*` (and fastapi, sqlalchemy, psycopg, pymysql, redis) for
/// interop tests: `AGNO_PYTHON`, else the venv `.ci/run` creates (`$HOME/.cache/agno-py-3.1`).
///
/// Without one, the caller's check cannot run: under `CI=true` this panics (a check that cannot
/// run must not pass); elsewhere it prints that `what` is skipped and returns `None`.
///
/// # Panics
/// When no Python is found and `CI` is `true`.
pub fn agno_python(what: &str) -> Option<String> {
    let from_env = std::env::var("AGNO_PYTHON").ok().filter(|p| !p.is_empty());
    let venv = std::env::var("HOME")
        .ok()
        .map(|home| std::path::Path::new(&home).join(".cache/agno-py-3.1/bin/python"))
        .filter(|p| p.exists())
        .map(|p| p.to_string_lossy().into_owned());
    let found = from_env.or(venv);
    if found.is_none() {
        crate::services::skip(
            what,
            "a Python with Agno 3.1 (AGNO_PYTHON, or $HOME/.cache/agno-py-3.1, which scripts/test --all creates)",
        );
    }
    found
}
