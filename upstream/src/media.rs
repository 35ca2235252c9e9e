//! The media of one eval: the non-text blocks (image, audio, embedded blob resource, resource
//! link) of its upstream tool results, kept host-side while the script works with small values
//! that name them.
//!
//! A script never holds the bytes. For each such block it gets a value with the block's type
//! and metadata, its size, and an `id` ([`Media::keep`]):
//!
//! | upstream block | the script's value |
//! |---|---|
//! | `image`, `audio` | `{type, mimeType, size, id}` |
//! | `resource` with a `blob` | `{type: "resource", uri, mimeType?, size, id}` |
//! | `resource` with `text` | `{type: "resource", uri, mimeType?, text}` — the text itself, as a text block is |
//! | `resource_link` | the link's own fields (`uri`, `name`, `mimeType?`, …) and `id` |
//!
//! (`annotations` and `_meta` are kept; `size` is the decoded size of the base64 data.)
//!
//! When the script's result contains such a value (itself, or anywhere inside it), the eval's
//! MCP result carries the block again, bytes and all ([`Media::referenced`]). The `id` is 32
//! random hex digits: a script can only name media its own calls received, so a value the
//! output policy masked or removed — which the script never saw — is never attached, and
//! neither is another eval's.
//!
//! Every eval has a budget, `limits.maxMediaBytes` (default [`Media::DEFAULT_MAX_BYTES`]): the
//! bytes kept add up against it, and a block that would pass it is dropped at once; its value
//! then has no `id` but an `omitted` note saying why, and the call still succeeds. A resource
//! link has no bytes and costs nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use codemode_policies::neutralize;
use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::{Map, Value, json};

/// The media one eval received (see the module docs). A cheap handle: clones share the store,
/// which lives as long as the last of them.
#[derive(Clone)]
pub struct Media(Arc<Mutex<Shelf>>);

struct Shelf {
    max_bytes: u64,
    used: u64,
    /// Each kept block, with the value the script was given for it.
    kept: HashMap<String, (ContentBlock, Value)>,
}

/// One block an eval kept, as saved with a parked eval ([`Media::saved`], [`Media::restore`]):
/// the eval resumed elsewhere can still attach what its calls received before it was parked.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeptMedia {
    /// The `id` the script's value names it by.
    pub id: String,
    /// The block as the upstream sent it.
    pub block: ContentBlock,
    /// The value the script was given for it.
    pub value: Value,
}

/// One block of media a result refers to, to go beside the eval result's text block.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    /// The `id` the result names it by.
    pub id: String,
    /// The block as the upstream sent it.
    pub block: ContentBlock,
}

impl Attachment {
    /// The bytes its data decodes to (an image's or audio's data, an embedded blob); `None`
    /// for a block that carries none (a resource link, an embedded text).
    pub fn size(&self) -> Option<u64> {
        data_len(&self.block)
    }
}

impl Default for Media {
    /// A store of [`Media::DEFAULT_MAX_BYTES`].
    fn default() -> Self {
        Media::new(Self::DEFAULT_MAX_BYTES)
    }
}

impl std::fmt::Debug for Media {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shelf = self.shelf();
        f.debug_struct("Media")
            .field("max_bytes", &shelf.max_bytes)
            .field("used", &shelf.used)
            .field("kept", &shelf.kept.len())
            .finish()
    }
}

impl Media {
    /// The default budget of an eval's media (`limits.maxMediaBytes`'s default, 4 MiB).
    pub const DEFAULT_MAX_BYTES: u64 = codemode_config::DEFAULT_MAX_MEDIA_BYTES;

    /// An empty store that keeps at most `max_bytes` of media.
    pub fn new(max_bytes: u64) -> Self {
        Media(Arc::new(Mutex::new(Shelf {
            max_bytes,
            used: 0,
            kept: HashMap::new(),
        })))
    }

    fn shelf(&self) -> std::sync::MutexGuard<'_, Shelf> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes kept so far.
    pub fn used(&self) -> u64 {
        self.shelf().used
    }

    /// The script's value of `block`, a non-text block `server` sent (see the module docs):
    /// the block is kept under a new id, or dropped with a note when it would pass the budget.
    pub fn keep(&self, server: &str, block: ContentBlock) -> Value {
        let (mut value, size) = describe(&block);
        let Value::Object(fields) = &mut value else {
            return value;
        };
        if size.is_none() {
            // An embedded text resource: its value is its text, nothing to keep.
            return value;
        }
        // What holding it costs: the block as received (its metadata counts, not only the
        // decoded bytes), so that nothing an upstream sends escapes the budget.
        let cost = serde_json::to_vec(&block).map_or(u64::MAX, |b| b.len() as u64);
        let mut shelf = self.shelf();
        if shelf.used.saturating_add(cost) > shelf.max_bytes {
            let kind = fields
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("media");
            let note = format!(
                "{kind} of {cost} bytes from `{}` is over limits.maxMediaBytes ({}) of this eval, {} of which are used: it was dropped",
                neutralize(server),
                spell_size(shelf.max_bytes),
                shelf.used
            );
            fields.insert("omitted".into(), Value::String(note));
            return value;
        }
        let id = new_id();
        shelf.used += cost;
        fields.insert("id".into(), Value::String(id.clone()));
        shelf.kept.insert(id, (block, value.clone()));
        value
    }

    /// Every block kept, to be saved with the eval when it parks.
    pub fn saved(&self) -> Vec<KeptMedia> {
        let shelf = self.shelf();
        let mut kept: Vec<KeptMedia> = shelf
            .kept
            .iter()
            .map(|(id, (block, value))| KeptMedia {
                id: id.clone(),
                block: block.clone(),
                value: value.clone(),
            })
            .collect();
        kept.sort_by(|a, b| a.id.cmp(&b.id));
        kept
    }

