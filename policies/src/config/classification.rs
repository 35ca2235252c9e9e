//! `evaluation.classification` and `evaluation.localAllowDestructive`: the tools' classes
//! ([`Classification`]).

use super::globs::glob_list;
use crate::profile::GlobList;
use crate::{Class, Classification};
use codemode_config::{ClassificationRead, JsonPath, Reader};

/// The classes as `codemode_config` read them from the `evaluation` object at `path`
/// (`classification`: `{"read"?: [globs], "write"?: [globs], "destructive"?: [globs]}`, and
/// `localAllowDestructive`, default `true`).
pub(crate) fn read_classification(
    r: &mut Reader,
    read: ClassificationRead,
    path: &JsonPath,
) -> Classification {
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
