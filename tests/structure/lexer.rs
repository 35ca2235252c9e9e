//! A Rust tokenizer just good enough to find items, paths and braces: comments are dropped,
//! string, char and number literals become one token each, and lifetimes are told from chars.

/// What a token is; keywords are `Ident`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    /// `::`, `->`, `=>` or a single punctuation character.
    Punct,
    Literal,
    Lifetime,
}

#[derive(Clone, Copy, Debug)]
pub struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
    /// 1-based line of the token's first character.
    pub line: usize,
}

impl Token<'_> {
    pub fn is(&self, text: &str) -> bool {
        self.text == text && self.kind != Kind::Literal
    }

    pub fn is_ident(&self) -> bool {
        self.kind == Kind::Ident
    }
}

/// The tokens of `source` and its number of physical lines.
pub fn tokenize(source: &str) -> (Vec<Token<'_>>, usize) {
    let mut lexer = Lexer {
        src: source,
        bytes: source.as_bytes(),
        pos: 0,
        line: 1,
        tokens: Vec::new(),
    };
    lexer.run();
    let mut lines = source.bytes().filter(|&b| b == b'\n').count();
    if !source.is_empty() && !source.ends_with('\n') {
        lines += 1;
    }
    (lexer.tokens, lines)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: usize,
    tokens: Vec<Token<'a>>,
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

impl<'a> Lexer<'a> {
    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: Kind, start: usize, line: usize) {
        self.tokens.push(Token {
            kind,
            text: &self.src[start..self.pos],
            line,
        });
    }

    /// Moves on one byte, counting lines.
    fn bump(&mut self) {
        if self.peek(0) == b'\n' {
            self.line += 1;
        }
        self.pos += 1;
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let (start, line) = (self.pos, self.line);
            let b = self.peek(0);
            match b {
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.peek(0) != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'"' => {
                    self.quoted(b'"');
                    self.push(Kind::Literal, start, line);
                }
                b'\'' => self.quote_or_lifetime(start, line),
                b'0'..=b'9' => {
                    self.number();
                    self.push(Kind::Literal, start, line);
                }
                _ if is_ident_byte(b) => self.ident_or_prefixed(start, line),
                _ if b.is_ascii_whitespace() => self.bump(),
                _ => {
                    let pair = [b, self.peek(1)];
                    self.pos += if matches!(&pair, b"::" | b"->" | b"=>") {
                        2
                    } else {
                        1
                    };
                    self.push(Kind::Punct, start, line);
                }
            }
        }
    }

    fn block_comment(&mut self) {
        let mut depth = 0usize;
        while self.pos < self.bytes.len() {
            if self.peek(0) == b'/' && self.peek(1) == b'*' {
                depth += 1;
                self.pos += 2;
            } else if self.peek(0) == b'*' && self.peek(1) == b'/' {
                depth -= 1;
                self.pos += 2;
                if depth == 0 {
                    return;
                }
            } else {
                self.bump();
            }
        }
    }

    /// A `"…"` or `'…'` literal with escapes, from its opening quote.
    fn quoted(&mut self, quote: u8) {
        self.pos += 1;
        while self.pos < self.bytes.len() {
            match self.peek(0) {
                b'\\' => {
                    self.pos += 1;
                    self.bump();
                }
                b if b == quote => {
                    self.pos += 1;
                    return;
                }
                _ => self.bump(),
            }
        }
    }

    /// `r#"…"#` from the first `#` or `"`.
    fn raw_string(&mut self) {
        let mut hashes = 0;
        while self.peek(0) == b'#' {
            hashes += 1;
            self.pos += 1;
        }
        self.pos += 1; // the opening quote
        while self.pos < self.bytes.len() {
            if self.peek(0) == b'"' && (1..=hashes).all(|i| self.peek(i) == b'#') {
                self.pos += 1 + hashes;
                return;
            }
            self.bump();
        }
    }

    fn quote_or_lifetime(&mut self, start: usize, line: usize) {
        let is_char = if self.peek(1) == b'\\' {
            true
        } else {
            let width = self.src[self.pos + 1..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
            self.peek(1 + width) == b'\''
        };
        if is_char {
            self.quoted(b'\'');
            self.push(Kind::Literal, start, line);
        } else {
            self.pos += 1;
            self.identifier();
            self.push(Kind::Lifetime, start, line);
        }
    }

    fn identifier(&mut self) {
        while is_ident_byte(self.peek(0)) {
            self.pos += 1;
        }
    }

    fn number(&mut self) {
        while is_ident_byte(self.peek(0)) || (self.peek(0) == b'.' && self.peek(1).is_ascii_digit())
        {
            self.pos += 1;
        }
    }

    /// An identifier, or a literal with a prefix (`b"…"`, `r#"…"#`, `b'x'`), or `r#ident`.
    fn ident_or_prefixed(&mut self, start: usize, line: usize) {
        self.identifier();
        let prefix = &self.src[start..self.pos];
        let next = self.peek(0);
        match (prefix, next) {
            ("b" | "c", b'"') => {
                self.quoted(b'"');
                self.push(Kind::Literal, start, line);
            }
            ("b", b'\'') => {
                self.quoted(b'\'');
                self.push(Kind::Literal, start, line);
            }
            ("r" | "br" | "cr", b'"') => {
                self.raw_string();
                self.push(Kind::Literal, start, line);
            }
            ("r" | "br" | "cr", b'#') => {
                let mut hashes = 0;
                while self.peek(hashes) == b'#' {
                    hashes += 1;
                }
                if self.peek(hashes) == b'"' {
                    self.raw_string();
                    self.push(Kind::Literal, start, line);
                } else {
                    // A raw identifier: `r#type` is the identifier `type`, never the keyword.
                    self.pos += 1;
                    self.identifier();
                    self.push(Kind::Ident, start, line);
                }
            }
            _ => self.push(Kind::Ident, start, line),
        }
    }
}
