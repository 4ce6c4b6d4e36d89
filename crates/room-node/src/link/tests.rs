//! The link's own tests: frames, the owner's side and the forwarding side, over in-memory
//! pipes and local sockets.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use secrecy::SecretString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::owner::DRAIN_LIMIT;
use super::protocol::{FrameReader, LINK_IN_FLIGHT, MAX_ANSWER_FRAME, frame};
use super::*;
use room_app::ports::Peer;

#[tokio::test]
async fn frames_come_out_as_they_went_in_whatever_the_reads_cut() {
    let a = frame(7, &serde_json::json!({"a": 1}), MAX_FRAME).unwrap();
    let b = frame(u64::MAX, &serde_json::json!("b"), MAX_FRAME).unwrap();
    let bytes = [a.clone(), b.clone()].concat();
    // Every cut of the stream into two reads gives the same two frames.
    for cut in 0..bytes.len() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = FrameReader::new(server, MAX_FRAME, bytes[..cut].to_vec());
        let rest = bytes[cut..].to_vec();
        let writer = tokio::spawn(async move {
            client.write_all(&rest).await.unwrap();
        });
        let first = reader.next().await.unwrap().unwrap();
        let second = reader.next().await.unwrap().unwrap();
        writer.await.unwrap();
        assert_eq!(first, (7, br#"{"a":1}"#.to_vec()), "cut at {cut}");
        assert_eq!(second, (u64::MAX, br#""b""#.to_vec()), "cut at {cut}");
        assert_eq!(reader.next().await.unwrap(), None, "cut at {cut}");
    }
}

#[tokio::test]
async fn a_frame_over_the_limit_or_cut_short_is_an_error() {
    let (mut client, server) = tokio::io::duplex(64);
    let mut reader = FrameReader::new(server, MAX_FRAME, Vec::new());
    client
        .write_all(&((MAX_FRAME + 1) as u32).to_be_bytes())
        .await
        .unwrap();
    let error = reader.next().await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");

    let (mut client, server) = tokio::io::duplex(64);
    let mut reader = FrameReader::new(server, MAX_FRAME, Vec::new());
    client
        .write_all(&frame(1, &"cut", MAX_FRAME).unwrap()[..10])
        .await
        .unwrap();
    drop(client);
    let error = reader.next().await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "{error}");

    let too_long = "x".repeat(MAX_FRAME);
    assert!(
        frame(1, &too_long, MAX_FRAME).is_err(),
        "a payload over the limit is refused"
    );
}

fn membership(user: &str) -> LinkItem {
    LinkItem::Membership {
        room_id: "r1".into(),
        user: user.into(),
        kind: room_app::ports::ReadKind::Newest,
    }
}

fn member_answer(member: bool) -> LinkAnswer {
    LinkAnswer::Membership(ForwardAnswer::of(Ok(room_app::ports::Membership {
        status: room_domain::RoomStatus::Open,
        member,
        version: 1,
    })))
}

/// Polls `condition` until it holds, at most ten seconds.
async fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn an_owner_answers_each_request_under_its_number_as_it_ends() {
    let (mut peer, io) = tokio::io::duplex(1 << 20);
    let (release, released) = tokio::sync::watch::channel(false);
    let served = tokio::spawn(serve(io, CancellationToken::new(), move |item| {
        let mut released = released.clone();
        Box::pin(async move {
            let LinkItem::Membership { user, .. } = item else {
                unreachable!("the test sends memberships")
            };
            // "slow" is answered only once released: the others must not wait for it.
            if user == "slow" {
                let _ = released.wait_for(|go| *go).await;
            }
            member_answer(user != "bob")
        })
    }));
    let mut requests = Vec::new();
    for (id, user) in [(1, "slow"), (2, "alice"), (3, "bob")] {
        requests.extend(frame(id, &membership(user), MAX_FRAME).unwrap());
    }
    peer.write_all(&requests).await.unwrap();
    let (read, mut write) = tokio::io::split(peer);
    let mut answers = FrameReader::new(read, MAX_ANSWER_FRAME, Vec::new());
    let mut got = Vec::new();
    for _ in 0..2 {
        let (id, payload) = answers.next().await.unwrap().unwrap();
        let answer: LinkAnswer = serde_json::from_slice(&payload).unwrap();
        got.push((id, serde_json::to_value(answer).unwrap()));
    }
    got.sort_by_key(|(id, _)| *id);
    assert_eq!(got[0].0, 2);
    assert_eq!(got[0].1["membership"]["ok"]["member"], true);
    assert_eq!(got[1].0, 3);
    assert_eq!(got[1].1["membership"]["ok"]["member"], false);
    release.send(true).unwrap();
    let (id, _) = answers.next().await.unwrap().unwrap();
    assert_eq!(
        id, 1,
        "the slow request is answered last, under its own number"
    );
    // The forwarding node closes its side: the link ends.
    write.shutdown().await.unwrap();
    served.await.unwrap();
}

#[tokio::test]
async fn an_owner_runs_at_most_link_in_flight_requests_of_a_link_at_once() {
    let (mut peer, io) = tokio::io::duplex(16 << 20);
    let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = started.clone();
    let stop = CancellationToken::new();
    let served = tokio::spawn(serve(io, stop.clone(), move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::pending())
    }));
    let mut requests = Vec::new();
    for id in 0..(LINK_IN_FLIGHT as u64 + 100) {
        requests.extend(frame(id, &membership("alice"), MAX_FRAME).unwrap());
    }
    peer.write_all(&requests).await.unwrap();
    eventually("the owner takes requests up to its bound", || {
        started.load(Ordering::SeqCst) >= LINK_IN_FLIGHT
    })
    .await;
    // Let the link task run on with the rest of the frames in its buffer: on this
    // single-threaded runtime it runs whenever the test yields.
    for _ in 0..1_000 {
        tokio::task::yield_now().await;
    }
    assert_eq!(started.load(Ordering::SeqCst), LINK_IN_FLIGHT);
    served.abort();
}

