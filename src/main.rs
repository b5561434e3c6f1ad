use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use compactd::config::Config;

/// compactd keeps LLM coding conversations inside their context window.
///
/// Without a command it serves JSON-RPC (LSP framing) on stdin/stdout.
#[derive(Parser)]
#[command(name = "compactd", version, about, long_about = None)]
struct Cli {
    /// Also write logs to this file (logs always go to stderr, never stdout).
    #[arg(long, global = true, env = "COMPACTD_LOG_FILE")]
    log_file: Option<PathBuf>,
    /// Ignore the user-level compactd.toml.
    #[arg(long, global = true)]
    no_user_config: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve JSON-RPC over stdio (the default).
    Serve,
    /// Compact a conversation file offline and print the summary.
    Compact {
        /// A compactd session log (JSONL) or a JSON array of OpenAI-style chat messages.
        file: PathBuf,
        /// Newest tokens to keep verbatim.
        #[arg(long)]
        keep_recent_tokens: Option<u64>,
        /// Steer what the summary focuses on.
        #[arg(long)]
        instructions: Option<String>,
        /// Print the result object as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let options = compactd::ServeOptions {
                user_config_dir: None,
                no_user_config: cli.no_user_config,
            };
            let code = runtime.block_on(async {
                let stdin = tokio::io::BufReader::new(tokio::io::stdin());
                compactd::serve(stdin, tokio::io::stdout(), options).await
            });
            // tokio's stdin reader thread may still be blocked on read.
            runtime.shutdown_background();
            ExitCode::from(code as u8)
        }
        Command::Compact {
            file,
            keep_recent_tokens,
            instructions,
            json,
        } => {
            let user_dir = if cli.no_user_config {
                None
            } else {
                Config::user_config_dir()
            };
            let cwd = std::env::current_dir().ok();
            let config = match Config::resolve(None, cwd.as_deref(), user_dir.as_deref()) {
                Ok(config) => config,
                Err(e) => {
                    eprintln!("compactd: {e}");
                    return ExitCode::from(1);
                }
            };
            let args = compactd::cli::CompactArgs {
                file,
                keep_recent_tokens,
                instructions,
                json,
            };
            match runtime.block_on(compactd::cli::compact(&args, &config)) {
                Ok(outcome) => {
                    if args.json {
                        println!(
                            "{}",
                            serde_json::to_string_pretty(&outcome.result).expect("serializes")
                        );
                    } else if !outcome.result.compacted {
                        println!(
                            "{}",
                            outcome
                                .result
                                .reason
                                .as_deref()
                                .unwrap_or("nothing to compact")
                        );
                    } else {
                        println!("{}\n", outcome.result.summary);
                        println!("{}", compactd::cli::summary_line(&outcome));
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("compactd: {e}");
                    ExitCode::from(1)
                }
            }
        }
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
