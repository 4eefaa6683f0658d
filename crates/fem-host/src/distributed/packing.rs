//! Numbers packed into one `u64` message and read back in the same order:
//! how rank 0 sends a rank its share through the communicator's
//! all-to-all, which carries `u64`s. Node and cell indices go two to a
//! word and flags 64 to a word, so a message is about the size of the data.

use crate::{Error, Result};

/// A message being written.
#[derive(Default)]
pub struct Pack(Vec<u64>);

impl Pack {
    /// A count or index.
    pub fn n(&mut self, v: usize) {
        self.0.push(v as u64);
    }

    /// Indices, two to a word.
    pub fn u32s(&mut self, v: &[u32]) {
        self.n(v.len());
        self.0.extend(v.chunks(2).map(|c| c[0] as u64 | (c.get(1).copied().unwrap_or(0) as u64) << 32));
    }

    /// Values, bit for bit.
    pub fn f64s(&mut self, v: &[f64]) {
        self.n(v.len());
        self.0.extend(v.iter().map(|x| x.to_bits()));
    }

    /// Points of three coordinates.
    pub fn points(&mut self, v: &[[f64; 3]]) {
        self.f64s(v.as_flattened());
    }

    /// Flags, 64 to a word.
    pub fn bools(&mut self, v: &[bool]) {
        self.n(v.len());
        self.0.extend(v.chunks(64).map(|c| c.iter().enumerate().fold(0u64, |w, (i, &b)| w | (b as u64) << i)));
    }

    /// The message.
    pub fn finish(self) -> Vec<u64> {
        self.0
    }
}

/// A message being read, in the order it was written.
pub struct Unpack<'a> {
    words: &'a [u64],
    at: usize,
}

impl<'a> Unpack<'a> {
    /// Reads `words` from the start.
    pub fn new(words: &'a [u64]) -> Self {
        Self { words, at: 0 }
    }

    /// The error of a message that does not read back.
    pub fn corrupt(&self) -> Error {
        Error::InvalidArgument(format!("a message of {} words does not read back as it was written (at word {})", self.words.len(), self.at))
    }

    /// The next `n` words.
    fn take(&mut self, n: usize) -> Result<&'a [u64]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.words.len()).ok_or_else(|| self.corrupt())?;
        let out = &self.words[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// A count or index.
    pub fn n(&mut self) -> Result<usize> {
        Ok(self.take(1)?[0] as usize)
    }

    /// Indices.
    pub fn u32s(&mut self) -> Result<Vec<u32>> {
        let len = self.n()?;
        let words = self.take(len.div_ceil(2))?;
        Ok((0..len).map(|i| (words[i / 2] >> (32 * (i % 2))) as u32).collect())
    }

    /// Values.
    pub fn f64s(&mut self) -> Result<Vec<f64>> {
        let len = self.n()?;
        Ok(self.take(len)?.iter().map(|&w| f64::from_bits(w)).collect())
    }

    /// Points.
    pub fn points(&mut self) -> Result<Vec<[f64; 3]>> {
        let flat = self.f64s()?;
        if flat.len() % 3 != 0 {
            return Err(self.corrupt());
        }
        Ok(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
    }

    /// Flags.
    pub fn bools(&mut self) -> Result<Vec<bool>> {
        let len = self.n()?;
        let words = self.take(len.div_ceil(64))?;
        Ok((0..len).map(|i| words[i / 64] >> (i % 64) & 1 == 1).collect())
    }

    /// Checks that the whole message was read.
    pub fn end(&self) -> Result<()> {
        if self.at == self.words.len() { Ok(()) } else { Err(self.corrupt()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_as_written_and_short_messages_are_errors() {
        let mut p = Pack::default();
        let (idx, vals, pts) = (vec![7u32, u32::MAX, 0], vec![-0.0, f64::MIN_POSITIVE, 1e300], vec![[1.0, 2.0, 3.0]]);
        let flags: Vec<bool> = (0..130).map(|i| i % 3 == 0).collect();
        p.u32s(&idx);
        p.f64s(&vals);
        p.points(&pts);
        p.bools(&flags);
        p.n(42);
        let m = p.finish();
        // 1+2, 1+3, 1+3, 1+3, 1 words
        assert_eq!(m.len(), 16);
        let mut u = Unpack::new(&m);
        assert_eq!(u.u32s().unwrap(), idx);
        assert_eq!(u.f64s().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), vals.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        assert_eq!(u.points().unwrap(), pts);
        assert_eq!(u.bools().unwrap(), flags);
        assert_eq!(u.n().unwrap(), 42);
        assert!(u.end().is_ok());
        let mut short = Unpack::new(&m[..5]);
        assert!(short.u32s().is_ok() && short.f64s().is_err());
        assert!(Unpack::new(&m).end().is_err());
    }
}
