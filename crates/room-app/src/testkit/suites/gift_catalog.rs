//! The conformance suite of [`GiftCatalog`]: put creates or replaces, list is by id.

use std::future::Future;
use std::sync::Arc;

use room_domain::Coins;

use super::fixtures::{gift_id, ok, same};
use crate::ports::{CatalogGift, GiftCatalog};

fn gift(id: &str, price: i64) -> CatalogGift {
    CatalogGift {
        gift_id: gift_id(id),
        name: format!("Gift {id}"),
        price: Coins(price),
        heat: price * 2,
        fuel: price * 3,
        lucky: price % 2 == 0,
        enabled: true,
    }
}

/// Runs every [`GiftCatalog`] check, each against a fresh store from `fresh`.
pub async fn gift_catalog_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: GiftCatalog + 'static,
{
    put_get_list_and_replace(fresh().await).await;
}

async fn put_get_list_and_replace<S: GiftCatalog>(store: Arc<S>) {
    same(
        ok(GiftCatalog::get(&*store, &gift_id("rose")).await, "get"),
        None,
        "an unknown gift is absent",
    );
    same(
        ok(GiftCatalog::list(&*store).await, "list"),
        Vec::new(),
        "a new catalog is empty",
    );
    for g in [gift("rose", 10), gift("car", 5000), gift("kiss", 1)] {
        ok(GiftCatalog::put(&*store, &g).await, "put");
    }
    same(
        ok(GiftCatalog::get(&*store, &gift_id("car")).await, "get"),
        Some(gift("car", 5000)),
        "a stored gift reads back whole",
    );
    same(
        ok(GiftCatalog::list(&*store).await, "list"),
        vec![gift("car", 5000), gift("kiss", 1), gift("rose", 10)],
        "list returns every gift by id",
    );
    let mut disabled = gift("rose", 12);
    disabled.enabled = false;
    disabled.name = "Red rose".into();
    ok(GiftCatalog::put(&*store, &disabled).await, "put replacing");
    same(
        ok(GiftCatalog::get(&*store, &gift_id("rose")).await, "get"),
        Some(disabled.clone()),
        "put replaces a gift with the same id",
    );
    same(
        ok(GiftCatalog::list(&*store).await, "list"),
        vec![gift("car", 5000), gift("kiss", 1), disabled],
        "replacing does not add an entry",
    );
}