    /// Keeps again the blocks a parked eval saved ([`saved`](Self::saved)), under their ids,
    /// within this store's budget (the config in force may have lowered it since: a block past
    /// it is left out, and a result naming it gets the usual `not attached` note). Returns how
    /// many were left out.
    pub fn restore(&self, saved: Vec<KeptMedia>) -> usize {
        let mut shelf = self.shelf();
        let mut left_out = 0;
        for media in saved {
            let cost = serde_json::to_vec(&media.block).map_or(u64::MAX, |b| b.len() as u64);
            if shelf.used.saturating_add(cost) > shelf.max_bytes || !is_media_id(&media.id) {
                left_out += 1;
                continue;
            }
            shelf.used += cost;
            shelf.kept.insert(media.id, (media.block, media.value));
        }
        left_out
    }

    /// The blocks `result` refers to, in order of first reference, each once, and the ids of
    /// references to nothing kept here. A reference is an object, at any depth, whose `type` is
    /// `image`, `audio`, `resource` or `resource_link` and whose `id` has the form of a media
    /// id; other objects with a `type` and an `id` are the script's own data.
    pub fn referenced(&self, result: &Value) -> (Vec<Attachment>, Vec<String>) {
        let shelf = self.shelf();
        let mut attached: Vec<Attachment> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        for (reference, id) in references_in(result) {
            if attached.iter().any(|a| a.id == id) || unknown.contains(&id) {
                continue;
            }
            // Only the value exactly as the script was given it: one an `outputs` rule masked
            // in part, or the script changed, would attach more than it shows.
            match shelf.kept.get(&id) {
                Some((block, value)) if value == reference => attached.push(Attachment {
                    id,
                    block: block.clone(),
                }),
                _ => unknown.push(id),
            }
        }
        (attached, unknown)
    }
}

/// Each media reference in `value` with its object: every object (at any depth) whose `type`
/// is `image`, `audio`, `resource` or `resource_link` and whose `id` has the form of a media
/// id (32 lowercase hex digits). Other objects with a `type` and an `id` are the script's own
/// data, not references.
fn references_in(value: &Value) -> Vec<(&Value, String)> {
    fn walk<'v>(value: &'v Value, found: &mut Vec<(&'v Value, String)>) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            Value::Object(map) => {
                if let (Some(Value::String(kind)), Some(Value::String(id))) =
                    (map.get("type"), map.get("id"))
                    && MEDIA_TYPES.contains(&kind.as_str())
                    && is_media_id(id)
                {
                    found.push((value, id.clone()));
                }
                map.values().for_each(|v| walk(v, found));
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(value, &mut found);
    found
}

/// The block types that are media.
const MEDIA_TYPES: [&str; 4] = ["image", "audio", "resource", "resource_link"];

/// Whether `text` has the form of an id [`Media::keep`] gives.
pub(crate) fn is_media_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The script's value of `block` without its bytes, and the bytes it would keep (`None`: it
/// keeps nothing — an embedded text resource, which stays text).
fn describe(block: &ContentBlock) -> (Value, Option<u64>) {
    let Ok(Value::Object(mut fields)) = serde_json::to_value(block) else {
        return (Value::Null, None);
    };
    let size = match block {
        ContentBlock::ResourceLink(_) => Some(0),
        _ => data_len(block),
    };
    if let ContentBlock::Resource(_) = block {
        let inner = fields.remove("resource");
        let mut flat = Map::new();
        flat.insert("type".into(), json!("resource"));
        if let Some(Value::Object(inner)) = inner {
            flat.extend(inner.into_iter().filter(|(k, _)| k != "blob"));
        }
        flat.extend(fields.into_iter().filter(|(k, _)| k != "type"));
        fields = flat;
    }
    if matches!(block, ContentBlock::Image(_) | ContentBlock::Audio(_)) {
        fields.remove("data");
    }
    if let (Some(size), false) = (size, matches!(block, ContentBlock::ResourceLink(_))) {
        fields.insert("size".into(), json!(size));
    }
    (Value::Object(fields), size)
}

/// The bytes `block`'s data decodes to: an image's or audio's data, an embedded blob; `None`
/// for a block that carries none.
fn data_len(block: &ContentBlock) -> Option<u64> {
    match block {
        ContentBlock::Image(image) => Some(decoded_len(&image.data)),
        ContentBlock::Audio(audio) => Some(decoded_len(&audio.data)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::BlobResourceContents { blob, .. } => Some(decoded_len(blob)),
            _ => None,
        },
        _ => None,
    }
}

/// The bytes `base64` decodes to (from its length and padding; not checked).
pub(crate) fn decoded_len(base64: &str) -> u64 {
    let text = base64.trim_end();
    let padding = text.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    let len = text.len() as u64;
    (len / 4 * 3 + (len % 4) * 3 / 4).saturating_sub(padding as u64)
}

/// `4 MiB`, `512 KiB` or `100 bytes`.
pub(crate) fn spell_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        b if b >= KIB * KIB && b % (KIB * KIB) == 0 => format!("{} MiB", b / (KIB * KIB)),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// A new, unguessable media id: 16 random bytes as hex.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: a hash of the time, the store's address and a counter (still
        // unguessable in practice, and an id is only good within its eval).
        use sha2::Digest;
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = format!("{:?}{:p}{n}", std::time::Instant::now(), &bytes);
        bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..16]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
