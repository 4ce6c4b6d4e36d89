//! The checks every store of versions passes (the billing policy's, the rocket's levels):
//! versions follow each other by compare-and-set, version 0 is none, of two puts of one
//! version one wins, the newest is current.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;

use super::fixtures::{expect_err, ok, same};
use crate::{Error, Result};

/// A store of versions as these checks see it.
#[async_trait]
pub(super) trait Versioned: Send + Sync + 'static {
    /// What a version holds.
    type Value: Clone + Debug + PartialEq + Send + Sync + 'static;
    /// A value of `version`, one of two (`variant` 0 or 1) that differ.
    fn value(version: u64, variant: u8) -> Self::Value;
    /// The value's version.
    fn version_of(value: &Self::Value) -> u64;
    /// The newest stored value.
    async fn newest(&self) -> Result<Option<Self::Value>>;
    /// Stores `value` as the next version.
    async fn put(&self, value: &Self::Value) -> Result<()>;
}

pub(super) async fn versions_follow_each_other<S: Versioned>(store: Arc<S>) {
    same(
        ok(store.newest().await, "newest"),
        None,
        "nothing before the first",
    );
    expect_err!(
        store.put(&S::value(2, 0)).await,
        Error::Conflict(_),
        "version 2 cannot come first"
    );
    expect_err!(
        store.put(&S::value(0, 0)).await,
        Error::Invalid(_),
        "version 0 is no version"
    );
    ok(store.put(&S::value(1, 0)).await, "put version 1");
    same(
        ok(store.newest().await, "newest"),
        Some(S::value(1, 0)),
        "version 1 is current, every field of it",
    );
    expect_err!(
        store.put(&S::value(1, 1)).await,
        Error::Conflict(_),
        "version 1 again: the stored one stays"
    );
    expect_err!(
        store.put(&S::value(3, 1)).await,
        Error::Conflict(_),
        "a version may not skip one"
    );
    ok(store.put(&S::value(2, 1)).await, "put version 2");
    same(
        ok(store.newest().await, "newest"),
        Some(S::value(2, 1)),
        "the newest is current",
    );
}

pub(super) async fn one_of_two_puts_of_a_version_wins<S: Versioned>(store: Arc<S>) {
    for version in 1..=10 {
        let racers: Vec<_> = [0, 1]
            .into_iter()
            .map(|variant| {
                let store = store.clone();
                tokio::spawn(async move { store.put(&S::value(version, variant)).await })
            })
            .collect();
        let mut won = 0;
        for racer in racers {
            match racer.await.expect("the racer ran") {
                Ok(()) => won += 1,
                Err(Error::Conflict(_)) => {}
                Err(other) => panic!("a put of version {version}: {other:?}"),
            }
        }
        same(won, 1, "exactly one of two puts of one version wins");
        same(
            ok(store.newest().await, "newest").map(|value| S::version_of(&value)),
            Some(version),
            "the winner's version is current",
        );
    }
}
