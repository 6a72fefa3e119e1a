//! The services tests use (PostgreSQL, MariaDB, Redis, Python Agno, a browser) and what happens
//! when one is missing: under `CI=true` the test fails (a check that cannot run must not pass);
//! elsewhere it is skipped, said on stderr and recorded in `AGNO_SKIP_LOG` (when set), so
//! `scripts/test` lists every skipped suite at the end of the run.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// True under CI: `CI` set to anything but an empty value, `0`, `false` or `no` (CI services set
/// `CI=true`, `CI=1`, `CI=yes`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false" | "no"))
}

/// Records that `what` cannot run here (or fails under CI, see [`under_ci`]), naming what it
/// needs.
///
/// # Panics
/// Under CI.
pub fn skip(what: &str, needs: &str) {
    let message = format!("{what} needs {needs}");
    assert!(!under_ci(), "{message} (CI is set: nothing may skip)");
    eprintln!("SKIPPED: {message}");
    if let Ok(path) = std::env::var("AGNO_SKIP_LOG")
        && let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        // One line per skip (what it needs, a tab, the check; `scripts/test` groups by the first),
        // written in one call: tests in other threads and processes append to the same file.
        let _ = file.write_all(format!("{needs}\t{what}\n").as_bytes());
    }
}

fn reachable(host_port: &str) -> bool {
    let addrs: Vec<SocketAddr> = host_port.to_socket_addrs().map(Iterator::collect).unwrap_or_default();
    addrs.iter().any(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
}

/// `host:port` of a database URL (`scheme://user@host:port/db?...`), else `default`.
fn host_port(url: Option<String>, default: &str) -> String {
    url.and_then(|u| {
        let rest = u.split_once("://")?.1;
        let authority = rest.split(['/', '?']).next()?;
        let host = authority.rsplit('@').next()?;
        Some(host.to_owned())
    })
    .filter(|h| h.contains(':'))
    .unwrap_or_else(|| default.to_owned())
}

fn service(what: &str, name: &str, addr: &str) -> bool {
    if reachable(addr) {
        return true;
    }
    skip(what, &format!("{name} on {addr} (scripts/test --all starts it)"));
    false
}

/// True when the test PostgreSQL (`AGNO_TEST_POSTGRES_URL`, default `127.0.0.1:5432`) answers;
/// otherwise `what` is skipped (fails under `CI=true`).
pub fn postgres(what: &str) -> bool {
    service(what, "PostgreSQL", &host_port(std::env::var("AGNO_TEST_POSTGRES_URL").ok(), "127.0.0.1:5432"))
}

/// The PostgreSQL with pgvector of the PgVector tests (`AGNO_TEST_PGVECTOR_URL`, default
/// `postgresql://postgres@127.0.0.1:5433/postgres`, started by `scripts/pgvector-server`).
pub fn pgvector_url() -> String {
    std::env::var("AGNO_TEST_PGVECTOR_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5433/postgres".to_owned())
}

/// True when the PostgreSQL of [`pgvector_url`] can serve the PgVector tests (see
/// [`pgvector_problem`]); otherwise `what` is skipped with the reason (fails under `CI=true`).
pub fn pgvector(what: &str) -> bool {
    match pgvector_problem(&pgvector_url()) {
        None => true,
        Some(why) => {
            skip(what, &format!("PostgreSQL with pgvector (scripts/pgvector-server): {why}"));
            false
        }
    }
}

/// Why the server at the PostgreSQL `url` cannot serve the PgVector tests, or `None` when it can:
/// it must answer, let us log in as PostgreSQL, and offer the `vector` extension. A port that is
/// open but serves something else (another service, a second cluster without pgvector) is named
/// as such here rather than failing every PgVector test with a driver error.
pub fn pgvector_problem(url: &str) -> Option<String> {
    let addr = host_port(Some(url.to_owned()), "127.0.0.1:5433");
    if !reachable(&addr) {
        return Some(format!("nothing answers on {addr}"));
    }
    let url = url.to_owned();
    // Its own thread and runtime: callers are plain checks, often inside an async test.
    let probe = std::thread::spawn(move || -> Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("no runtime for the probe: {e}"))?;
        runtime.block_on(async {
            use sqlx::Connection;
            let mut conn = tokio::time::timeout(Duration::from_secs(3), sqlx::PgConnection::connect(&url))
                .await
                .map_err(|_| format!("{addr} is not a PostgreSQL we can log into (no answer to a login in 3 s)"))?
                .map_err(|e| format!("{addr} is not a PostgreSQL we can log into ({e})"))?;
            let vector: Option<(String,)> =
                sqlx::query_as("SELECT name::text FROM pg_available_extensions WHERE name = $1")
                    .bind("vector")
                    .fetch_optional(&mut conn)
                    .await
                    .map_err(|e| format!("{addr} answered the extension query with an error ({e})"))?;
            let _ = conn.close().await;
            match vector {
                Some(_) => Ok(()),
                None => Err(format!("the PostgreSQL on {addr} has no `vector` extension (another cluster?)")),
            }
        })
    });
    probe.join().unwrap_or_else(|_| Err("the probe panicked".to_owned())).err()
}

