//! Properties of the billing split: for every valid policy (default shares and overrides) and
//! every value, with or without an agency, the parts add up exactly to the value, none is
//! negative, each paid part is its share rounded down, and the platform's rest is less than
//! one coin per part above its own share.

use std::collections::BTreeMap;

use proptest::prelude::*;
use room_domain::{
    BASIS_POINTS, BillingPolicy, BillingShares, Coins, GiftId, GiftSent, OrderId, UserId,
};

/// Valid shares: each within the whole, their sum too.
fn shares() -> impl Strategy<Value = BillingShares> {
    (0..=BASIS_POINTS)
        .prop_flat_map(|recipient_bp| (Just(recipient_bp), 0..=BASIS_POINTS - recipient_bp))
        .prop_flat_map(|(recipient_bp, owner_bp)| {
            (
                Just(recipient_bp),
                Just(owner_bp),
                0..=BASIS_POINTS - recipient_bp - owner_bp,
            )
        })
        .prop_map(|(recipient_bp, owner_bp, agency_bp)| BillingShares {
            recipient_bp,
            owner_bp,
            agency_bp,
        })
}

fn policy() -> impl Strategy<Value = BillingPolicy> {
    (
        1..u64::MAX,
        shares(),
        prop::collection::btree_map(
            prop::sample::select(vec!["rose", "lucky-clover", "sports-car"])
                .prop_map(|id| GiftId::new(id).unwrap()),
            shares(),
            0..3,
        ),
    )
        .prop_map(|(version, shares, overrides)| BillingPolicy {
            version,
            shares,
            overrides,
            turnover_bp: 0,
        })
}

/// Values small and large, up to the largest amount.
fn value() -> impl Strategy<Value = i64> {
    prop_oneof![0..1_000i64, 0..=i64::MAX, Just(i64::MAX)]
}

fn gift_id() -> impl Strategy<Value = GiftId> {
    prop::sample::select(vec!["rose", "lucky-clover", "sports-car", "castle"])
        .prop_map(|id| GiftId::new(id).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn parts_add_up_to_the_value_and_none_is_negative(
        policy in policy(),
        value in value(),
        gift in gift_id(),
        has_agency in any::<bool>(),
    ) {
        prop_assert!(policy.validate().is_ok());
        let split = policy.split(&gift, Coins(value), has_agency).unwrap();
        let parts = [split.recipient, split.owner, split.agency, split.platform];
        prop_assert!(parts.iter().all(|part| !part.is_negative()), "{split:?}");
        let sum: i128 = parts.iter().map(|part| i128::from(part.0)).sum();
        prop_assert_eq!(sum, i128::from(value));
        prop_assert_eq!(i128::from(split.paid().0) + i128::from(split.platform.0), sum);

        let shares = policy.shares_for(&gift);
        let exact = |bp: u32| i128::from(value) * i128::from(bp) / i128::from(BASIS_POINTS);
        prop_assert_eq!(i128::from(split.recipient.0), exact(shares.recipient_bp));
        prop_assert_eq!(i128::from(split.owner.0), exact(shares.owner_bp));
        let agency = if has_agency { exact(shares.agency_bp) } else { 0 };
        prop_assert_eq!(i128::from(split.agency.0), agency);
    }

    #[test]
    fn a_gift_splits_each_recipients_value_and_a_robots_pays_nothing(
        policy in policy(),
        unit_price in 0..1_000_000i64,
        count in 1..10_000u32,
        robot in any::<bool>(),
    ) {
        let gift = GiftSent {
            order_id: OrderId::new("o-1").unwrap(),
            sender: UserId::new("carol").unwrap(),
            recipients: vec![UserId::new("alice").unwrap(), UserId::new("bob").unwrap()],
            gift_id: GiftId::new("rose").unwrap(),
            count,
            unit_price: Coins(unit_price),
            total_value: Coins(unit_price * i64::from(count) * 2),
            heat_added: 0,
            fuel_added: 0,
            lucky: None,
            robot,
            billing_version: Some(policy.version),
            sender_nickname: None,
            sender_avatar_url: None,
        };
        let split = policy.split_gift(&gift, true).unwrap();
        if robot {
            prop_assert_eq!(split, Default::default());
        } else {
            prop_assert_eq!(split.paid().0 + split.platform.0, gift.value_per_recipient().0);
        }
    }
}

#[test]
fn a_gift_overflowing_its_value_is_refused() {
    let policy = BillingPolicy {
        version: 1,
        shares: BillingShares::default(),
        overrides: BTreeMap::new(),
        turnover_bp: 0,
    };
    let gift = GiftSent {
        order_id: OrderId::new("o-1").unwrap(),
        sender: UserId::new("carol").unwrap(),
        recipients: vec![UserId::new("alice").unwrap()],
        gift_id: GiftId::new("rose").unwrap(),
        count: 2,
        unit_price: Coins(i64::MAX),
        total_value: Coins(i64::MAX),
        heat_added: 0,
        fuel_added: 0,
        lucky: None,
        robot: false,
        billing_version: None,
        sender_nickname: None,
        sender_avatar_url: None,
    };
    assert!(policy.split_gift(&gift, false).is_err());
    assert_eq!(gift.billed_under(), 1);
}