#[tokio::test]
async fn an_owner_closes_a_link_that_sends_a_frame_it_cannot_read() {
    let (mut peer, io) = tokio::io::duplex(1 << 20);
    let served = tokio::spawn(serve(io, CancellationToken::new(), |_| {
        Box::pin(async { member_answer(true) })
    }));
    peer.write_all(&frame(1, &"not a request", MAX_FRAME).unwrap())
        .await
        .unwrap();
    let mut rest = Vec::new();
    peer.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "nothing is answered: {rest:?}");
    served.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_stopping_owner_answers_what_ends_in_time_then_closes() {
    let (peer, io) = tokio::io::duplex(1 << 20);
    let (release, released) = tokio::sync::watch::channel(false);
    let stop = CancellationToken::new();
    let served = tokio::spawn(serve(io, stop.clone(), move |item| {
        let mut released = released.clone();
        Box::pin(async move {
            let LinkItem::Membership { user, .. } = item else {
                unreachable!("the test sends memberships")
            };
            if user == "never" {
                std::future::pending::<()>().await;
            }
            let _ = released.wait_for(|go| *go).await;
            member_answer(true)
        })
    }));
    let (read, mut write) = tokio::io::split(peer);
    let mut requests = frame(1, &membership("alice"), MAX_FRAME).unwrap();
    requests.extend(frame(2, &membership("never"), MAX_FRAME).unwrap());
    write.write_all(&requests).await.unwrap();
    tokio::task::yield_now().await;
    stop.cancel();
    // A request sent after the stop is not read.
    write
        .write_all(&frame(3, &membership("late"), MAX_FRAME).unwrap())
        .await
        .unwrap();
    release.send(true).unwrap();
    let mut answers = FrameReader::new(read, MAX_ANSWER_FRAME, Vec::new());
    let (id, _) = answers.next().await.unwrap().unwrap();
    assert_eq!(id, 1, "what ends while the owner stops is answered");
    let started = tokio::time::Instant::now();
    served.await.unwrap();
    assert!(started.elapsed() >= DRAIN_LIMIT - Duration::from_secs(1));
    assert_eq!(answers.next().await.unwrap(), None, "then the link closes");
}

/// A node that upgrades links and then reads requests without answering them.
async fn silent_owner() -> Peer {
    silent_node(OWNER).await
}

/// The node id the tests' owners answer with.
const OWNER: &str = "owner-1";

/// The node `node_id` at `url`.
fn peer(node_id: &str, url: String) -> Peer {
    Peer {
        node_id: node_id.into(),
        url,
    }
}

/// A node that answers link requests as `answering` (upgrading them), and then reads requests
/// without answering them; the peer the tests mean, [`OWNER`], at its address.
async fn silent_node(answering: &'static str) -> Peer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    if socket.read_buf(&mut head).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
                let answer =
                    format!("HTTP/1.1 101 Switching Protocols\r\nroom-node: {answering}\r\n\r\n");
                let _ = socket.write_all(answer.as_bytes()).await;
                let mut sink = Vec::new();
                let _ = socket.read_to_end(&mut sink).await;
            });
        }
    });
    peer(OWNER, url)
}

