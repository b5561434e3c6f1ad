use std::process::ExitCode;

use clap::Parser;
use compactd::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_logging(cli.log_file.as_deref());
    match cli.command.unwrap_or(Command::Serve(Default::default())) {
        Command::Serve(args) => {
            // A server holds a log and a lock per open session.
            let limit = compactd::server::raise_descriptor_limit();
            tracing::debug!("open file descriptor limit: {limit}");
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let options = compactd::ServeOptions {
                user_config_dir: None,
                no_user_config: cli.no_user_config,
            };
            let code = runtime.block_on(async {
                match args.listen {
                    Some(listen) => {
                        let shared = compactd::server::shared::SharedOptions {
                            listen,
                            allow_remote: args.allow_remote,
                            allowed_origins: args.allow_origin,
                            max_connections: args.max_connections,
                            discovery_file: args.discovery_file,
                        };
                        compactd::server::shared::serve(shared, options).await
                    }
                    None => {
                        let stdin = tokio::io::BufReader::new(tokio::io::stdin());
                        compactd::serve(stdin, tokio::io::stdout(), options).await
                    }
                }
            });
            // tokio's stdin reader thread may still be blocked on read.
            runtime.shutdown_background();
            ExitCode::from(code as u8)
        }
        command => compactd::cli::run(command, cli.no_user_config),
    }
}

fn init_logging(log_file: Option<&std::path::Path>) {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_env("COMPACTD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false);
    let file = log_file.and_then(|path| {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        match file {
            Ok(file) => Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::sync::Mutex::new(file))
                    .with_ansi(false),
            ),
            Err(e) => {
                eprintln!("compactd: cannot open log file {}: {e}", path.display());
                None
            }
        }
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(file)
        .init();
}
