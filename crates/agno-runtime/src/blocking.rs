//! The blocking API's bridge: runs a future to completion from synchronous code.
//!
//! One shared multi-threaded runtime serves every blocking call. Called from inside an async
//! context, the future runs on a scoped helper thread instead, so `run()` never panics there.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Handle, Runtime};

fn runtime() -> Result<&'static Runtime, String> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("agno-blocking")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the tokio runtime for blocking runs: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// A handle to spawn on: the current runtime, else the shared one.
pub(crate) fn spawn_handle() -> Result<Handle, String> {
    Handle::try_current().or_else(|_| runtime().map(|rt| rt.handle().clone()))
}

/// Runs `fut` to completion.
pub(crate) fn block_on<F>(fut: F) -> Result<F::Output, String>
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = runtime()?;
    if Handle::try_current().is_ok() {
        std::thread::scope(|scope| {
            scope.spawn(|| rt.block_on(fut)).join().map_err(|_| "the run panicked on its helper thread".to_owned())
        })
    } else {
        Ok(rt.block_on(fut))
    }
}
