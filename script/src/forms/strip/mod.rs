//! TypeScript type stripping that keeps every position: each piece of type syntax becomes the
//! same number of spaces (line breaks kept), the approach of `ts-blank-space` and Node's
//! `--strip-types`. Where blanking alone would change what the code means (automatic
//! semicolon insertion), a character is moved or a `;` is written into the blanked space.
//!
//! TypeScript that needs a transform rather than blanking (`enum`, `namespace` with values,
//! parameter properties, decorators, `import x = require(…)`, `export =`) is an error naming
//! the construct.
//!
//! The same pass turns a top-level `export default <function or expression>` into an
//! expression statement (`;0, <function or expression>`), whose value the sandbox calls.

mod members;

use std::collections::HashMap;

use oxc_ast::ast::{
    ArrowFunctionExpression, Class, ClassElement, Declaration, ExportDefaultDeclarationKind,
    ExportSpecifier, FormalParameter, ImportSpecifier, ModuleDeclaration, Statement,
    TSAsExpression, TSClassImplements, TSNonNullExpression, TSSatisfiesExpression, TSThisParameter,
    TSTypeAnnotation, TSTypeAssertion, TSTypeParameterDeclaration, TSTypeParameterInstantiation,
    VariableDeclarator,
};
use oxc_ast::ast::{Decorator, TSIndexSignature};
use oxc_ast_visit::{Visit, walk};
use oxc_span::{GetSpan, Span};

/// Modifier keywords that exist only in TypeScript (blanked where they prefix a class member).
const TS_MODIFIERS: &[&str] = &[
    "public",
    "private",
    "protected",
    "readonly",
    "override",
    "declare",
    "abstract",
];

/// The edits one pass found: byte ranges to blank, characters to write over blanked bytes, and
/// the first construct that cannot be stripped (byte offset, message).
pub(super) struct Stripper<'s> {
    src: &'s str,
    blanks: Vec<(u32, u32)>,
    puts: HashMap<u32, char>,
    pub(super) error: Option<(u32, String)>,
}

impl<'s> Stripper<'s> {
    pub(super) fn new(src: &'s str) -> Self {
        Stripper {
            src,
            blanks: Vec::new(),
            puts: HashMap::new(),
            error: None,
        }
    }