#[tokio::test]
async fn a_forwarding_node_refuses_a_request_beyond_link_in_flight_without_sending_it() {
    let url = silent_owner().await;
    let token = Arc::new(SecretString::from("a-token"));
    let links = Arc::new(Links::new(token, Duration::from_secs(60)));
    let mut waiting = Vec::new();
    for _ in 0..LINK_IN_FLIGHT {
        let (links, url) = (links.clone(), url.clone());
        waiting.push(tokio::spawn(async move {
            links.call(&url, &membership("alice")).await
        }));
    }
    let slot = links.slot(&url);
    eventually("every request waits for its answer", || {
        slot.open()
            .is_some_and(|link| link.waiting.lock().unwrap().answers.len() == LINK_IN_FLIGHT)
    })
    .await;
    let refused = links.call(&url, &membership("alice")).await;
    assert!(
        matches!(&refused, Err(Failure::NotSent(cause)) if cause.contains("too many")),
        "{refused:?}"
    );
    for task in waiting {
        task.abort();
    }
}

#[tokio::test]
async fn a_request_without_an_answer_in_time_has_an_unknown_outcome() {
    let url = silent_owner().await;
    let token = Arc::new(SecretString::from("a-token"));
    let links = Links::new(token, Duration::from_millis(200));
    let answer = links.call(&url, &membership("alice")).await;
    assert!(matches!(answer, Err(Failure::Unknown(_))), "{answer:?}");
    let slot = links.slot(&url);
    let link = slot.open().expect("the link stays open");
    assert!(
        link.waiting.lock().unwrap().answers.is_empty(),
        "the request that gave up is forgotten"
    );
}

#[tokio::test]
async fn requests_that_waited_for_a_link_that_did_not_open_share_its_failure() {
    // An owner that accepts connections and never answers the link request.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = peer(OWNER, format!("http://{}", listener.local_addr().unwrap()));
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    // Each attempt gives up after a second; the requests wait five.
    let links = Arc::new(Links::new(
        Arc::new(SecretString::from("a-token")),
        Duration::from_secs(5),
    ));
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let (links, url) = (links.clone(), url.clone());
            tokio::spawn(async move { links.call(&url, &membership("alice")).await })
        })
        .collect();
    for call in calls {
        let answer = call.await.unwrap();
        assert!(matches!(answer, Err(Failure::NotSent(_))), "{answer:?}");
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "one attempt for the requests that waited together"
    );
}

#[tokio::test]
async fn a_node_that_refuses_the_upgrade_gets_no_request() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = peer(OWNER, format!("http://{}", listener.local_addr().unwrap()));
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = vec![0; 1024];
        let _ = socket.read(&mut head).await;
        let _ = socket
            .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
            .await;
    });
    let links = Links::new(
        Arc::new(SecretString::from("wrong")),
        Duration::from_secs(5),
    );
    let answer = links.call(&url, &membership("alice")).await;
    assert!(
        matches!(&answer, Err(Failure::NotSent(cause)) if cause.contains("401")),
        "{answer:?}"
    );
}

#[tokio::test]
async fn a_link_opens_only_to_the_node_it_is_meant_for() {
    let token = Arc::new(SecretString::from("a-token"));
    // The registered URL now serves another node: it upgrades, as another node.
    let elsewhere = silent_node("node-9").await;
    let links = Links::new(token.clone(), Duration::from_secs(5));
    let answer = links.call(&elsewhere, &membership("alice")).await;
    assert!(
        matches!(&answer, Err(Failure::WrongNode(cause)) if cause.contains("node-9")),
        "{answer:?}"
    );
    assert!(links.slot(&elsewhere).open().is_none(), "no link kept");

    // A node that refuses a request meant for another (421).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = peer(OWNER, format!("http://{}", listener.local_addr().unwrap()));
    let asked = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            if socket.read_buf(&mut head).await.unwrap_or(0) == 0 {
                break;
            }
        }
        let _ = socket
            .write_all(b"HTTP/1.1 421 Misdirected Request\r\ncontent-length: 0\r\n\r\n")
            .await;
        String::from_utf8_lossy(&head).into_owned()
    });
    let answer = links.call(&url, &membership("alice")).await;
    assert!(matches!(&answer, Err(Failure::WrongNode(_))), "{answer:?}");
    let head = asked.await.unwrap();
    assert!(
        head.contains(&format!("room-node: {OWNER}\r\n")),
        "the request names the node it is meant for: {head}"
    );

    // The node meant: the link opens.
    let owner = silent_owner().await;
    let links = Links::new(token, Duration::from_millis(200));
    let answer = links.call(&owner, &membership("alice")).await;
    assert!(matches!(answer, Err(Failure::Unknown(_))), "{answer:?}");
    assert!(links.slot(&owner).open().is_some(), "the link is open");
}
