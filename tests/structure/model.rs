//! The crates as a module tree (from each crate root through its `mod x;` declarations), the
//! references between files once imports and re-exports are resolved, and the cycles among them.

use std::collections::{BTreeMap, HashMap};

use crate::parse::{LocalModule, ParsedFile, parse};

pub struct SourceFile {
    /// Relative to the workspace, with `/`.
    pub path: String,
    pub parsed: ParsedFile,
    /// The global module id of each of the file's local modules.
    modules: Vec<usize>,
}

struct Module {
    file: usize,
    local: usize,
    parent: Option<usize>,
    root: usize,
    children: HashMap<String, usize>,
}

/// One reference that makes a file depend on another: where it is and what it names.
#[derive(Clone, Debug)]
pub struct Reference {
    pub line: usize,
    pub text: String,
}

pub struct Workspace {
    pub files: Vec<SourceFile>,
    modules: Vec<Module>,
    /// `(from, to) → the first reference`, between distinct files.
    pub edges: BTreeMap<(usize, usize), Reference>,
    /// Crate roots and `mod x;` declarations whose file was not found.
    pub missing: Vec<String>,
}

/// What a path names.
#[derive(Clone, Copy, Debug)]
enum Target {
    Module(usize),
    /// An item (type, function, constant…) defined in this file.
    Item(usize),
    /// Another crate, the standard library or the prelude.
    External,
    NotFound,
}

/// How far imports are followed through other imports before giving up (a guard against loops).
const MAX_RESOLVE_DEPTH: u8 = 24;

impl Workspace {
    /// Reads every crate from its root file through `read` (which returns `None` for a file that
    /// does not exist) and resolves the references between files.
    pub fn load(roots: &[&str], read: &dyn Fn(&str) -> Option<String>) -> Workspace {
        let mut workspace = Workspace {
            files: Vec::new(),
            modules: Vec::new(),
            edges: BTreeMap::new(),
            missing: Vec::new(),
        };
        for root in roots {
            match read(root) {
                Some(source) => workspace.load_file(root, &source, None, "crate", read),
                None => workspace.missing.push(root.to_string()),
            }
        }
        workspace.resolve_edges();
        workspace
    }

    fn load_file(
        &mut self,
        path: &str,
        source: &str,
        parent: Option<usize>,
        name: &str,
        read: &dyn Fn(&str) -> Option<String>,
    ) {
        let parsed = parse(source);
        let file = self.files.len();
        let mut ids = Vec::new();
        for (local, module) in parsed.modules.iter().enumerate() {
            let id = self.modules.len();
            let (parent, name) = match module.parent {
                None => (parent, name),
                Some(p) => (Some(ids[p]), module.name.as_str()),
            };
            let root = parent.map_or(id, |p| self.modules[p].root);
            if let Some(p) = parent {
                self.modules[p].children.insert(name.to_string(), id);
            }
            self.modules.push(Module {
                file,
                local,
                parent,
                root,
                children: HashMap::new(),
            });
            ids.push(id);
        }
        let mut children = Vec::new();
        for (local, module) in parsed.modules.iter().enumerate() {
            let dir = child_dir(path, &parsed.modules, local);
            for decl in &module.declared {
                let candidates = match &decl.path {
                    Some(explicit) => vec![join(parent_dir(path), explicit)],
                    None => vec![
                        join(&dir, &format!("{}.rs", decl.name)),
                        join(&dir, &format!("{}/mod.rs", decl.name)),
                    ],
                };
                children.push((ids[local], decl.name.clone(), candidates));
            }
        }
        self.files.push(SourceFile {
            path: path.to_string(),
            parsed,
            modules: ids,
        });
        for (parent, name, candidates) in children {
            let found = candidates
                .iter()
                .find_map(|c| read(c).map(|source| (c, source)));
            match found {
                Some((candidate, source)) => {
                    self.load_file(candidate, &source, Some(parent), &name, read);
                }
                None => self.missing.push(format!("{path}: mod {name}")),
            }
        }
    }

    fn local(&self, module: usize) -> &LocalModule {
        let m = &self.modules[module];
        &self.files[m.file].parsed.modules[m.local]
    }

    /// What `name` means in `module`: with `scope`, as the first segment of a path written in
    /// it (its function-local imports count too).
    fn lookup(&self, module: usize, name: &str, more: bool, scope: bool, depth: u8) -> Target {
        if depth > MAX_RESOLVE_DEPTH {
            return Target::NotFound;
        }
        let child = self.modules[module].children.get(name).copied();
        let local = self.local(module);
        match child {
            Some(child) if more || !local.items.contains(name) => return Target::Module(child),
            _ if local.items.contains(name) => return Target::Item(self.modules[module].file),
            _ => {}
        }
        let visible = |import: &&crate::parse::Import| scope || !import.in_fn;
        for import in local.imports.iter().filter(visible) {
            if import.alias.as_deref() == Some(name) {
                match self.resolve(module, &import.path, depth + 1) {
                    Target::NotFound => {}
                    found => return found,
                }
            }
        }
        for import in local.imports.iter().filter(visible) {
            if import.alias.is_none()
                && let Target::Module(glob) = self.resolve(module, &import.path, depth + 1)
                && glob != module
            {
                match self.lookup(glob, name, more, false, depth + 1) {
                    Target::NotFound | Target::External => {}
                    found => return found,
                }
            }
        }
        Target::NotFound
    }

