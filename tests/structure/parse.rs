//! One source file read as items: its modules (its own and inline `mod x { … }` blocks), their
//! `mod x;` declarations, definitions, imports and the paths their code names, its functions with
//! their first and last lines, and the lines of its `#[cfg(test)]` modules. Whatever sits under
//! `#[cfg(test)]` is skipped, so test code adds no reference, function or module.

use std::collections::{HashMap, HashSet};

use crate::lexer::{Kind, Token, tokenize};

pub struct ParsedFile {
    /// Physical lines.
    pub lines: usize,
    /// Lines of `#[cfg(test)] mod` items, from the attribute to the closing brace.
    pub test_lines: usize,
    /// `modules[0]` is the file's own module; the others are inline `mod x { … }` blocks.
    pub modules: Vec<LocalModule>,
    pub functions: Vec<Function>,
}

#[derive(Default)]
pub struct LocalModule {
    pub name: String,
    pub parent: Option<usize>,
    /// `mod x;` declarations (outside `#[cfg(test)]`): modules in other files.
    pub declared: Vec<ModDecl>,
    /// Names this module defines (types, functions, constants, traits, macros, inline modules).
    pub items: HashSet<String>,
    pub imports: Vec<Import>,
    /// Paths of two segments or more used in code (`crate::a::B`, `super::f`, `child::g`).
    pub paths: Vec<PathRef>,
    /// Bare identifiers used in code, with the first line each is used on.
    pub idents: HashMap<String, usize>,
}

pub struct ModDecl {
    pub name: String,
    /// A `#[path = "…"]` attribute's value.
    pub path: Option<String>,
}

pub struct Import {
    /// The name the import binds; `None` for a glob (`use a::*`).
    pub alias: Option<String>,
    pub path: Vec<String>,
    /// `pub use` or `pub(…) use`: a re-export.
    pub public: bool,
    /// Inside a function body: in scope there only.
    pub in_fn: bool,
    pub line: usize,
}

pub struct PathRef {
    pub segments: Vec<String>,
    pub line: usize,
}

pub struct Function {
    /// The name within the file: `Type::method`, `outer::inner`, `module::function`.
    pub name: String,
    pub first_line: usize,
    /// 0 for a function without a body.
    pub last_line: usize,
}

impl Function {
    pub fn lines(&self) -> usize {
        self.last_line + 1 - self.first_line
    }
}

pub fn parse(source: &str) -> ParsedFile {
    let (tokens, lines) = tokenize(source);
    let mut parser = Parser {
        toks: tokens,
        i: 0,
        depth: 0,
        file: ParsedFile {
            lines,
            test_lines: 0,
            modules: vec![LocalModule::default()],
            functions: Vec::new(),
        },
        simple_names: Vec::new(),
        frames: vec![Frame {
            body: Some(Body::Module(0)),
            module: 0,
        }],
        attrs: Attrs::default(),
        public: false,
        pending: None,
    };
    parser.run();
    let mut file = parser.file;
    file.functions.retain(|f| f.last_line > 0);
    file
}

#[derive(Clone, Copy)]
enum Body {
    Module(usize),
    /// A function, with the bracket depth of its signature.
    Fn(usize, usize),
    /// An `impl` or `trait` block: methods are named after it.
    Named(usize),
}

struct Frame {
    /// `None` for any other block (a struct's fields, an expression's braces).
    body: Option<Body>,
    module: usize,
}

#[derive(Default)]
struct Attrs {
    test: bool,
    path: Option<String>,
    first_line: Option<usize>,
}

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    i: usize,
    /// Open `(` and `[`.
    depth: usize,
    file: ParsedFile,
    /// The names of `impl` and `trait` blocks (`Body::Named`).
    simple_names: Vec<String>,
    frames: Vec<Frame>,
    attrs: Attrs,
    public: bool,
    pending: Option<Body>,
}

const ITEM_KEYWORDS: &[&str] = &[
    "pub",
    "fn",
    "mod",
    "use",
    "impl",
    "struct",
    "enum",
    "union",
    "trait",
    "type",
    "const",
    "static",
    "async",
    "unsafe",
    "extern",
    "macro_rules",
];

impl<'a> Parser<'a> {
    fn at(&self, ahead: usize, text: &str) -> bool {
        self.toks.get(self.i + ahead).is_some_and(|t| t.is(text))
    }

