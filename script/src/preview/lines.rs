//! Byte offsets to 1-based line and character column.

/// The byte offsets where lines start, JavaScript's way: after `\n`, `\r\n`, a lone `\r`,
/// U+2028 or U+2029.
pub(crate) struct LineIndex<'s> {
    src: &'s str,
    starts: Vec<usize>,
}

impl<'s> LineIndex<'s> {
    pub(crate) fn new(src: &'s str) -> Self {
        let mut starts = vec![0];
        let mut chars = src.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\r' if chars.peek().is_some_and(|(_, n)| *n == '\n') => {}
                '\n' | '\r' | '\u{2028}' | '\u{2029}' => starts.push(i + c.len_utf8()),
                _ => {}
            }
        }
        LineIndex { src, starts }
    }

    /// The 1-based line and 1-based character column of byte `offset` (clamped to the text,
    /// and to a character boundary).
    pub(crate) fn line_column(&self, offset: u32) -> (u32, u32) {
        let mut offset = (offset as usize).min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|s| *s <= offset);
        let start = self.starts[line - 1];
        let column = self.src[start..offset].chars().count() + 1;
        (saturate(line), saturate(column))
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_character_columns() {
        let src = "ab\ncd\r\nef\rgh\u{2028}ij\u{2029}é€x";
        let idx = LineIndex::new(src);
        let at = |needle: &str| idx.line_column(u32::try_from(src.find(needle).unwrap()).unwrap());
        let cases = [
            ("a", (1, 1)),
            ("b", (1, 2)),
            ("c", (2, 1)),
            ("e", (3, 1)),
            ("g", (4, 1)),
            ("i", (5, 1)),
            ("é", (6, 1)),
            ("€", (6, 2)),
            ("x", (6, 3)),
        ];
        for (needle, want) in cases {
            assert_eq!(at(needle), want, "{needle}");
        }
        assert_eq!(idx.line_column(10_000), (6, 4));
        assert_eq!(LineIndex::new("").line_column(0), (1, 1));
        // Inside a multi-byte character: its start.
        let e = u32::try_from(src.find('€').unwrap()).unwrap();
        assert_eq!(idx.line_column(e + 1), (6, 2));
    }
}
