//! Finding the Python with Agno 3.1 that interop tests drive.

use std::sync::OnceLock;

/// The modules every interop test imports; a venv that lacks one (a `pip install` cut short) is
/// not one the tests can use.
const NEEDED: &str = "agno, fastapi, uvicorn, sqlalchemy, psycopg, pymysql, redis";

/// The Python interpreter with `agno==3.1.*` (and fastapi, sqlalchemy, psycopg, pymysql, redis) for
/// interop tests: `AGNO_PYTHON`, else the venv `.ci/run` creates (`$HOME/.cache/agno-py-3.1`).
///
/// Without one, or with one that cannot import what the tests need (a half-built venv), the
/// caller's check cannot run: under `CI=true` this panics (a check that cannot run must not
/// pass); elsewhere it prints that `what` is skipped, with the reason, and returns `None`.
///
/// # Panics
/// When no usable Python is found and `CI` is `true`.
pub fn agno_python(what: &str) -> Option<String> {
    static FOUND: OnceLock<Result<String, String>> = OnceLock::new();
    match FOUND.get_or_init(find) {
        Ok(python) => Some(python.clone()),
        Err(needs) => {
            crate::services::skip(what, needs);
            None
        }
    }
}

/// The interpreter, or what is missing.
fn find() -> Result<String, String> {
    let found = env_or_cache("AGNO_PYTHON", "agno-py-3.1/bin/python");
    let python = found.ok_or_else(|| {
        "a Python with Agno 3.1 (AGNO_PYTHON, or $HOME/.cache/agno-py-3.1, which scripts/test --all creates)".to_owned()
    })?;
    let check = std::process::Command::new(&python).args(["-c", &format!("import {NEEDED}")]).output();
    match check {
        Ok(out) if out.status.success() => Ok(python),
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr.lines().last().unwrap_or("").trim().to_owned();
            Err(format!(
                "a Python that imports {NEEDED}; {python} cannot ({last}): a half-built venv? delete it and run \
                 scripts/test --all"
            ))
        }
        Err(e) => Err(format!("a Python with Agno 3.1 that runs; {python} does not start ({e})")),
    }
}

/// The `phoenix` command of Arize Phoenix (an OpenTelemetry collector and trace viewer, from
/// PyPI) for the tests that export spans to a real collector: `AGNO_PHOENIX`, else the venv
/// `scripts/test --all` creates (`$HOME/.cache/agno-phoenix`).
///
/// Without one the caller's check cannot run: under `CI=true` this panics; elsewhere it prints
/// that `what` is skipped and returns `None`.
///
/// # Panics
/// When no Phoenix is found and `CI` is `true`.
pub fn phoenix(what: &str) -> Option<String> {
    let found = env_or_cache("AGNO_PHOENIX", "agno-phoenix/bin/phoenix");
    match found {
        Some(phoenix) => Some(phoenix),
        None => {
            crate::services::skip(
                what,
                "Arize Phoenix (AGNO_PHOENIX, or $HOME/.cache/agno-phoenix, which scripts/test --all creates)",
            );
            None
        }
    }
}

/// The Python with moto (an S3-protocol server) and boto3, for the remote knowledge source tests:
/// `AGNO_MOTO_PYTHON`, else the venv `scripts/test --all` creates (`$HOME/.cache/agno-moto`).
///
/// Without one the caller's check cannot run: under `CI=true` this panics; elsewhere it prints
/// that `what` is skipped and returns `None`.
///
/// # Panics
/// When no such Python is found and `CI` is `true`.
pub fn moto_python(what: &str) -> Option<String> {
    let found = env_or_cache("AGNO_MOTO_PYTHON", "agno-moto/bin/python");
    if found.is_none() {
        crate::services::skip(
            what,
            "moto (AGNO_MOTO_PYTHON, or $HOME/.cache/agno-moto, which scripts/test --all creates)",
        );
    }
    found
}

/// The Python with the official A2A SDK at 1.x (`a2a-sdk` 1.3.0, whose client speaks A2A v1.0)
/// for the A2A v1.0 interop tests: `AGNO_A2A_V1_PYTHON`, else the venv `scripts/test --all`
/// creates (`$HOME/.cache/agno-a2a-sdk-1`).
///
/// Without one the caller's check cannot run: under `CI=true` this panics; elsewhere it prints
/// that `what` is skipped and returns `None`.
///
/// # Panics
/// When no such Python is found and `CI` is `true`.
pub fn a2a_v1_python(what: &str) -> Option<String> {
    let found = env_or_cache("AGNO_A2A_V1_PYTHON", "agno-a2a-sdk-1/bin/python");
    let found = found.filter(|python| {
        std::process::Command::new(python)
            .args(["-c", "import a2a.client, httpx"])
            .output()
            .is_ok_and(|out| out.status.success())
    });
    if found.is_none() {
        crate::services::skip(
            what,
            "a Python with a2a-sdk 1.x (AGNO_A2A_V1_PYTHON, or $HOME/.cache/agno-a2a-sdk-1, which scripts/test --all creates)",
        );
    }
    found
}

/// A real browser for the browser tests: Debian's Chromium (`CHROMIUM`, else `/usr/bin/chromium`)
/// and the `playwright-core` that drives it (`AGNO_PLAYWRIGHT_CORE`, else
/// `$HOME/.cache/agno-browser/node_modules/playwright-core`, where `scripts/test --all` installs
/// it), as `(chromium, playwright_core)`.
///
/// Without both the caller's check cannot run: under `CI=true` this panics; elsewhere it prints
/// that `what` is skipped and returns `None`.
///
/// # Panics
/// When either is missing and `CI` is `true`.
pub fn browser(what: &str) -> Option<(String, String)> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    let playwright = env_or_cache("AGNO_PLAYWRIGHT_CORE", "agno-browser/node_modules/playwright-core");
    let missing = match (playwright, std::path::Path::new(&chromium).exists()) {
        (Some(playwright), true) => return Some((chromium, playwright)),
        (None, _) => {
            "playwright-core (npm install playwright-core in $HOME/.cache/agno-browser; scripts/test --all does)"
        }
        (Some(_), false) => "chromium (apt-get install chromium)",
    };
    crate::services::skip(what, missing);
    None
}

/// The program `var` names, else `$HOME/.cache/<under_cache>` when it exists (the venvs
/// `scripts/test --all` makes).
fn env_or_cache(var: &str, under_cache: &str) -> Option<String> {
    let from_env = std::env::var(var).ok().filter(|p| !p.is_empty());
    from_env.or_else(|| {
        let home = std::env::var("HOME").ok()?;
        let path = std::path::Path::new(&home).join(".cache").join(under_cache);
        path.exists().then(|| path.to_string_lossy().into_owned())
    })
}
