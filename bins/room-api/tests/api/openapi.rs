//! The served OpenAPI document says what the server does: every `$ref` resolves, every
//! authenticated operation documents 401 and 429, the limits the server enforces are in the
//! schema, and the error answers it documents are the ones it gives.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code, parse};

async fn document(t: &TestApp) -> Value {
    let (status, document) = t.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    document
}

/// Every `(path, method, operation)` of the document.
fn operations(document: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                found.push((path.clone(), method.clone(), operation.clone()));
            }
        }
    }
    found
}

fn collect_refs(value: &Value, refs: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref" {
                    refs.push(value.as_str().expect("a $ref is a string").to_owned());
                } else {
                    collect_refs(value, refs);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, refs)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ref_resolves_and_every_authenticated_operation_documents_401_and_429() {
    let t = TestApp::new().await;
    let document = document(&t).await;

    let mut refs = Vec::new();
    collect_refs(&document, &mut refs);
    assert!(!refs.is_empty());
    for reference in &refs {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{reference} is not local"));
        assert!(
            document.pointer(pointer).is_some(),
            "{reference} does not resolve"
        );
    }

    let operations = operations(&document);
    assert!(operations.len() >= 30, "{} operations", operations.len());
    let mut authenticated = 0;
    for (path, method, operation) in &operations {
        let responses = operation["responses"].as_object().expect("responses");
        // Every operation can time out.
        assert!(responses.contains_key("503"), "{method} {path}: no 503");
        let secured = operation["security"]
            .as_array()
            .is_some_and(|requirements| !requirements.is_empty());
        if !secured {
            continue;
        }
        authenticated += 1;
        for status in ["401", "429"] {
            assert!(
                responses.contains_key(status),
                "{method} {path}: no {status}"
            );
        }
        if operation.get("requestBody").is_some() {
            for status in ["400", "408", "413", "415"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path}: a JSON body but no {status}"
                );
            }
        }
        // Every error answer has the error shape (a plain error or a gift's error).
        for (status, response) in responses {
            if status.starts_with('2') {
                continue;
            }
            let response = match response.get("$ref").and_then(Value::as_str) {
                Some(reference) => document.pointer(&reference[1..]).unwrap(),
                None => response,
            };
            let schema = response
                .pointer("/content/application~1json/schema/$ref")
                .and_then(Value::as_str);
            assert!(
                matches!(
                    schema,
                    Some(
                        "#/components/schemas/ErrorResponse"
                            | "#/components/schemas/GiftErrorResponse"
                    )
                ),
                "{method} {path} {status}: {response}"
            );
        }
    }
    assert!(
        authenticated >= 25,
        "{authenticated} authenticated operations"
    );
}

/// The schema of a parameter of an operation.
fn parameter<'a>(document: &'a Value, path: &str, method: &str, name: &str) -> &'a Value {
    document["paths"][path][method]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path} has no parameters"))
        .iter()
        .find(|parameter| parameter["name"] == name)
        .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
}

