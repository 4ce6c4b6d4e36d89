//! Rebuilds the crate when a migration is added: `sqlx::migrate!` embeds the files it saw, and
//! cargo does not watch the directory by itself.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations/mysql");
}