/// True when the test MariaDB/MySQL (`AGNO_TEST_MYSQL_URL`, default `127.0.0.1:3306`) answers.
pub fn mariadb(what: &str) -> bool {
    service(what, "MariaDB", &host_port(std::env::var("AGNO_TEST_MYSQL_URL").ok(), "127.0.0.1:3306"))
}

/// A fresh database on the test MariaDB/MySQL (`AGNO_TEST_MYSQL_URL`, default root on the local
/// server), dropped when this goes out of scope; made with the `mysql` client.
#[derive(Debug)]
pub struct MySqlDatabase {
    /// Its URL (`mysql://root@127.0.0.1:3306/agno_<tag>_<id>`).
    pub url: String,
    name: String,
}

impl MySqlDatabase {
    /// A new database for the test `tag`, or `None` when MariaDB is not running here: the test is
    /// then skipped (and fails under `CI=true`).
    ///
    /// # Panics
    /// The `mysql` client cannot create it.
    pub fn new(tag: &str) -> Option<Self> {
        if !mariadb(&format!("test on MariaDB ({tag})")) {
            return None;
        }
        let name = format!("agno_{tag}_{}", &agno_core::new_id().replace('-', "")[..12]);
        let sql = format!("CREATE DATABASE `{name}`");
        let out = std::process::Command::new("mysql").args(["-h", "127.0.0.1", "-u", "root", "-e", &sql]).output();
        assert!(out.is_ok_and(|o| o.status.success()), "cannot create database {name} with the mysql client");
        let base =
            std::env::var("AGNO_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
        let server = base.rsplit_once('/').map_or(base.as_str(), |(server, _)| server);
        Some(Self { url: format!("{server}/{name}"), name })
    }
}

impl Drop for MySqlDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS `{}`", self.name);
        let _ = std::process::Command::new("mysql").args(["-h", "127.0.0.1", "-u", "root", "-e", &sql]).output();
    }
}

/// True when the test Redis (`AGNO_TEST_REDIS_URL`, default `127.0.0.1:6379`) answers.
pub fn redis(what: &str) -> bool {
    service(what, "Redis", &host_port(std::env::var("AGNO_TEST_REDIS_URL").ok(), "127.0.0.1:6379"))
}

/// True when the server behind the adapter named `adapter` (`postgres`, `mysql`, `redis`, or a
/// factory named after one, like `postgres_db`) answers; embedded adapters always can.
pub fn for_adapter(adapter: &str, what: &str) -> bool {
    if adapter.starts_with("postgres") {
        postgres(what)
    } else if adapter.starts_with("mysql") {
        mariadb(what)
    } else if adapter.starts_with("redis") {
        redis(what)
    } else {
        true
    }
}

/// True when `program` is on `PATH` (tests that start their own `redis-server`, say).
pub fn program(what: &str, program: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()));
    if !found {
        skip(what, &format!("the program {program} on PATH"));
    }
    found
}

/// The entry point (`dist/index.js`) of an MCP reference server from the npm registry, e.g.
/// `server-everything` (`@modelcontextprotocol/server-everything`), installed under
/// `$AGNO_MCP_SERVERS` (default `$HOME/.cache/agno-mcp-servers`, where `scripts/test --all`
/// installs them), with `node` on `PATH`; otherwise `None` and the test is skipped (failing under
/// `CI=true`).
pub fn mcp_reference_server(what: &str, package: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("AGNO_MCP_SERVERS")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/agno-mcp-servers")));
    let entry = dir.map(|d| d.join("node_modules/@modelcontextprotocol").join(package).join("dist/index.js"));
    match entry {
        Some(entry) if entry.exists() => program(what, "node").then_some(entry),
        _ => {
            skip(what, "the MCP reference servers from npm (scripts/test --all installs them)");
            None
        }
    }
}

