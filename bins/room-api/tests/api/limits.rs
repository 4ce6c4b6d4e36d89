//! Resource bounds of the HTTP layer: metric label sets, event stream channels and caps,
//! per-user rate limits.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};

use crate::support::TestApp;

/// The standard methods and `OTHER`: the only values the `method` label may take.
const METHOD_LABELS: [&str; 10] = [
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE", "OTHER",
];

/// Every `method="..."` label value in a Prometheus text exposition.
fn method_labels(text: &str) -> Vec<String> {
    text.split("method=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn odd_methods_add_no_metric_series() {
    let app = TestApp::new().await;
    for i in 0..200 {
        let method =
            Method::from_bytes(format!("ODDMETHOD{i}{}", "X".repeat(500)).as_bytes()).unwrap();
        let path = if i % 2 == 0 { "/healthz" } else { "/v1/rooms" };
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let (status, _, _) = app.send(request).await;
        assert!(status.is_client_error(), "{status}");
    }
    let request = Request::builder()
        .uri("/metrics")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = app.send(request).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        !text.contains("ODDMETHOD"),
        "a client's method became a label"
    );
    let labels = method_labels(&text);
    assert!(labels.iter().any(|label| label == "OTHER"), "{labels:?}");
    for label in labels {
        assert!(METHOD_LABELS.contains(&label.as_str()), "{label}");
    }
}
