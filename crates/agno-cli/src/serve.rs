//! `agno serve`: the AgentOS HTTP server.

use std::net::{SocketAddr, ToSocketAddrs};

use agno_os::app::AgentOs;
use agno_os::config::{DbSection, OsConfig};
use anyhow::{Context, Result, bail};

use crate::cli::ServeArgs;

pub(crate) async fn serve(args: ServeArgs) -> Result<()> {
    let mut config = match &args.config {
        Some(path) => OsConfig::load(path)?,
        None => {
            eprintln!("no --config given: serving the demo agent `demo` on the offline test model");
            OsConfig::demo()
        }
    };
    if let Some(url) = &args.db {
        config.db = Some(DbSection { url: url.clone(), id: config.db.as_ref().and_then(|d| d.id.clone()) });
    }
    let host = args.host.clone().unwrap_or_else(|| config.os.host.clone());
    let port = args.port.unwrap_or(config.os.port);
    let addr: SocketAddr = (host.as_str(), port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve the address {host}:{port}"))?
        .next()
        .with_context(|| format!("{host}:{port} resolves to no address"))?;
    // The address served decides what is on by default (the control plane only on loopback).
    config.os.host.clone_from(&host);
    let os = AgentOs::from_config(&config).await?;
    let listener = agno_os::serve::bind(&os, addr, args.insecure).await?;
    let local = listener.local_addr().context("cannot read the bound address")?;
    if os.state.agents.is_empty() {
        bail!("the configuration declares no agents; add an [[agents]] table");
    }
    eprintln!(
        "AgentOS {} listening on http://{local} (auth: {}; {} agent(s): {}); docs at http://{local}/docs",
        os.state.os_id,
        os.state.auth.mode_name(),
        os.state.agents.len(),
        os.state.agents.iter().map(|a| a.agent.id().to_owned()).collect::<Vec<_>>().join(", ")
    );
    match &os.ui {
        Some(path) => eprintln!("control plane at http://{local}{path}/"),
        None => eprintln!("control plane off (on by default on loopback only; [ui] enabled = true serves it here)"),
    }
    agno_os::serve::serve(&os, listener, agno_os::serve::shutdown_signal()).await?;
    eprintln!("AgentOS stopped");
    Ok(())
}