/// A schema, with a `$ref` followed.
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => document.pointer(&reference[1..]).expect("resolves"),
        None => schema,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_states_the_limits_the_server_enforces() {
    let t = TestApp::new().await;
    let document = document(&t).await;
    let schemas = &document["components"]["schemas"];

    for (path, name) in [
        ("/v1/rooms", "limit"),
        ("/v1/rooms/{room_id}/online-users", "limit"),
        ("/v1/rooms/{room_id}/contribution-rank", "limit"),
        ("/v1/me/income", "limit"),
        ("/v1/admin/users/{user_id}/income", "limit"),
    ] {
        let schema = &parameter(&document, path, "get", name)["schema"];
        assert_eq!(
            (schema["minimum"].as_i64(), schema["maximum"].as_i64()),
            (Some(1), Some(100)),
            "{path} {schema}"
        );
    }
    let put_billing = resolve(
        &document,
        &document["paths"]["/v1/admin/billing"]["put"]["requestBody"]["content"]["application/json"]
            ["schema"],
    );
    for share in ["recipient_bp", "owner_bp", "agency_bp"] {
        let schema = &put_billing["properties"][share];
        assert_eq!(
            (schema["minimum"].as_i64(), schema["maximum"].as_i64()),
            (Some(0), Some(10_000)),
            "{share} {schema}"
        );
    }
    let period = &parameter(
        &document,
        "/v1/rooms/{room_id}/contribution-rank",
        "get",
        "period",
    )["schema"];
    let mut refs = Vec::new();
    collect_refs(period, &mut refs);
    assert_eq!(refs, ["#/components/schemas/PeriodParam"]);
    assert_eq!(schemas["PeriodParam"]["enum"], json!(["day", "week"]));

    let short_id = &parameter(
        &document,
        "/v1/rooms/by-short-id/{short_id}",
        "get",
        "short_id",
    )["schema"];
    assert_eq!(
        (short_id["minimum"].as_i64(), short_id["maximum"].as_i64()),
        (Some(100_000), Some(99_999_999))
    );
    let seat = &parameter(
        &document,
        "/v1/rooms/{room_id}/seats/{seat}/take",
        "post",
        "seat",
    )["schema"];
    assert_eq!(
        (seat["minimum"].as_i64(), seat["maximum"].as_i64()),
        (Some(0), Some(255))
    );

    // Ids: the domain's rule, in path parameters and bodies alike.
    let id = &schemas["Id"];
    assert_eq!(
        (id["minLength"].as_u64(), id["maxLength"].as_u64()),
        (Some(1), Some(64))
    );
    // A class of the characters allowed: none of the refused ones falls in it (the unit test
    // of `dto` checks the pattern against the rule for every character).
    let pattern = regex::Regex::new(id["pattern"].as_str().unwrap()).unwrap();
    for refused in [
        "a b",
        "a\u{7f}",
        "a\u{a0}",
        "a\u{3000}",
        "a\u{200b}",
        "a/b",
        "a\u{202e}",
    ] {
        assert!(
            !pattern.is_match(refused),
            "the id pattern lets {refused:?} through"
        );
    }
    assert!(pattern.is_match("alice-42"));
    let room_id = &parameter(&document, "/v1/rooms/{room_id}", "get", "room_id")["schema"];
    assert_eq!(resolve(&document, room_id), id);
    assert_eq!(
        resolve(&document, &schemas["KickRequest"]["properties"]["user_id"]),
        id
    );
    assert_eq!(
        schemas["SendGiftRequest"]["properties"]["order_id"]["$ref"],
        "#/components/schemas/OrderIdSchema"
    );
    assert!(
        schemas["OrderIdSchema"]["pattern"]
            .as_str()
            .unwrap()
            .starts_with("^(?!sys-)")
    );
    let recipients = resolve(
        &document,
        &schemas["SendGiftRequest"]["properties"]["recipients"],
    );
    let listed = &recipients["oneOf"][0];
    assert_eq!(
        (
            listed["minItems"].as_u64(),
            listed["maxItems"].as_u64(),
            listed["uniqueItems"].as_bool()
        ),
        (Some(1), Some(20), Some(true))
    );
    let scope = &recipients["oneOf"][1];
    assert_eq!(scope["required"], json!(["scope"]));
    assert_eq!(scope["additionalProperties"], false);
    assert_eq!(
        scope["properties"]["scope"]["enum"],
        json!(["all_mic", "all_room"])
    );

    let create = &schemas["CreateRoomRequest"]["properties"];
    let seat_count = create["seat_count"].clone();
    assert_eq!(
        (
            seat_count["minimum"].as_i64(),
            seat_count["maximum"].as_i64()
        ),
        (Some(1), Some(20)),
        "{seat_count}"
    );
    assert_eq!(resolve(&document, &create["name"])["maxLength"], 30);
    let credit = &schemas["CreditRequest"]["properties"]["amount"];
    assert_eq!(
        (credit["minimum"].as_i64(), credit["maximum"].as_i64()),
        (Some(1), Some(1_000_000_000_000))
    );
    let ban = &schemas["KickRequest"]["properties"]["ban_seconds"];
    assert_eq!(ban["maximum"].as_i64(), Some(i64::from(u32::MAX)), "{ban}");

    // The join body is optional; the event stream is text/event-stream; TRTC posts JSON.
    let join = &document["paths"]["/v1/rooms/{room_id}/join"]["post"]["requestBody"];
    assert_ne!(join["required"], json!(true), "{join}");
    let events =
        &document["paths"]["/v1/rooms/{room_id}/events"]["get"]["responses"]["200"]["content"];
    assert!(events.get("text/event-stream").is_some(), "{events}");
    let callback = &document["paths"]["/v1/rtc/callbacks"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"];
    assert_eq!(callback["type"], "object", "{callback}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gift_error_answers_carry_the_order_exactly_when_one_was_stored() {
    let t = TestApp::new().await;
    let document = document(&t).await;
    let gift_error = &document["components"]["schemas"]["GiftErrorResponse"];
    let required = gift_error["required"].as_array().unwrap();
    assert!(required.contains(&json!("error")));
    assert!(!required.contains(&json!("order")), "{gift_error}");

    let room_id = t.room_with_members(5).await;
    // Not enough coins: FAILED, with the order.
    let (status, body) = t
        .gift(&room_id, "alice", "o-poor", "rose", 1, &["bob"])
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "INSUFFICIENT_COINS")
    );
    assert_eq!(body["order"]["status"], "FAILED", "{body}");
    // A closed room refuses the gift before any coin moves: no order.
    let closed = t.create_room("alice").await;
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{closed}/close"),
            &t.token("alice"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = t
        .gift(&closed, "alice", "o-closed", "rose", 1, &["bob"])
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "ROOM_CLOSED")
    );
    assert!(body.get("order").is_none(), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_speak_of_the_request_not_of_the_server_internals() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(1_000).await;

    // A token whose header names no algorithm the service takes.
    let unsigned =
        "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMH0.";
    let (status, body) = t.get("/v1/me/wallet", unsigned).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNAUTHORIZED, "INVALID_TOKEN")
    );
    let message = body["error"]["message"].as_str().unwrap();
    for internal in ["variant", "expected one of", "Json", "Error("] {
        assert!(!message.contains(internal), "{message}");
    }

    // JSON of the wrong type, whole or in a field.
    let cases = [
        (json!(5), "a JSON object"),
        (json!([]), "a JSON object"),
        (
            json!({"order_id": "o-1", "gift_id": "rose", "count": "3", "recipients": ["bob"]}),
            "count",
        ),
        (
            json!({"order_id": "o-1", "gift_id": "rose", "count": 1.5, "recipients": ["bob"]}),
            "whole number",
        ),
        (
            json!({"order_id": "o-1", "gift_id": "rose", "count": 1, "recipients": "bob"}),
            "recipients",
        ),
    ];
    for (request, expected) in cases {
        let (status, body) = t
            .post(
                &format!("/v1/rooms/{room_id}/gifts"),
                &t.token("alice"),
                request.clone(),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_BODY"),
            "{request}"
        );
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{request}: {message}");
        for internal in ["struct", "SendGiftRequest", "i64", "u32", "target type"] {
            assert!(!message.contains(internal), "{request}: {message}");
        }
    }
    let request = Request::post(format!("/v1/rooms/{room_id}/gifts"))
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", t.token("alice")),
        )
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{\"order_id\": "))
        .unwrap();
    let (status, _, body) = t.send(request).await;
    let body = parse(&body);
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "MALFORMED_JSON")
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the body is not valid JSON"),
        "{body}"
    );

    let (status, body) = t.get("/v1/rooms?limit=abc", &t.token("alice")).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_QUERY")
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("limit") && !message.contains("u32"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_takes_what_the_schema_allows() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let admin = t.admin_token();

    // JSON Schema's integers include `5.0`.
    let (status, body) = t
        .post(
            "/v1/admin/wallets/alice/credit",
            &admin,
            json!({"op_id": "whole", "amount": 500.0}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["balance"], 500);
    let (status, body) = t
        .gift(&room_id, "alice", "o-whole", "rose", 2, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{room_id}/kick"),
            &t.token("alice"),
            json!({"user_id": "bob", "ban_seconds": 4_294_967_295_u32}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = t
        .post(
            "/v1/admin/wallets/alice/credit",
            &admin,
            json!({"op_id": "too-big", "amount": 4_294_967_296.5}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_BODY"),
        "{body}"
    );

    // The join body may be left out, or be `null`.
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{room_id}/join"),
            &t.token("carol"),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
