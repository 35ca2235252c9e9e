//! Media through codemode, end to end (clients/media.py, the Python SDK over stdio): an
//! upstream's image returned by a script reaches the client as an image block with the exact
//! bytes the upstream sent, named by id in the text and the structured content, which carry no
//! base64; past `limits.maxMediaBytes` an image is dropped with a note; an image the output
//! policy masks never becomes a block; an embedded blob resource becomes a resource block; a
//! reference to an id the eval never received gets a note; a 50 MB image from a stdio
//! upstream fails its call at once with why, and the next call to that upstream works.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{Mode, Setup, Transport, base_config};
use crate::peers;

/// server-everything's `MCP_TINY_IMAGE`: the base64 its `get-tiny-image` sends.
fn tiny_image() -> String {
    let source = peers::node_modules()
        .join("@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js");
    let text = std::fs::read_to_string(source).expect("server-everything's get-tiny-image.js");
    let start = text.find("MCP_TINY_IMAGE = \"").expect("its image") + "MCP_TINY_IMAGE = \"".len();
    let len = text[start..].find('"').expect("the image's end");
    text[start..start + len].to_string()
}

/// The bytes base64 `text` decodes to.
fn decoded_len(text: &str) -> usize {
    text.len() / 4 * 3 - text.bytes().rev().take_while(|&b| b == b'=').count()
}

/// The media id in `value` (32 lowercase hex digits), checked.
fn id_of(value: &Value) -> String {
    let id = value["id"].as_str().unwrap_or_default().to_string();
    assert!(
        id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{value}"
    );
    id
}

const UNKNOWN: &str = "not attached: this eval holds no media of this id with this value (another eval's id, a value the script changed or an outputs rule masked, or media over limits.maxMediaBytes of the eval resumed from the durable store)";

#[test]
fn upstream_media_reach_the_client_as_content_blocks() {
    let setup = Setup::new("media", Transport::Stdio, |scratch| {
        let mut config = base_config(scratch);
        let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/media_server.py");
        config["mcpServers"]["media"] = json!({"command": peers::python(), "args": [server]});
        config["limits"] = json!({"maxMediaBytes": "6KiB"});
        config["outputs"] = json!([{"tools": ["media__secret_image"], "mask": ["/1"]}]);
        config
    });
    let obs = setup.python("media.py", Mode::Auto, &[]);
    let tiny = tiny_image();
    let size = decoded_len(&tiny);
    assert_eq!(size, 4033);

    // The tiny image: one image block, exactly as the upstream sent it, after the text.
    let r = &obs["tiny"];
    assert_eq!(r["is_error"], false);
    let content = r["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{content:?}");
    assert_eq!(
        content[1],
        json!({"type": "image", "data": tiny, "mimeType": "image/png"})
    );
    let shot = &r["structured"]["result"]["shot"];
    let id = id_of(shot);
    assert_eq!(
        *shot,
        json!({"type": "image", "mimeType": "image/png", "size": size, "id": id})
    );
    assert_eq!(r["structured"]["result"]["again"], json!([shot]));
    assert_eq!(
        r["structured"]["result"]["caption"],
        "Here's the image you requested:"
    );
    assert_eq!(
        r["structured"]["media"],
        json!([{"id": id, "type": "image", "content": 1}])
    );
    let text = content[0]["text"].as_str().unwrap();
    assert!(!text.contains(&tiny[..64]), "base64 in the text: {text}");
    assert!(!r["structured"].to_string().contains(&tiny[..64]));
    assert!(
        text.ends_with(&format!(
            "\n\nMedia:\n- image, image/png, 4,033 bytes (id {id}): content block 1"
        )),
        "{text}"
    );

    // Two over the 6 KiB budget (a block costs its JSON as received: 5,429 bytes): the second is dropped at once, with a note, and no block.
    let r = &obs["budget"];
    let content = r["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{content:?}");
    assert_eq!(content[1]["data"], tiny.as_str());
    let result = &r["structured"]["result"];
    let first = id_of(&result[0]);
    assert_eq!(
        result[1],
        json!({"type": "image", "mimeType": "image/png", "size": size,
               "omitted": "image of 5429 bytes from `everything` is over limits.maxMediaBytes (6 KiB) of this eval, 5429 of which are used: it was dropped"})
    );
    assert_eq!(
        r["structured"]["media"],
        json!([{"id": first, "type": "image", "content": 1}])
    );

    // Masked by the output policy: the script got "***", no block, no media.
    let r = &obs["masked"];
    assert_eq!(r["structured"]["result"], json!(["4 bytes", "***"]));
    assert_eq!(r["content"].as_array().unwrap().len(), 1);
    assert_eq!(r["structured"].get("media"), None);

    // An embedded blob: a resource block; an id this eval never received: a note.
    let r = &obs["resource"];
    let value = &r["structured"]["result"]["r"];
    let id = id_of(value);
    assert_eq!(
        *value,
        json!({"type": "resource", "uri": "file:///data.bin",
               "mimeType": "application/octet-stream", "size": 3, "id": id})
    );
    assert_eq!(
        r["content"][1],
        json!({"type": "resource", "resource": {"uri": "file:///data.bin",
               "mimeType": "application/octet-stream", "blob": "AQID"}})
    );
    assert_eq!(r["content"].as_array().unwrap().len(), 2);
    assert_eq!(
        r["structured"]["media"],
        json!([{"id": id, "type": "resource", "content": 1},
               {"id": "0123456789abcdef0123456789abcdef", "note": UNKNOWN}])
    );

    // 50 MB: the call fails at once naming the upstream and the size; the next call works.
    let r = &obs["fifty_mb"];
    assert_eq!(r["is_error"], false, "{r}");
    let big = r["structured"]["result"]["big"].as_str().unwrap();
    let prefix = "upstream server `media` answered `image`, but its answer was ";
    let suffix = " bytes, over the 16777216 bytes codemode reads in one message from a stdio server (a large image or file?); it was dropped";
    let bytes: u64 = big
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(suffix))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{big}"));
    // The base64 of 50 MiB is 69,905,068 bytes; the JSON around it, a few hundred.
    assert!((69_905_068..69_905_068 + 400).contains(&bytes), "{bytes}");
    let small = &r["structured"]["result"]["small"];
    let id = id_of(small);
    assert_eq!(
        *small,
        json!({"type": "image", "mimeType": "image/png", "size": 10, "id": id})
    );
    assert_eq!(
        r["content"][1],
        json!({"type": "image", "data": "iYmJiYmJiYmJiQ==", "mimeType": "image/png"})
    );
    assert_eq!(r["content"].as_array().unwrap().len(), 2);
    let log = std::fs::read_to_string(setup.scratch.path("server.log")).unwrap_or_default();
    assert!(
        log.contains(&format!(
            "upstream server `media` sent a message of {bytes} bytes, over the 16777216 codemode reads in one message: it was dropped"
        )),
        "{log}"
    );
}