    /// What a path written in `from` names. A name a module neither defines nor imports (a
    /// macro's, say) is taken to be that module's.
    fn resolve(&self, from: usize, segments: &[String], depth: u8) -> Target {
        let Some(first) = segments.first() else {
            return Target::NotFound;
        };
        let mut current = match first.as_str() {
            "::" => return Target::External,
            "crate" => self.modules[from].root,
            "self" => from,
            "super" => match self.modules[from].parent {
                Some(parent) => parent,
                None => return Target::NotFound,
            },
            name => match self.lookup(from, name, segments.len() > 1, true, depth) {
                Target::Module(module) => module,
                Target::NotFound => return Target::External,
                found => return found,
            },
        };
        for (k, segment) in segments.iter().enumerate().skip(1) {
            match segment.as_str() {
                "self" => continue,
                "super" => match self.modules[current].parent {
                    Some(parent) => current = parent,
                    None => return Target::NotFound,
                },
                name => match self.lookup(current, name, k + 1 < segments.len(), false, depth) {
                    Target::Module(module) => current = module,
                    Target::NotFound => return Target::Item(self.modules[current].file),
                    found => return found,
                },
            }
        }
        Target::Module(current)
    }

    fn add_edge(
        &mut self,
        from: usize,
        target: Target,
        line: usize,
        text: impl FnOnce() -> String,
    ) {
        let Target::Item(to) = target else {
            return;
        };
        if from == to {
            return;
        }
        let reference = Reference { line, text: text() };
        self.edges
            .entry((from, to))
            .and_modify(|known| {
                if line < known.line {
                    *known = reference.clone();
                }
            })
            .or_insert(reference);
    }

    /// Private imports are references where they are written; re-exports (`pub use`) only where
    /// the file's own code uses the name; glob imports for each name the code uses from them;
    /// paths in code where they are written.
    fn resolve_edges(&mut self) {
        for file in 0..self.files.len() {
            for &module in &self.files[file].modules.clone() {
                let mut found = Vec::new();
                let local = self.local(module);
                for import in &local.imports {
                    let target = self.resolve(module, &import.path, 0);
                    let path = import.path.join("::");
                    match (&import.alias, target) {
                        (Some(_), _) if !import.public => {
                            found.push((target, import.line, format!("use {path}")));
                        }
                        (Some(alias), _) => {
                            if let Some(&line) = local.idents.get(alias) {
                                found.push((target, line, format!("{alias} (pub use {path})")));
                            }
                        }
                        (None, Target::Module(glob)) => {
                            let mut used: Vec<_> = local.idents.iter().collect();
                            used.sort_by_key(|(name, line)| (**line, (*name).clone()));
                            for (name, &line) in used {
                                let shadowed = local.items.contains(name)
                                    || local.imports.iter().any(|i| i.alias.as_ref() == Some(name));
                                if !shadowed {
                                    let target = self.lookup(glob, name, false, false, 0);
                                    found.push((target, line, format!("{name} (use {path}::*)")));
                                }
                            }
                        }
                        (None, _) if !import.public => {
                            found.push((target, import.line, format!("use {path}::*")));
                        }
                        (None, _) => {}
                    }
                }
                for path in &local.paths {
                    let target = self.resolve(module, &path.segments, 0);
                    found.push((target, path.line, path.segments.join("::")));
                }
                for (target, line, text) in found {
                    self.add_edge(file, target, line, || text);
                }
            }
        }
    }

    /// The strongly connected components of more than one file, leaving out `allowed` files
    /// (and every reference to or from them); files sorted, components in file order.
    pub fn cycles(&self, allowed: &[&str]) -> Vec<Vec<usize>> {
        let keep = |f: usize| !allowed.contains(&self.files[f].path.as_str());
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); self.files.len()];
        for &(from, to) in self.edges.keys() {
            if keep(from) && keep(to) {
                next[from].push(to);
            }
        }
        let mut components = strongly_connected(&next);
        components.retain(|c| c.len() > 1);
        for component in &mut components {
            component.sort_by(|a, b| self.files[*a].path.cmp(&self.files[*b].path));
        }
        components.sort_by(|a, b| self.files[a[0]].path.cmp(&self.files[b[0]].path));
        components
    }
}

/// Tarjan's algorithm, iterative.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = next.len();
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0; n]);
    let (mut on_stack, mut stack, mut components) = (vec![false; n], Vec::new(), Vec::new());
    let mut counter = 0;
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        while let Some(&(node, edge)) = work.last() {
            if edge == 0 && index[node] == usize::MAX {
                index[node] = counter;
                low[node] = counter;
                counter += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&to) = next[node].get(edge) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if index[to] == usize::MAX {
                    work.push((to, 0));
                } else if on_stack[to] {
                    low[node] = low[node].min(index[to]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

fn parent_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Where the files of modules declared in `local` live.
fn child_dir(path: &str, modules: &[LocalModule], local: usize) -> String {
    match modules[local].parent {
        Some(parent) => join(&child_dir(path, modules, parent), &modules[local].name),
        None => {
            let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
            match file {
                "mod.rs" | "lib.rs" | "main.rs" => dir.to_string(),
                _ => join(dir, file.trim_end_matches(".rs")),
            }
        }
    }
}

/// `dir/relative`, with `..` and `.` folded.
fn join(dir: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}
