//! A cursor over a `.msh` file: ASCII tokens or binary values of either
//! byte order, with every declared count checked against the bytes left.

use super::{GResult, GmshError};

/// Reads the file from `pos`; `binary` says how the values at `pos` are
/// stored (section headers are always text).
pub(super) struct Cursor<'a> {
    pub data: &'a [u8],
    pub pos: usize,
    pub binary: bool,
    /// Binary values are big-endian (a file written on such a machine).
    pub swap: bool,
    pub section: &'static str,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0, binary: false, swap: false, section: "header" }
    }

    pub fn line(&self) -> usize {
        1 + self.data[..self.pos.min(self.data.len())].iter().filter(|&&b| b == b'\n').count()
    }

    pub fn err<T>(&self, message: impl Into<String>) -> GResult<T> {
        Err(GmshError::Syntax { section: self.section.into(), line: self.line(), message: message.into() })
    }

    pub fn left(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    pub fn skip_space(&mut self) {
        while self.pos < self.data.len() && self.data[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    /// The next whitespace-delimited ASCII token.
    pub fn word(&mut self) -> GResult<&'a str> {
        self.skip_space();
        let start = self.pos;
        while self.pos < self.data.len() && !self.data[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        if start == self.pos {
            return self.err("unexpected end of file");
        }
        std::str::from_utf8(&self.data[start..self.pos]).or_else(|_| self.err("a token that is not text"))
    }

    /// The rest of the current line, trimmed.
    pub fn rest_of_line(&mut self) -> String {
        let rest = &self.data[self.pos.min(self.data.len())..];
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        self.pos += end;
        String::from_utf8_lossy(&rest[..end]).trim().to_string()
    }

    pub fn parse<T: std::str::FromStr>(&mut self, what: &str) -> GResult<T> {
        let w = self.word()?;
        w.parse().or_else(|_| self.err(format!("expected {what}, found `{w}`")))
    }

    fn bytes<const N: usize>(&mut self) -> GResult<[u8; N]> {
        if self.left() < N {
            return self.err("unexpected end of binary data");
        }
        let mut b: [u8; N] = self.data[self.pos..self.pos + N].try_into().expect("length checked");
        if self.swap {
            b.reverse();
        }
        self.pos += N;
        Ok(b)
    }

    /// A C `int` (4 bytes in binary).
    pub fn int(&mut self) -> GResult<i32> {
        if self.binary { Ok(i32::from_le_bytes(self.bytes()?)) } else { self.parse("an integer") }
    }

    /// A C `size_t` or `unsigned long` (8 bytes in binary).
    pub fn size(&mut self) -> GResult<u64> {
        if self.binary { Ok(u64::from_le_bytes(self.bytes()?)) } else { self.parse("a count") }
    }

    /// A tag stored as an `int` (MSH 2.2 and 4.0), which must not be
    /// negative.
    pub fn int_tag(&mut self) -> GResult<u64> {
        let t = self.int()?;
        if t < 0 {
            return self.err(format!("negative tag {t}"));
        }
        Ok(t as u64)
    }

    pub fn real(&mut self) -> GResult<f64> {
        let v = if self.binary { f64::from_le_bytes(self.bytes()?) } else { self.parse("a number")? };
        if v.is_finite() { Ok(v) } else { self.err("a coordinate that is not finite") }
    }

    /// Checks that `n` items of at least `numbers` numbers each fit in the
    /// bytes left (a number takes at least 4 bytes in binary, 2 in ASCII
    /// with its separator), so that nothing is reserved for them before.
    pub fn check_fits(&self, n: u64, what: &str, numbers: usize) -> GResult<usize> {
        let min_bytes = numbers as u64 * if self.binary { 4 } else { 2 };
        if n.saturating_mul(min_bytes) > self.left() as u64 {
            return self.err(format!("declares {n} {what}, more than the {} bytes left can hold", self.left()));
        }
        Ok(n as usize)
    }

    /// A count stored as `size_t` of items of at least `numbers` numbers.
    pub fn count(&mut self, what: &str, numbers: usize) -> GResult<usize> {
        let n = self.size()?;
        self.check_fits(n, what, numbers)
    }

    /// A count stored as text (also in binary files, as MSH 2.2 writes
    /// the lengths of `$Nodes` and `$Elements`).
    pub fn text_count(&mut self, what: &str, numbers: usize) -> GResult<usize> {
        let n: u64 = self.parse("a count")?;
        self.check_fits(n, what, numbers)
    }

    pub fn expect_end(&mut self, name: &str) -> GResult<()> {
        self.binary = false;
        let w = self.word()?;
        if w != format!("$End{name}") {
            return self.err(format!("expected $End{name}, found `{w}`"));
        }
        Ok(())
    }

    /// Skips an unknown section up to its `$End` marker.
    pub fn skip_section(&mut self, name: &str) -> GResult<()> {
        let end = format!("$End{name}");
        let hay = &self.data[self.pos..];
        match hay.windows(end.len()).position(|w| w == end.as_bytes()) {
            Some(i) => {
                self.pos += i + end.len();
                Ok(())
            }
            None => self.err(format!("section ${name} has no {end}")),
        }
    }

    /// Enters binary data, which starts after the newline that ends the
    /// preceding text.
    pub fn start_binary(&mut self) {
        self.binary = true;
        if self.data.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
        } else if self.data.get(self.pos) == Some(&b'\r') {
            self.pos += if self.data.get(self.pos + 1) == Some(&b'\n') { 2 } else { 1 };
        }
    }
}
