//! `evaluation.classification` and `evaluation.localAllowDestructive`: the tools' classes
//! ([`Classification`]).

use serde_json::Value;

use super::globs::glob_list;
use crate::profile::GlobList;
use crate::{Class, Classification};
use codemode_config::{JsonPath, Reader};

/// Reads `classification` (`{"read"?: [globs], "write"?: [globs], "destructive"?: [globs]}`;
/// another key, such as a misspelt class, is an unknown-key error naming the three) and
/// `localAllowDestructive` (a boolean, default `true`) of the `evaluation` object at `path`.
pub(crate) fn read_classification(
    r: &mut Reader,
    classes: Option<&Value>,
    local: Option<&Value>,
    path: &JsonPath,
) -> Classification {
    let read = codemode_config::read_classification(r, classes, local, path);
    let cpath = path.key("classification");
    let mut globs: [GlobList; 3] = Default::default();
    for (class, list) in [
        (Class::Read, read.read),
        (Class::Write, read.write),
        (Class::Destructive, read.destructive),
    ] {
        if let Some(list) = list.and_then(|l| glob_list(r, l, &cpath.key(class.as_str()))) {
            globs[class as usize] = list;
        }
    }
    Classification::new(globs, read.local_allow_destructive.unwrap_or(true))
}
