//! `room-api`: serves the room service (`room-api` or `room-api serve`), applies the
//! configured storage's migrations (`room-api migrate`), prints a token for the configured
//! secret (`room-api token --user ID [--admin]`), or rebuilds a leaderboard from the durable
//! facts (`room-api boards rebuild --board B --period P [--room R] [--at DAY] [--apply]`).

use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use room_domain::UserId;
use room_node::{Role, Settings};

// Every request allocates (JSON, events, SQL rows) on both tokio workers and the SQLite
// writer; the system allocator spent about an eighth of the service's CPU in the benchmark.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "room-api", version, about = "The voice-chat room service")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Apply the configured storage's pending migrations, then exit.
    Migrate,
    /// Print a bearer token for a user, signed with the configured secret.
    Token {
        /// The user id (`sub`).
        #[arg(long)]
        user: String,
        /// Make the user a platform admin (`roles: ["admin"]`).
        #[arg(long)]
        admin: bool,
        /// Lifetime in seconds (default: `auth.token_ttl_secs`).
        #[arg(long)]
        ttl_secs: Option<u64>,
    },
    /// Leaderboards.
    Boards {
        #[command(subcommand)]
        command: BoardsCommand,
    },
}

#[derive(Subcommand)]
enum BoardsCommand {
    /// Rebuild one board from the durable facts the outbox holds and compare it with the live
    /// one; exits 1 when they differ and `--apply` was not given.
    Rebuild {
        /// `senders`, `receivers` or `rooms`.
        #[arg(long)]
        board: String,
        /// `day`, `week` or `month`.
        #[arg(long)]
        period: String,
        /// The room, for a room's board (senders or receivers).
        #[arg(long)]
        room: Option<String>,
        /// A day of the period, `YYYY-MM-DD` in the billing time zone (default: today).
        #[arg(long)]
        at: Option<String>,
        /// Replace the live board with the rebuilt one when they differ.
        #[arg(long)]
        apply: bool,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Command::Serve);
    // The tools use a part of the settings; the service checks all of them.
    let settings = match command {
        Command::Serve => Settings::load_default(),
        Command::Token { .. } | Command::Migrate | Command::Boards { .. } => {
            Settings::load_default_unchecked()
        }
    }
    .context("cannot load the configuration")?;
    match command {
        Command::Token {
            user,
            admin,
            ttl_secs,
        } => {
            let user = UserId::new(&user).context("bad --user")?;
            let ttl = Duration::from_secs(ttl_secs.unwrap_or(settings.auth.token_ttl_secs));
            let token = settings.auth.authenticator()?.mint(&user, admin, ttl)?;
            #[allow(clippy::print_stdout)] // The token is the command's output.
            {
                println!("{token}");
            }
            Ok(())
        }
        Command::Serve => room_node::run(settings, Role::Api),
        Command::Migrate => {
            runtime()?.block_on(room_node::Storage::migrate(&settings.storage))?;
            eprintln!("migrated {}", settings.storage.redacted_url());
            Ok(())
        }
        Command::Boards {
            command:
                BoardsCommand::Rebuild {
                    board,
                    period,
                    room,
                    at,
                    apply,
                },
        } => {
            let args = room_node::RebuildArgs {
                board,
                period,
                room,
                at,
                apply,
            };
            let (equal, report) =
                runtime()?.block_on(room_node::rebuild_board(&settings, &args))?;
            eprint!("{report}");
            if !equal {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// The runtime of the one-shot commands.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