    /// Whether the pass changes nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.blanks.is_empty() && self.puts.is_empty()
    }

    /// The source with the edits applied: same lines, same character columns.
    pub(super) fn apply(&self) -> String {
        let mut mask = vec![false; self.src.len()];
        for &(start, end) in &self.blanks {
            let end = (end as usize).min(mask.len());
            let start = (start as usize).min(end);
            mask[start..end].fill(true);
        }
        let mut out = String::with_capacity(self.src.len());
        for (i, c) in self.src.char_indices() {
            let offset = u32::try_from(i).unwrap_or(u32::MAX);
            if let Some(put) = self.puts.get(&offset) {
                out.push(*put);
            } else if mask[i] && !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        out
    }

    fn blank(&mut self, span: Span) {
        if span.start < span.end {
            self.blanks.push((span.start, span.end));
        }
    }

    /// Blanks a whole statement or class member, keeping a `;` where it started so that the
    /// code before it cannot run on into the code after it.
    fn blank_statement(&mut self, span: Span) {
        self.blank(span);
        self.puts.insert(span.start, ';');
    }

    fn fail(&mut self, offset: u32, message: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some((offset, message.into()));
        }
    }

    fn byte(&self, offset: u32) -> Option<u8> {
        self.src.as_bytes().get(offset as usize).copied()
    }

    /// The offset of the first `ch` in `start..end` (byte-wise; `ch` is ASCII).
    fn find_in(&self, start: u32, end: u32, ch: u8) -> Option<u32> {
        let bytes = self.src.as_bytes();
        let end = (end as usize).min(bytes.len());
        let start = (start as usize).min(end);
        bytes[start..end]
            .iter()
            .position(|b| *b == ch)
            .and_then(|i| u32::try_from(start + i).ok())
    }

    /// Blanks the `?` or `!` marker between a name and what follows it (`x?: T`, `x!: T`).
    fn blank_marker(&mut self, start: u32, end: u32, ch: u8) {
        if let Some(at) = self.find_in(start, end, ch) {
            self.blank(Span::new(at, at + 1));
        }
    }

    /// Blanks TypeScript-only modifier words in `start..end` (the text before a member's key).
    fn blank_modifiers(&mut self, start: u32, end: u32) {
        let end = (end as usize).min(self.src.len());
        let start = (start as usize).min(end);
        let text = &self.src[start..end];
        let mut word_start = None;
        for (i, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            let is_word = c.is_alphanumeric() || c == '_' || c == '$';
            match (word_start, is_word) {
                (None, true) => word_start = Some(i),
                (Some(ws), false) => {
                    if TS_MODIFIERS.contains(&&text[ws..i]) {
                        let (a, b) = (start + ws, start + i);
                        self.blanks.push((a as u32, b as u32));
                    }
                    word_start = None;
                }
                _ => {}
            }
        }
    }

    /// Blanks a list element and the comma after it (`this: T,`, `type A,`).
    fn blank_with_comma(&mut self, span: Span) {
        self.blank(span);
        let rest = &self.src.as_bytes()[(span.end as usize).min(self.src.len())..];
        if let Some(i) = rest.iter().position(|b| !b.is_ascii_whitespace())
            && rest[i] == b','
        {
            let at = span.end + i as u32;
            self.blank(Span::new(at, at + 1));
        }
    }

    /// After `x as T` / `x satisfies T` blanked: when the next line starts with a character
    /// that would continue the expression (`(`, `[`, a template, `+`, `-`, `/`), writes a `;`
    /// into the blanked type so the statement still ends there, as it did in TypeScript.
    fn guard_asi(&mut self, blanked: Span) {
        let rest = &self.src[(blanked.end as usize).min(self.src.len())..];
        let trimmed = rest.trim_start();
        let gap = &rest[..rest.len() - trimmed.len()];
        if gap.contains(['\n', '\r', '\u{2028}', '\u{2029}'])
            && trimmed.starts_with(['(', '[', '`', '+', '-', '/'])
            && blanked.end > blanked.start
        {
            let last = self.char_start_before(blanked.end);
            self.puts.insert(last, ';');
        }
    }

    /// The start of the character that ends just before byte `end`.
    fn char_start_before(&self, end: u32) -> u32 {
        let mut at = (end as usize).min(self.src.len()).saturating_sub(1);
        while at > 0 && !self.src.is_char_boundary(at) {
            at -= 1;
        }
        at as u32
    }

    /// Whether a declaration is type syntax only (blanked), or an error when it needs more.
    fn type_only(&mut self, decl: &Declaration<'_>) -> bool {
        match decl {
            Declaration::TSTypeAliasDeclaration(_) | Declaration::TSInterfaceDeclaration(_) => true,
            Declaration::VariableDeclaration(d) => d.declare,
            Declaration::FunctionDeclaration(f) => f.declare || f.body.is_none(),
            Declaration::ClassDeclaration(c) => c.declare,
            Declaration::TSEnumDeclaration(e) => {
                if !e.declare {
                    self.fail(
                        e.span.start,
                        "TypeScript `enum` needs more than type stripping: use an object \
                         (`const Color = { Red: \"red\" }`)",
                    );
                }
                true
            }
            Declaration::TSNamespaceDeclaration(n) => {
                if !n.declare {
                    self.fail(
                        n.span.start,
                        "TypeScript `namespace` needs more than type stripping: use an object \
                         or plain functions",
                    );
                }
                true
            }
            Declaration::TSExternalModuleDeclaration(m) => {
                if !m.declare {
                    self.fail(
                        m.span.start,
                        "TypeScript `module` declarations need more than type stripping",
                    );
                }
                true
            }
            Declaration::TSGlobalDeclaration(_) => true,
            Declaration::TSImportEqualsDeclaration(d) => {
                if !d.import_kind.is_type() {
                    self.fail(
                        d.span.start,
                        "TypeScript `import … = …` needs more than type stripping: use `const`",
                    );
                }
                true
            }
        }
    }
}

