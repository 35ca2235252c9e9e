//! Tests of [`super`]: marks, the SSE rewriting, the message.

use super::*;
use futures::StreamExt;

#[test]
fn marks_parse_back_and_unmarked_ids_are_left_alone() {
    assert_eq!(
        Marked::parse("3/2~00ff00ff00ff00ff~7"),
        Some(Marked {
            event: "3/2",
            node: "00ff00ff00ff00ff",
            request: Some(7)
        })
    );
    assert_eq!(
        Marked::parse("5~00ff00ff00ff00ff"),
        Some(Marked {
            event: "5",
            node: "00ff00ff00ff00ff",
            request: None
        })
    );
    for id in [
        "3/2",
        "3/2~",
        "3/2~00ff~7",
        "3/2~00ff00ff00ff00fg~7",
        "3/2~../../x~7",
        "3/2~00ff00ff00ff00ff~x",
        "3/2~00ff00ff00ff00ff~7~8",
        "",
    ] {
        assert_eq!(Marked::parse(id), None, "{id}");
    }
}

#[test]
fn id_fields_get_the_mark_and_nothing_else_does() {
    let suffix = b"~ab~4";
    assert_eq!(mark_line(b"id: 0/3\n", suffix), b"id: 0/3~ab~4\n");
    assert_eq!(mark_line(b"id:0/3\r\n", suffix), b"id: 0/3~ab~4\r\n");
    assert_eq!(mark_line(b"id:\n", suffix), b"id:\n");
    assert_eq!(
        mark_line(b"data: {\"id\":1}\n", suffix),
        b"data: {\"id\":1}\n"
    );
    assert_eq!(mark_line(b": keep-alive\n", suffix), b": keep-alive\n");
}

#[tokio::test]
async fn a_stream_split_anywhere_is_marked_whole_and_ends_once() {
    let sse = "retry: 3000\nid: 0/1\ndata:\n\nid: 1/1\ndata: {\"id\":\"x\"}\n\n";
    let ended = Arc::new(AtomicU64::new(0));
    for split in 1..sse.len() {
        let (a, b) = sse.split_at(split);
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from(a.to_string())),
            Ok(Bytes::from(b.to_string())),
        ];
        let counter = ended.clone();
        let stream = MarkIds {
            inner: Body::from_stream(futures::stream::iter(chunks)).into_data_stream(),
            suffix: b"~n~2".to_vec(),
            pending: Vec::new(),
            on_end: Some(Box::new(move || {
                counter.fetch_add(1, Ordering::Relaxed);
            })),
            done: false,
        };
        let out: Vec<u8> = stream
            .map(|c| c.unwrap().to_vec())
            .collect::<Vec<_>>()
            .await
            .concat();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "retry: 3000\nid: 0/1~n~2\ndata:\n\nid: 1/1~n~2\ndata: {\"id\":\"x\"}\n\n",
            "split at {split}"
        );
    }
    assert_eq!(ended.load(Ordering::Relaxed), sse.len() as u64 - 1);
}

#[test]
fn the_message_names_the_request_and_neutralises_what_the_client_sent() {
    let request = InFlightRequest {
        session: "mcp-session:00".to_string(),
        id: json!(3),
        method: "tools/call".to_string(),
        tool: Some("eval\u{1b}[2J".to_string()),
        eval: None,
    };
    let message = node_lost_message(&request, false);
    assert!(
        message.starts_with(
            "the codemode node serving this request (`tools/call` of `eval\\u001b[2J`) is gone"
        ),
        "{message}"
    );
    assert!(!message.contains('\u{1b}'));
}

#[test]
fn the_message_says_whether_the_eval_was_saved() {
    let request = InFlightRequest {
        session: "mcp-session:00".to_string(),
        id: json!(3),
        method: "tools/call".to_string(),
        tool: Some("eval".to_string()),
        eval: Some("0".repeat(32)),
    };
    let saved = node_lost_message(&request, true);
    assert!(
        saved.contains("Its eval was saved to the durable store while it waited for a human: the approval API of any node (`GET /approvals`) can still decide it"),
        "{saved}"
    );
    assert!(
        !saved.contains("lived only in its node's memory"),
        "{saved}"
    );
    let lost = node_lost_message(&request, false);
    assert!(
        lost.contains(
            "An eval that was not saved to the durable store lived only in its node's memory"
        ),
        "{lost}"
    );
    assert!(!lost.contains("approval API"), "{lost}");
}
