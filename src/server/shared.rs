//! The shared sidecar: one compactd for several clients (an agent in its
//! own process and the editor that shows its meter), over WebSocket.
//!
//! The dispatcher is stdio's: one state owner takes every connection's
//! messages in the order each connection sent them (`ConnectionEvent`s
//! from `transport::ws`), so one client's appends apply in order and each
//! request is answered once, on its own connection. What differs:
//!
//! - **Configuration is the server's**, resolved at start from the config
//!   files (the user's, then `compactd.toml` in the directory it started
//!   in) and fixed: a client's `initializationOptions` and
//!   `workspace/didChangeConfiguration` would change every other client's
//!   sessions, so they are ignored (and logged).
//! - **The LSP lifecycle is per connection**: each sends `initialize` (its
//!   own capabilities, e.g. progress tokens), `shutdown` and `exit`;
//!   `exit` closes that connection only. The process stops on SIGINT or
//!   SIGTERM, and then removes its discovery file.
//! - **Sessions are shared**: `conversation/open` of a session another
//!   connection has open gives the same session (no lock error: the lock
//!   is per process), and the opener subscribes to it.

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::sync::mpsc;

use super::clients::Clients;
use super::dispatcher::Dispatcher;
use super::options::{ConfigDirs, ServeOptions};
use crate::config::Config;
use crate::tokens;
use crate::transport::discovery::{self, Discovery};
use crate::transport::{guard, ws};

/// How the shared sidecar listens (the `serve --listen` flags).
#[derive(Debug, Clone)]
pub struct SharedOptions {
    pub listen: SocketAddr,
    pub allow_remote: bool,
    pub allowed_origins: Vec<String>,
    pub max_connections: usize,
    /// `None`: the default place (`transport::discovery`).
    pub discovery_file: Option<PathBuf>,
}

/// Serves until SIGINT or SIGTERM. Returns the exit code: 0 after a clean
/// stop, 1 when it could not start.
pub async fn serve(shared: SharedOptions, options: ServeOptions) -> i32 {
    match start(shared, options).await {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("compactd: {e}");
            1
        }
    }
}

async fn start(shared: SharedOptions, options: ServeOptions) -> Result<i32, String> {
    guard::check_listen_address(&shared.listen, shared.allow_remote)?;
    let discovery_path = discovery::resolve_path(shared.discovery_file.as_deref())
        .ok_or("no directory for the discovery file: pass --discovery-file")?;
    if let Some(running) = discovery::live(&discovery_path)
        .await
        .map_err(|e| format!("reading {}: {e}", discovery_path.display()))?
    {
        return Err(format!(
            "a shared compactd is already running at {} (pid {}, {}); stop it, or pass another --discovery-file",
            running.url,
            running.pid,
            discovery_path.display()
        ));
    }
    tokens::preload_in_background();
    let (mut server, mut job_results) = Dispatcher::new(options.clone(), Clients::new(true));
    let config = server_config(&options)?;
    let workspace = std::env::current_dir().ok();
    let dirs = ConfigDirs {
        workspace_root: workspace.clone(),
        user_dir: options.user_dir(),
    };
    server
        .state
        .configure(config, workspace.into_iter().collect(), dirs);
    let token = guard::new_token().map_err(|e| format!("no token: {e}"))?;
    let (events_tx, mut events) = mpsc::unbounded_channel();
    let listening = ws::listen(
        ws::WsOptions {
            addr: shared.listen,
            token: token.clone(),
            allowed_origins: shared.allowed_origins,
            max_connections: shared.max_connections,
            max_message_bytes: usize::try_from(server.state.config.max_frame_bytes)
                .unwrap_or(usize::MAX),
        },
        events_tx,
    )
    .await
    .map_err(|e| format!("cannot listen on {}: {e}", shared.listen))?;
    let found = Discovery {
        url: format!("ws://{}/", listening.local_addr),
        address: listening.local_addr.to_string(),
        token: token.clone(),
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    discovery::write(&discovery_path, &found)
        .map_err(|e| format!("cannot write {}: {e}", discovery_path.display()))?;
    announce(&found.url, &discovery_path);
    let stopping = stop_signal();
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            Some(event) = events.recv() => server.handle_event(event),
            Some(result) = job_results.recv() => server.finish_job(result),
            _ = &mut stopping => break,
        }
    }
    tracing::info!("stopping");
    server.state.compactions.abort_all();
    drop(server);
    listening.stop().await;
    discovery::remove_if_ours(&discovery_path, &token);
    Ok(0)
}

/// The configuration every client shares: the config files, no client's
/// options.
fn server_config(options: &ServeOptions) -> Result<Config, String> {
    let workspace = std::env::current_dir().ok();
    Config::resolve(None, workspace.as_deref(), options.user_dir().as_deref())
        .map_err(|e| format!("configuration: {e}"))
}

/// The address on stdout (one line, for scripts and tests); the token stays
/// in the discovery file.
fn announce(url: &str, discovery_path: &std::path::Path) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "compactd listening on {url}");
    let _ = writeln!(stdout, "discovery file: {}", discovery_path.display());
    let _ = stdout.flush();
    tracing::info!(
        "listening on {url}; discovery file {}",
        discovery_path.display()
    );
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