/// The directory holding `node_modules/<package>` (a client from npm the tests drive the server
/// with): `$<env>` (default `$HOME/.cache/<dir>`, where `scripts/test --all` installs it), with
/// `node` on `PATH`; otherwise `None` and the test is skipped (failing under `CI=true`).
fn npm_client(what: &str, env: &str, dir: &str, package: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os(env)
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache").join(dir)));
    match found {
        Some(found) if found.join("node_modules").join(package).join("package.json").exists() => {
            program(what, "node").then_some(found)
        }
        _ => {
            skip(what, &format!("{package} from npm (scripts/test --all installs it)"));
            None
        }
    }
}

/// Where AG-UI's TypeScript client (`@ag-ui/client`) is installed (see [`npm_client`]).
pub fn agui_client(what: &str) -> Option<std::path::PathBuf> {
    npm_client(what, "AGNO_AGUI_CLIENT", "agno-agui-client", "@ag-ui/client")
}

/// Where the JavaScript A2A SDK (`@a2a-js/sdk`) is installed (see [`npm_client`]).
pub fn a2a_js(what: &str) -> Option<std::path::PathBuf> {
    npm_client(what, "AGNO_A2A_JS", "agno-a2a-js", "@a2a-js/sdk")
}

/// The two statements that drop a test's scratch PostgreSQL schema `name`: first ending the
/// sessions that hold locks on its tables, then the drop. A test server stopped while a worker's
/// transaction was open (its claim sent, the answer not read yet) leaves that transaction open
/// until its connection is used again, which, with the test's runtime blocked in this drop, is
/// never; a plain `DROP SCHEMA` then waits for its locks forever.
pub fn drop_schema_statements(name: &str) -> [String; 2] {
    let literal = name.replace('\'', "''");
    let ident = name.replace('"', "\"\"");
    [
        format!(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{literal}' AND l.pid <> pg_backend_pid()"
        ),
        format!("DROP SCHEMA IF EXISTS \"{ident}\" CASCADE"),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{host_port, pgvector_problem, postgres, redis};

    #[test]
    fn host_port_of_urls() {
        assert_eq!(
            host_port(Some("postgresql://postgres@db.example:6543/test?schema=x".into()), "d:1"),
            "db.example:6543"
        );
        assert_eq!(host_port(Some("mysql://root@127.0.0.1:3307/test".into()), "d:1"), "127.0.0.1:3307");
        assert_eq!(host_port(None, "127.0.0.1:5432"), "127.0.0.1:5432");
        assert_eq!(host_port(Some("postgresql://localhost/test".into()), "127.0.0.1:5432"), "127.0.0.1:5432");
    }

    // A port that is open but serves something else must be named, not taken for pgvector.

    #[test]
    fn pgvector_probe_names_a_closed_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let why = pgvector_problem(&format!("postgresql://postgres@127.0.0.1:{port}/postgres"));
        assert_eq!(why, Some(format!("nothing answers on 127.0.0.1:{port}")));
    }

    /// What the pgvector probe says of the service of `env` (default `default`) taken for it.
    fn probe_service(env: &str, default: &str) -> String {
        let addr = host_port(std::env::var(env).ok(), default);
        pgvector_problem(&format!("postgresql://postgres@{addr}/postgres")).unwrap_or_default()
    }

    #[test]
    fn pgvector_probe_names_a_service_that_is_not_postgres() {
        if redis("the pgvector probe against Redis") {
            let why = probe_service("AGNO_TEST_REDIS_URL", "127.0.0.1:6379");
            assert!(why.contains("is not a PostgreSQL we can log into"), "{why}");
        }
    }

    /// The test PostgreSQL is Debian's cluster, which has no pgvector package: a second cluster
    /// without the extension, as a stray one on the pgvector port would be. (The PgVector tests
    /// of agno-knowledge show the probe accepts scripts/pgvector-server: they fail under CI when
    /// it refuses.)
    #[test]
    fn pgvector_probe_names_a_postgres_without_the_extension() {
        if postgres("the pgvector probe against a PostgreSQL without pgvector") {
            let why = probe_service("AGNO_TEST_POSTGRES_URL", "127.0.0.1:5432");
            assert!(why.contains("has no `vector` extension"), "{why}");
        }
    }
}
