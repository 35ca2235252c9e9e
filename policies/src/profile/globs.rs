//! Lists of tool-name globs, compiled once.
//!
//! Globs follow [`globset`] syntax: `*` and `?` match any characters (tool names have no `/`, so
//! `*` crosses everything, including the `__` between a server name and a tool name:
//! `filesystem__*` matches `filesystem__dir__list`), `[abc]` classes, `{a,b}` alternatives, and
//! `\` escapes. Matching is case-sensitive.

use globset::{Candidate, GlobSet, GlobSetBuilder};

/// Globs in configuration order, plus their compiled set.
#[derive(Debug, Clone)]
pub(crate) struct GlobList {
    globs: Vec<String>,
    set: GlobSet,
}

impl Default for GlobList {
    fn default() -> Self {
        GlobList {
            globs: Vec::new(),
            set: GlobSet::empty(),
        }
    }
}

impl GlobList {
    /// Compiles the globs. On error, returns the index of the bad glob and a message naming
    /// it and the problem as globset reports it.
    pub(crate) fn new(globs: Vec<String>) -> Result<Self, Vec<(usize, String)>> {
        let mut builder = GlobSetBuilder::new();
        let mut errors = Vec::new();
        for (i, g) in globs.iter().enumerate() {
            match codemode_config::tool_glob(g) {
                Ok(glob) => {
                    builder.add(glob);
                }
                Err(e) => errors.push((i, e)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let set = builder
            .build()
            .map_err(|e| vec![(0, format!("invalid globs: {e}"))])?;
        Ok(GlobList { globs, set })
    }

    /// The globs as written.
    pub(crate) fn globs(&self) -> &[String] {
        &self.globs
    }

    /// The first glob (in configuration order) that matches `name`.
    pub(crate) fn first_match(&self, name: &str) -> Option<&str> {
        self.first_index(name).map(|i| self.globs[i].as_str())
    }

    /// The index of the first glob (in configuration order) that matches `name`.
    pub(crate) fn first_index(&self, name: &str) -> Option<usize> {
        let candidate = Candidate::new(name);
        let mut hits = Vec::new();
        self.set.matches_candidate_into(&candidate, &mut hits);
        hits.into_iter().min()
    }
}

/// Which names of a kind a profile lets through (its `resources` and `prompts`): those
/// matching `allow` (every one when absent) and no `deny` glob.
#[derive(Debug, Clone, Default)]
pub(crate) struct Access {
    pub(crate) allow: Option<GlobList>,
    pub(crate) deny: GlobList,
}

impl Access {
    /// Whether `name` gets through.
    pub(crate) fn lets(&self, name: &str) -> bool {
        self.deny.first_index(name).is_none()
            && self
                .allow
                .as_ref()
                .is_none_or(|allow| allow.first_index(name).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(globs: &[&str]) -> GlobList {
        GlobList::new(globs.iter().map(ToString::to_string).collect()).unwrap()
    }

    #[test]
    fn matching() {
        let l = list(&[
            "filesystem__delete_*",
            "filesystem__*",
            "github__{search,list}*",
            "t?me__now",
        ]);
        let cases: &[(&str, Option<&str>)] = &[
            ("filesystem__delete_file", Some("filesystem__delete_*")),
            ("filesystem__read_file", Some("filesystem__*")),
            ("filesystem__dir__list", Some("filesystem__*")),
            ("filesystem_x", None),
            ("FILESYSTEM__read", None),
            ("github__search_code", Some("github__{search,list}*")),
            ("github__get", None),
            ("time__now", Some("t?me__now")),
            ("a/b", None),
        ];
        for (name, want) in cases {
            assert_eq!(l.first_match(name), *want, "{name}");
        }
        assert_eq!(GlobList::default().first_match("x"), None);
        assert_eq!(list(&["*"]).first_match("a__b/c"), Some("*"));
    }

    #[test]
    fn errors_name_the_glob_and_the_problem() {
        let err = GlobList::new(vec![
            "ok".into(),
            "fs__[".into(),
            "a{b".into(),
            String::new(),
        ])
        .unwrap_err();
        let got: Vec<(usize, &str)> = err.iter().map(|(i, m)| (*i, m.as_str())).collect();
        assert_eq!(got[0].0, 1);
        assert!(
            got[0].1.contains("`fs__[`") && got[0].1.contains("unclosed character class"),
            "{}",
            got[0].1
        );
        assert_eq!(got[1].0, 2);
        assert!(
            got[1].1.contains("`a{b`") && got[1].1.contains("unclosed alternate"),
            "{}",
            got[1].1
        );
        assert_eq!(got[2].0, 3);
        assert!(got[2].1.contains("empty glob"));
    }
}
