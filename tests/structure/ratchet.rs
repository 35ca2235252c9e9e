//! What breaks the limits today, compared with what is known to: the known lists may only shrink.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::model::Workspace;
use crate::{MAX_FILE_LINES, MAX_FUNCTION_LINES};

pub struct Findings {
    /// The file ids of each cycle's files.
    pub cycles: Vec<Vec<usize>>,
    /// Files over the limit, with their lines.
    pub files: BTreeMap<String, usize>,
    /// Functions over the limit (`file::name`), with their lines.
    pub functions: BTreeMap<String, usize>,
}

/// The violations allowed for now, with their sizes.
pub struct Known<'a> {
    pub cycles: &'a [&'a [&'a str]],
    pub files: &'a [(&'a str, usize)],
    pub functions: &'a [(&'a str, usize)],
}

impl Findings {
    pub fn of(workspace: &Workspace, allowed_in_cycles: &[&str]) -> Findings {
        let mut files = BTreeMap::new();
        let mut functions = BTreeMap::new();
        for file in &workspace.files {
            let lines = file.parsed.lines - file.parsed.test_lines;
            if lines > MAX_FILE_LINES {
                files.insert(file.path.clone(), lines);
            }
            let mut seen = BTreeMap::<&str, usize>::new();
            for function in &file.parsed.functions {
                let count = seen.entry(&function.name).or_default();
                *count += 1;
                if function.lines() >= MAX_FUNCTION_LINES {
                    let suffix = if *count > 1 {
                        format!("#{count}")
                    } else {
                        String::new()
                    };
                    let key = format!("{}::{}{suffix}", file.path, function.name);
                    functions.insert(key, function.lines());
                }
            }
        }
        Findings {
            cycles: workspace.cycles(allowed_in_cycles),
            files,
            functions,
        }
    }

    fn cycle_paths<'w>(&self, workspace: &'w Workspace) -> Vec<Vec<&'w str>> {
        let path = |f: &usize| workspace.files[*f].path.as_str();
        self.cycles
            .iter()
            .map(|c| c.iter().map(path).collect())
            .collect()
    }

    /// The findings as tables, each cycle with one reference per edge inside it.
    pub fn report(&self, workspace: &Workspace) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} files, {} references between files",
            workspace.files.len(),
            workspace.edges.len()
        );
        let _ = writeln!(out, "\nImport cycles ({}):", self.cycles.len());
        for cycle in &self.cycles {
            let files: Vec<&str> = cycle
                .iter()
                .map(|&f| workspace.files[f].path.as_str())
                .collect();
            let _ = writeln!(out, "  {}", files.join(", "));
            for ((from, to), reference) in &workspace.edges {
                if cycle.contains(from) && cycle.contains(to) {
                    let (from, to) = (&workspace.files[*from].path, &workspace.files[*to].path);
                    let line = reference.line;
                    let _ = writeln!(out, "    {from}:{line} -> {to}   {}", reference.text);
                }
            }
        }
        let _ = writeln!(
            out,
            "\nFiles over {MAX_FILE_LINES} lines ({}):",
            self.files.len()
        );
        for (file, lines) in by_size(&self.files) {
            let _ = writeln!(out, "  {lines:>6}  {file}");
        }
        let _ = writeln!(
            out,
            "\nFunctions of {MAX_FUNCTION_LINES} lines or more ({}):",
            self.functions.len()
        );
        for (function, lines) in by_size(&self.functions) {
            let _ = writeln!(out, "  {lines:>6}  {function}");
        }
        let _ = writeln!(out, "\nAs lists:\n{}", self.as_lists(workspace));
        out
    }

    /// The findings written as the known lists, to paste when the lists are updated.
    fn as_lists(&self, workspace: &Workspace) -> String {
        let mut out = String::from("const KNOWN_CYCLES: &[&[&str]] = &[\n");
        for cycle in self.cycle_paths(workspace) {
            let files: Vec<String> = cycle.iter().map(|f| format!("{f:?}")).collect();
            let _ = writeln!(out, "    &[{}],", files.join(", "));
        }
        out.push_str("];\nconst KNOWN_LONG_FILES: &[(&str, usize)] = &[\n");
        for (file, lines) in &self.files {
            let _ = writeln!(out, "    ({file:?}, {lines}),");
        }
        out.push_str("];\nconst KNOWN_LONG_FUNCTIONS: &[(&str, usize)] = &[\n");
        for (function, lines) in &self.functions {
            let _ = writeln!(out, "    ({function:?}, {lines}),");
        }
        out.push_str("];\n");
        out
    }
}

fn by_size(sizes: &BTreeMap<String, usize>) -> Vec<(&String, &usize)> {
    let mut sorted: Vec<_> = sizes.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    sorted
}

impl Known<'_> {
    /// Everything that fails the check: a violation not listed, a listed one that grew, and a
    /// listed one that is gone.
    pub fn problems_with(&self, cycles: &[Vec<&str>], findings: &Findings) -> Vec<String> {
        let mut problems = Vec::new();
        for cycle in cycles {
            if !self.cycles.iter().any(|known| same_files(known, cycle)) {
                problems.push(format!("new import cycle: {}", cycle.join(", ")));
            }
        }
        for known in self.cycles {
            if !cycles.iter().any(|cycle| same_files(known, cycle)) {
                problems.push(format!(
                    "listed cycle not found (take it off KNOWN_CYCLES, or list the cycle it became): {}",
                    known.join(", ")
                ));
            }
        }
        let sizes = [
            ("file", "KNOWN_LONG_FILES", self.files, &findings.files),
            (
                "function",
                "KNOWN_LONG_FUNCTIONS",
                self.functions,
                &findings.functions,
            ),
        ];
        for (what, list, known, found) in sizes {
            let limit = match what {
                "file" => format!("over {MAX_FILE_LINES} lines"),
                _ => format!("of {MAX_FUNCTION_LINES} lines or more"),
            };
            for (name, &lines) in found {
                match known.iter().find(|(k, _)| k == name) {
                    None => problems.push(format!("new {what} {limit}: {name} ({lines} lines)")),
                    Some(&(_, listed)) if lines > listed => problems.push(format!(
                        "{what} grew from {listed} to {lines} lines: {name} ({list} may only shrink)"
                    )),
                    Some(_) => {}
                }
            }
            for (name, listed) in known {
                if !found.contains_key(*name) {
                    problems.push(format!(
                        "listed {what} is within the limit now (take it off {list}): {name} ({listed})"
                    ));
                }
            }
        }
        problems
    }

    pub fn problems(&self, findings: &Findings, workspace: &Workspace) -> Vec<String> {
        self.problems_with(&findings.cycle_paths(workspace), findings)
    }
}

fn same_files(known: &[&str], cycle: &[&str]) -> bool {
    let mut known = known.to_vec();
    known.sort_unstable();
    known == cycle
}