impl<'a> Visit<'a> for Stripper<'_> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        if let Some(decl) = it.as_declaration()
            && self.type_only(decl)
        {
            self.blank_statement(decl.span());
            return;
        }
        walk::walk_statement(self, it);
    }

    fn visit_module_declaration(&mut self, it: &ModuleDeclaration<'a>) {
        match it {
            ModuleDeclaration::ImportDeclaration(d) if d.import_kind.is_type() => {
                self.blank_statement(d.span);
            }
            ModuleDeclaration::ExportNamedDeclaration(d) if d.export_kind.is_type() => {
                self.blank_statement(d.span);
            }
            ModuleDeclaration::ExportFromDeclaration(d) if d.export_kind.is_type() => {
                self.blank_statement(d.span);
            }
            ModuleDeclaration::ExportAllDeclaration(d) if d.export_kind.is_type() => {
                self.blank_statement(d.span);
            }
            ModuleDeclaration::ExportDeclaration(d) if self.type_only(&d.declaration) => {
                self.blank_statement(d.span);
            }
            ModuleDeclaration::TSNamespaceExportDeclaration(d) => self.blank_statement(d.span),
            ModuleDeclaration::TSExportAssignment(d) => self.fail(
                d.span.start,
                "TypeScript `export =` needs more than type stripping: end the script with the \
                 value, or `return` it",
            ),
            ModuleDeclaration::ExportDefaultDeclaration(d) => {
                let declaration = &d.declaration;
                let type_only = match declaration {
                    ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => true,
                    ExportDefaultDeclarationKind::FunctionDeclaration(f) => {
                        f.declare || f.body.is_none()
                    }
                    ExportDefaultDeclarationKind::ClassDeclaration(c) => c.declare,
                    _ => false,
                };
                if type_only {
                    self.blank_statement(d.span);
                    return;
                }
                // `export default` → `;0,` and spaces: an expression statement whose value is
                // the function (or value), which the sandbox calls and awaits like
                // `async () => {…}`.
                let keywords = Span::new(d.span.start, declaration.span().start);
                self.blank(keywords);
                if keywords.size() >= 3 {
                    for (i, c) in [';', '0', ','].into_iter().enumerate() {
                        self.puts.insert(keywords.start + i as u32, c);
                    }
                }
                walk::walk_module_declaration(self, it);
            }
            _ => walk::walk_module_declaration(self, it),
        }
    }

    fn visit_import_specifier(&mut self, it: &ImportSpecifier<'a>) {
        if it.import_kind.is_type() {
            self.blank_with_comma(it.span);
        }
    }

    fn visit_export_specifier(&mut self, it: &ExportSpecifier<'a>) {
        if it.export_kind.is_type() {
            self.blank_with_comma(it.span);
        }
    }

    fn visit_ts_type_annotation(&mut self, it: &TSTypeAnnotation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_declaration(&mut self, it: &TSTypeParameterDeclaration<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_type_parameter_instantiation(&mut self, it: &TSTypeParameterInstantiation<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_this_parameter(&mut self, it: &TSThisParameter<'a>) {
        self.blank_with_comma(it.span);
    }

    fn visit_ts_class_implements(&mut self, _it: &TSClassImplements<'a>) {
        // Blanked with its keyword in `visit_class`.
    }

    fn visit_ts_index_signature(&mut self, it: &TSIndexSignature<'a>) {
        self.blank(it.span);
    }

    fn visit_ts_as_expression(&mut self, it: &TSAsExpression<'a>) {
        let types = Span::new(it.expression.span().end, it.span.end);
        self.blank(types);
        self.guard_asi(types);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_satisfies_expression(&mut self, it: &TSSatisfiesExpression<'a>) {
        let types = Span::new(it.expression.span().end, it.span.end);
        self.blank(types);
        self.guard_asi(types);
        self.visit_expression(&it.expression);
    }

    fn visit_ts_non_null_expression(&mut self, it: &TSNonNullExpression<'a>) {
        let inner = it.expression.span();
        if let Some(at) = (inner.end..it.span.end)
            .rev()
            .find(|i| self.byte(*i) == Some(b'!'))
        {
            self.blank(Span::new(at, at + 1));
        }
        self.visit_expression(&it.expression);
    }

    fn visit_ts_type_assertion(&mut self, it: &TSTypeAssertion<'a>) {
        self.blank(Span::new(it.span.start, it.expression.span().start));
        self.visit_expression(&it.expression);
    }

    fn visit_decorator(&mut self, it: &Decorator<'a>) {
        self.fail(
            it.span.start,
            "decorators need more than type stripping: call the function on the value instead",
        );
    }

    fn visit_formal_parameter(&mut self, it: &FormalParameter<'a>) {
        if it.accessibility.is_some() || it.readonly || it.r#override {
            self.fail(
                it.span.start,
                "TypeScript parameter properties (`constructor(private x)`) need more than type \
                 stripping: declare the field and assign it in the constructor",
            );
        }
        if it.optional {
            let end = it
                .type_annotation
                .as_ref()
                .map(|t| t.span.start)
                .or(it.initializer.as_ref().map(|e| e.span().start))
                .unwrap_or(it.span.end);
            self.blank_marker(it.pattern.span().end, end, b'?');
        }
        walk::walk_formal_parameter(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if it.definite
            && let Some(t) = &it.type_annotation
        {
            self.blank_marker(it.id.span().end, t.span.start, b'!');
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        let params = it.params.span;
        // `<T>(x) => x` spread over lines after `return` or `async` must not leave a line
        // break before `(`: the `(` moves to where `<` was.
        if let Some(tp) = &it.type_parameters
            && self.byte(params.start) == Some(b'(')
        {
            self.blank(Span::new(params.start, params.start + 1));
            self.puts.insert(tp.span.start, '(');
        }
        // `(x): T => x` with `T` spread over lines must not leave a line break between `)` and
        // `=>`: the `)` moves to the end of the type.
        if let Some(rt) = &it.return_type
            && params.end > params.start
            && self.byte(params.end - 1) == Some(b')')
            && rt.span.end > rt.span.start
        {
            self.blank(Span::new(params.end - 1, params.end));
            let last = self.char_start_before(rt.span.end);
            self.puts.insert(last, ')');
        }
        walk::walk_arrow_function_expression(self, it);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if it.r#abstract {
            let end = it
                .id
                .as_ref()
                .map(|id| id.span.start)
                .unwrap_or(it.body.span.start);
            self.blank_modifiers(it.span.start, end);
        }
        if let (Some(first), Some(last)) = (it.implements.first(), it.implements.last()) {
            let before = &self.src[..(first.span.start as usize).min(self.src.len())];
            if let Some(keyword) = before.rfind("implements") {
                self.blank(Span::new(keyword as u32, last.span.end));
            }
        }
        walk::walk_class(self, it);
    }

    fn visit_class_element(&mut self, it: &ClassElement<'a>) {
        match it {
            ClassElement::MethodDefinition(m) => self.method(m),
            ClassElement::PropertyDefinition(p) => self.property(p),
            ClassElement::AccessorProperty(a) => self.accessor(a),
            ClassElement::TSIndexSignature(s) => self.blank_statement(s.span),
            ClassElement::StaticBlock(_) => walk::walk_class_element(self, it),
        }
    }
}
