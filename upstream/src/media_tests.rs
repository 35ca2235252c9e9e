use serde_json::json;

use super::*;

fn block(v: Value) -> ContentBlock {
    serde_json::from_value(v).unwrap()
}

/// `value` without its `id`, which must have the form of a media id.
fn without_id(mut value: Value) -> (Value, String) {
    let id = value
        .as_object_mut()
        .and_then(|m| m.remove("id"))
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(is_media_id(&id), "{id:?}");
    (value, id)
}

#[test]
fn each_kind_of_block_has_its_value() {
    let media = Media::new(1024);
    let cases = [
        (
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png",
                   "annotations": {"audience": ["user"]}}),
            json!({"type": "image", "mimeType": "image/png", "size": 3,
                   "annotations": {"audience": ["user"]}}),
        ),
        (
            json!({"type": "audio", "data": "AAA=", "mimeType": "audio/wav"}),
            json!({"type": "audio", "mimeType": "audio/wav", "size": 2}),
        ),
        (
            json!({"type": "resource", "resource": {"uri": "file:///a.bin",
                   "mimeType": "application/octet-stream", "blob": "AAAAAA"}}),
            json!({"type": "resource", "uri": "file:///a.bin",
                   "mimeType": "application/octet-stream", "size": 4}),
        ),
        (
            json!({"type": "resource_link", "uri": "file:///b.txt", "name": "b.txt",
                   "mimeType": "text/plain", "size": 9000}),
            json!({"type": "resource_link", "uri": "file:///b.txt", "name": "b.txt",
                   "mimeType": "text/plain", "size": 9000}),
        ),
    ];
    let mut cost = 0;
    for (input, want) in cases {
        cost += serde_json::to_vec(&block(input.clone())).map_or(0, |v| v.len() as u64);
        let (value, id) = without_id(media.keep("s", block(input.clone())));
        assert_eq!(value, want, "{input}");
        // The script's value names the block as the upstream sent it.
        let (attached, unknown) = media.referenced(&json!([{"x": media_ref(&want, &id)}]));
        assert_eq!(
            attached,
            vec![Attachment {
                id,
                block: block(input)
            }]
        );
        assert!(unknown.is_empty());
    }
    // Each block costs its JSON as received, a resource link's too.
    assert_eq!(media.used(), cost);
}

fn media_ref(value: &Value, id: &str) -> Value {
    let mut v = value.clone();
    v["id"] = json!(id);
    v
}

/// An embedded text resource stays text: nothing to keep, no id.
#[test]
fn an_embedded_text_resource_is_its_text() {
    let media = Media::new(0);
    let value = media.keep(
        "s",
        block(
            json!({"type": "resource", "resource": {"uri": "file:///r.md",
                     "mimeType": "text/markdown", "text": "# Hi"}}),
        ),
    );
    assert_eq!(
        value,
        json!({"type": "resource", "uri": "file:///r.md", "mimeType": "text/markdown", "text": "# Hi"})
    );
}

/// Past `maxMediaBytes` a block is dropped at once; its value says why and has no id; what
/// fits still fits.
#[test]
fn a_block_past_the_budget_is_dropped_with_a_note() {
    let image = || block(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}));
    // A block costs what it takes as received (its JSON), not only its decoded bytes.
    let cost = serde_json::to_vec(&image())
        .map(|v| v.len())
        .unwrap_or_default();
    let media = Media::new(cost as u64 + 10);
    let (_, first) = without_id(media.keep("cam", image()));
    let second = media.keep("cam\u{1b}[2J", image());
    assert_eq!(
        second,
        json!({"type": "image", "mimeType": "image/png", "size": 3,
               "omitted": format!("image of {cost} bytes from `cam\\u001b[2J` is over limits.maxMediaBytes ({} bytes) of this eval, {cost} of which are used: it was dropped", cost + 10)})
    );
    assert_eq!(media.used(), cost as u64);
    let (attached, _) = media.referenced(
        &json!([{"type": "image", "id": first, "mimeType": "image/png", "size": 3}, second]),
    );
    assert_eq!(attached.len(), 1);
    // A resource link costs its JSON too: past the budget it is dropped like the rest.
    let link = media.keep(
        "cam",
        block(json!({"type": "resource_link", "uri": "x:y", "name": "y"})),
    );
    assert!(
        link.get("omitted").is_some() && link.get("id").is_none(),
        "{link}"
    );
}

/// References are found at any depth, once each, in order of first appearance; an id of the
/// right form that names nothing here (another eval's, a forged one, or one received before the
/// eval was parked) is reported; objects of other forms are the script's own data.
#[test]
fn references_are_found_deduplicated_and_unknown_ones_reported() {
    let media = Media::default();
    let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
    let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
    let (a, a_id) = without_id(media.keep("s", block(image.clone())));
    let (b, b_id) = without_id(media.keep("s", block(audio.clone())));
    let stranger = "0123456789abcdef0123456789abcdef";
    let result = json!({
        "second": media_ref(&b, &b_id),
        "list": [media_ref(&a, &a_id), {"nested": media_ref(&a, &a_id)}],
        "forged": {"type": "image", "id": stranger},
        "not_ours": {"type": "image", "id": "42"},
    });
    let (attached, unknown) = media.referenced(&result);
    let ids: Vec<&str> = attached.iter().map(|a| a.id.as_str()).collect();
    // serde_json keeps object keys sorted: forged, list, not_ours, second.
    assert_eq!(ids, [a_id.as_str(), b_id.as_str()]);
    assert_eq!(serde_json::to_value(&attached[1].block).unwrap(), audio);
    assert_eq!(unknown, [stranger.to_string()]);
}

#[test]
fn sizes_are_decoded_sizes_and_spelled() {
    for (b64, n) in [
        ("", 0),
        ("AA==", 1),
        ("AAA=", 2),
        ("AAAA", 3),
        ("AAAAAA", 4),
        ("AAAAAAA", 5),
    ] {
        assert_eq!(decoded_len(b64), n, "{b64}");
    }
    for (bytes, text) in [
        (4 << 20, "4 MiB"),
        (512 << 10, "512 KiB"),
        (1000, "1000 bytes"),
    ] {
        assert_eq!(spell_size(bytes), text);
    }
}

/// A value the script changed, or an `outputs` rule masked in part, attaches nothing: its block
/// would show what the value no longer does.
#[test]
fn a_changed_value_attaches_nothing() {
    let media = Media::default();
    let link = json!({"type": "resource_link", "uri": "https://x/obj?sig=SECRET", "name": "obj"});
    let value = media.keep("s", block(link));
    let id = value["id"].as_str().unwrap_or_default().to_string();
    let mut masked = value.clone();
    masked["uri"] = json!("***CRET");
    let (attached, unknown) = media.referenced(&json!([masked]));
    assert!(attached.is_empty());
    assert_eq!(unknown, [id]);
    let (attached, _) = media.referenced(&json!([value]));
    assert_eq!(attached.len(), 1);
}