    fn ident_at(&self, ahead: usize) -> Option<&'a str> {
        self.toks
            .get(self.i + ahead)
            .filter(|t| t.is_ident())
            .map(|t| t.text)
    }

    fn prev_is(&self, texts: &[&str]) -> bool {
        self.i > 0 && texts.iter().any(|t| self.toks[self.i - 1].is(t))
    }

    fn module(&self) -> usize {
        self.frames.last().map_or(0, |f| f.module)
    }

    fn local(&mut self) -> &mut LocalModule {
        let module = self.module();
        &mut self.file.modules[module]
    }

    /// Notes an identifier the code uses.
    fn used(&mut self, ident: &str, line: usize) {
        let idents = &mut self.local().idents;
        if !idents.contains_key(ident) {
            idents.insert(ident.to_string(), line);
        }
    }

    fn at_module_level(&self) -> bool {
        matches!(
            self.frames.last(),
            Some(Frame {
                body: Some(Body::Module(_)),
                ..
            })
        )
    }

    fn define(&mut self, name: &str) {
        if self.at_module_level() {
            self.local().items.insert(name.to_string());
        }
    }

    fn run(&mut self) {
        while self.i < self.toks.len() {
            let token = self.toks[self.i];
            if token.is("#") && (self.at(1, "[") || (self.at(1, "!") && self.at(2, "["))) {
                self.attribute();
            } else if self.attrs.test {
                self.skip_test_item();
            } else if token.is("pub") {
                self.public = true;
                self.i += 1;
                if self.at(0, "(") {
                    self.i = self.group_end(self.i);
                }
            } else {
                let attrs = std::mem::take(&mut self.attrs);
                let public = std::mem::take(&mut self.public);
                match token.kind {
                    Kind::Punct => self.punct(token),
                    Kind::Ident => self.ident(token, attrs, public),
                    Kind::Literal | Kind::Lifetime => self.i += 1,
                }
            }
        }
    }

    /// The index after the bracket group that opens at `open`.
    fn group_end(&self, open: usize) -> usize {
        let mut depth = 0usize;
        for (j, t) in self.toks.iter().enumerate().skip(open) {
            if t.kind != Kind::Punct {
                continue;
            }
            match t.text {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
        }
        self.toks.len()
    }

    fn attribute(&mut self) {
        let line = self.toks[self.i].line;
        let inner = self.at(1, "!");
        let open = self.i + if inner { 2 } else { 1 };
        let end = self.group_end(open);
        let content = &self.toks[open + 1..end.saturating_sub(1).max(open + 1)];
        self.i = end;
        if inner {
            return;
        }
        self.attrs.first_line.get_or_insert(line);
        match content {
            [cfg, rest @ ..] if cfg.is("cfg") && rest.first().is_some_and(|t| t.is("(")) => {
                let mut j = 1;
                if cfg_is_test_only(rest, &mut j) {
                    self.attrs.test = true;
                }
            }
            [path, eq, value] if path.is("path") && eq.is("=") && value.kind == Kind::Literal => {
                self.attrs.path = Some(value.text.trim_matches('"').to_string());
            }
            _ => {}
        }
    }

    /// Skips the item (or field, or statement) under `#[cfg(test)]`; a module's lines are
    /// counted as test lines.
    fn skip_test_item(&mut self) {
        let attrs = std::mem::take(&mut self.attrs);
        self.public = false;
        if self.i >= self.toks.len() {
            return;
        }
        let first_line = attrs.first_line.unwrap_or(self.toks[self.i].line);
        while self.at(0, "pub") {
            self.i += 1;
            if self.at(0, "(") {
                self.i = self.group_end(self.i);
            }
        }
        let is_module = self.at(0, "mod");
        let is_item = ITEM_KEYWORDS.iter().any(|k| self.at(0, k));
        let mut depth = 0i64;
        let mut j = self.i;
        while j < self.toks.len() {
            let t = self.toks[j];
            if t.kind == Kind::Punct {
                match t.text {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" => depth -= 1,
                    // The enclosing block ends: the item was the last thing in it.
                    "}" if depth == 0 => break,
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            j += 1;
                            break;
                        }
                    }
                    ";" if depth == 0 => {
                        j += 1;
                        break;
                    }
                    "," if depth == 0 && !is_item => {
                        j += 1;
                        break;
                    }
                    _ => {}
                }
            }
            j += 1;
        }
        let j = j.max(self.i + 1).min(self.toks.len());
        if is_module {
            self.file.test_lines += self.toks[j - 1].line + 1 - first_line;
        }
        self.i = j;
    }

    fn punct(&mut self, token: Token<'a>) {
        self.i += 1;
        match token.text {
            "{" => {
                let body = self.pending.take();
                let module = match body {
                    Some(Body::Module(m)) => m,
                    _ => self.module(),
                };
                self.frames.push(Frame { body, module });
            }
            "}" if self.frames.len() > 1 => {
                if let Some(Frame {
                    body: Some(Body::Fn(index, _)),
                    ..
                }) = self.frames.pop()
                {
                    self.file.functions[index].last_line = token.line;
                }
            }
            ";" => {
                if matches!(self.pending, Some(Body::Fn(_, depth)) if depth == self.depth) {
                    self.pending = None;
                }
            }
            "(" | "[" => self.depth += 1,
            ")" | "]" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
    }

    fn ident(&mut self, token: Token<'a>, attrs: Attrs, public: bool) {
        let next = self.ident_at(1);
        match (token.text, next) {
            ("mod", Some(name)) => self.module_item(name, attrs),
            // `use<'a>` is a bound (precise capturing), not an import.
            ("use", _) if !self.at(1, "<") => self.use_item(token.line, public),
            ("fn", Some(name)) => {
                let qualified = self.qualify(name);
                self.pending = Some(Body::Fn(self.file.functions.len(), self.depth));
                self.file.functions.push(Function {
                    name: qualified,
                    first_line: token.line,
                    last_line: 0,
                });
                self.define(name);
                self.i += 2;
            }
            ("impl", _) if self.i == 0 || self.prev_is(&[";", "}", "{", "]", "unsafe"]) => {
                let name = self.impl_name();
                self.pending = Some(Body::Named(self.simple_names.len()));
                self.simple_names.push(name);
                self.i += 1;
            }
            ("trait", Some(name)) => {
                self.define(name);
                self.pending = Some(Body::Named(self.simple_names.len()));
                self.simple_names.push(name.to_string());
                self.i += 2;
            }
            ("struct" | "enum" | "union" | "type" | "const" | "static" | "macro_rules", _) => {
                let skip = if self.at(1, "mut") || self.at(1, "!") {
                    2
                } else {
                    1
                };
                let not_items = ["fn", "unsafe", "async", "extern", "_", "mut"];
                if let Some(name) = self.ident_at(skip).filter(|n| !not_items.contains(n)) {
                    self.define(name);
                }
                self.i += 1;
            }
            _ if self.at(1, "::")
                && self.ident_at(2).is_some()
                && !self.prev_is(&["::", "."])
                && token.text != "Self" =>
            {
                self.path(token)
            }
            _ => {
                if !self.prev_is(&["."]) {
                    self.used(token.text, token.line);
                }
                self.i += 1;
            }
        }
    }

    fn module_item(&mut self, name: &'a str, attrs: Attrs) {
        if self.at(2, ";") {
            if self.at_module_level() {
                self.local().declared.push(ModDecl {
                    name: name.to_string(),
                    path: attrs.path,
                });
            }
            self.i += 3;
        } else if self.at(2, "{") {
            let parent = self.module();
            self.define(name);
            self.file.modules.push(LocalModule {
                name: name.to_string(),
                parent: Some(parent),
                ..LocalModule::default()
            });
            self.pending = Some(Body::Module(self.file.modules.len() - 1));
            self.i += 2;
        } else {
            self.i += 1;
        }
    }

    fn path(&mut self, first: Token<'a>) {
        let mut segments = vec![first.text.to_string()];
        let mut j = self.i + 1;
        while self.toks.get(j).is_some_and(|t| t.is("::"))
            && let Some(next) = self.toks.get(j + 1).filter(|t| t.is_ident())
        {
            segments.push(next.text.to_string());
            j += 2;
        }
        self.i = j;
        self.used(first.text, first.line);
        let line = first.line;
        self.local().paths.push(PathRef { segments, line });
    }

    fn use_item(&mut self, line: usize, public: bool) {
        self.i += 1;
        let mut trees = Vec::new();
        self.use_tree(&[], &mut trees);
        while self.i < self.toks.len() && !self.at(0, ";") {
            self.i += 1;
        }
        self.i += 1;
        let in_fn = !self.at_module_level();
        for (alias, path) in trees {
            self.local().imports.push(Import {
                alias,
                path,
                public,
                in_fn,
                line,
            });
        }
    }

    fn use_tree(&mut self, prefix: &[String], out: &mut Vec<(Option<String>, Vec<String>)>) {
        let mut path = prefix.to_vec();
        if self.at(0, "::") {
            if path.is_empty() {
                path.push("::".to_string());
            }
            self.i += 1;
        }
        loop {
            let Some(token) = self.toks.get(self.i).copied() else {
                return;
            };
            if token.is("{") {
                self.i += 1;
                while self.i < self.toks.len() && !self.at(0, "}") {
                    let before = self.i;
                    self.use_tree(&path, out);
                    if self.at(0, ",") || self.i == before {
                        self.i += 1;
                    }
                }
                self.i += 1;
                return;
            }
            if token.is("*") {
                self.i += 1;
                out.push((None, path));
                return;
            }
            if !token.is_ident() {
                return;
            }
            path.push(token.text.to_string());
            self.i += 1;
            if self.at(0, "::") {
                self.i += 1;
                continue;
            }
            if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
                path.pop();
            }
            let alias = if self.at(0, "as") {
                self.i += 2;
                self.toks[self.i - 1].text.to_string()
            } else {
                path.last().cloned().unwrap_or_default()
            };
            out.push((Some(alias), path));
            return;
        }
    }

    /// The type an `impl` block is for: `impl<T> Trait for Type<T>` gives `Type`.
    fn impl_name(&self) -> String {
        let mut j = self.i + 1;
        if self.toks.get(j).is_some_and(|t| t.is("<")) {
            let mut angle = 0i64;
            while let Some(t) = self.toks.get(j) {
                j += 1;
                angle += i64::from(t.is("<")) - i64::from(t.is(">"));
                if angle == 0 {
                    break;
                }
            }
        }
        let (mut angle, mut parens, mut name) = (0i64, 0i64, "");
        while let Some(t) = self.toks.get(j) {
            if t.is("{") || t.is(";") || t.is("where") {
                break;
            }
            angle += i64::from(t.is("<")) - i64::from(t.is(">"));
            parens += i64::from(t.is("(") || t.is("[")) - i64::from(t.is(")") || t.is("]"));
            let keyword = ["dyn", "for", "mut", "const", "unsafe", "impl"].contains(&t.text);
            if angle == 0 && parens == 0 && t.is_ident() && !keyword {
                name = t.text;
            }
            j += 1;
        }
        name.to_string()
    }

    /// `name` prefixed by the inline modules, `impl`/`trait` blocks and functions it sits in.
    fn qualify(&self, name: &str) -> String {
        let mut parts = Vec::new();
        for frame in &self.frames {
            match frame.body {
                Some(Body::Module(0)) | None => {}
                Some(Body::Module(m)) => parts.push(self.file.modules[m].name.as_str()),
                Some(Body::Fn(index, _)) => parts.push(self.simple_name_of_fn(index)),
                Some(Body::Named(index)) => parts.push(self.simple_names[index].as_str()),
            }
        }
        parts.push(name);
        parts.join("::")
    }

    fn simple_name_of_fn(&self, index: usize) -> &str {
        let name = &self.file.functions[index].name;
        name.rsplit("::").next().unwrap_or(name)
    }
}

/// Whether a `cfg(…)` predicate (from its `(`) holds only in test builds: `test`, `all(test, …)`,
/// `any(test, all(test, …))`; `not(…)` and anything else may hold outside tests.
fn cfg_is_test_only(tokens: &[Token<'_>], j: &mut usize) -> bool {
    let Some(token) = tokens.get(*j) else {
        return false;
    };
    *j += 1;
    match token.text {
        "test" => true,
        "all" | "any" | "not" if tokens.get(*j).is_some_and(|t| t.is("(")) => {
            *j += 1;
            let mut results = Vec::new();
            while *j < tokens.len() && !tokens[*j].is(")") {
                results.push(cfg_is_test_only(tokens, j));
                if tokens.get(*j).is_some_and(|t| t.is(",")) {
                    *j += 1;
                }
            }
            *j += 1;
            match token.text {
                "all" => results.contains(&true),
                "any" => !results.is_empty() && results.iter().all(|&r| r),
                _ => false,
            }
        }
        _ => {
            if tokens.get(*j).is_some_and(|t| t.is("=")) {
                *j += 2;
            }
            false
        }
    }
}
