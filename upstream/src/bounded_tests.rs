use tokio::io::AsyncReadExt;

use super::*;

/// What a reader of `input` through [`BoundedLines`] with lines of at most `max` bytes gets,
/// the input arriving in chunks of `chunk` bytes.
async fn through(input: &str, max: usize, chunk: usize) -> String {
    let (mut tx, rx) = tokio::io::duplex(chunk);
    let input = input.as_bytes().to_vec();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        for part in input.chunks(chunk) {
            tx.write_all(part).await.unwrap();
        }
    });
    let mut out = String::new();
    BoundedLines::new(rx, "big", max)
        .read_to_string(&mut out)
        .await
        .unwrap();
    writer.await.unwrap();
    out
}

fn too_large(id: Value, bytes: usize, max: usize) -> String {
    let message = format!(
        "its answer was {bytes} bytes, over the {max} bytes codemode reads in one message from a stdio server (a large image or file?); it was dropped"
    );
    let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
        "message": message, "data": {"codemode": TOO_LARGE, "bytes": bytes}}});
    format!("{error}\n")
}

#[tokio::test]
async fn lines_within_the_bound_pass_unchanged() {
    let input = "{\"a\":1}\n\n{\"b\":2}\n{\"last\":true}";
    for chunk in [1, 3, 1024] {
        assert_eq!(through(input, 20, chunk).await, input);
    }
}

/// A result past the bound becomes an error answering the same request, whichever order its
/// members come in; a message that is no result is dropped; the lines after go on.
#[tokio::test]
async fn a_line_past_the_bound_is_replaced_by_an_error_for_its_request() {
    let big = "A".repeat(300);
    let python = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{\"content\":[{{\"data\":\"{big}\"}}]}}}}"
    );
    let typescript =
        format!("{{\"result\":{{\"data\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\":\"s-7\"}}");
    let request = format!("{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":\"{big}\"}}");
    let input = format!("{python}\n{{\"ok\":1}}\n{typescript}\n{request}\n{{\"ok\":2}}\n");
    let want = format!(
        "{}{{\"ok\":1}}\n{}{{\"ok\":2}}\n",
        too_large(json!(3), python.len(), 100),
        too_large(json!("s-7"), typescript.len(), 100)
    );
    for chunk in [7, 64, 4096] {
        assert_eq!(through(&input, 100, chunk).await, want, "chunk {chunk}");
    }
}

#[test]
fn ids_are_read_next_to_the_outer_braces_only() {
    let cases: [(&str, &str, Option<Value>); 8] = [
        (
            r#"{"jsonrpc":"2.0","id":12,"result":{"#,
            "",
            Some(json!(12)),
        ),
        (
            r#" { "id" : "a" , "jsonrpc":"2.0", "result": ["#,
            "",
            Some(json!("a")),
        ),
        (
            r#"{"result":{"content":["#,
            r#"]} , "jsonrpc" : "2.0" , "id" : 9 }"#,
            Some(json!(9)),
        ),
        (r#"{"result":{"#, r#"},"id":-1}"#, Some(json!(-1))),
        // An id inside the result is not the message's.
        (r#"{"result":{"#, r#""id":5}}"#, None),
        (r#"{"result":{"#, r#""id":5},"other":1}"#, None),
        // Not a result.
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","#,
            "}",
            None,
        ),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"result":{"#, "}", None),
    ];
    for (head, tail, want) in cases {
        assert_eq!(
            response_id(head.as_bytes(), tail.as_bytes()),
            want,
            "{head} … {tail}"
        );
    }
}
