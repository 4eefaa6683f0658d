//! Choosing a storage for an operator: each storage the input allows is
//! costed as its conversion plus the expected number of products (Wong et
//! al.'s α argument, eq. 14), from the model or from measurement, and the
//! cheapest wins. Storages the input cannot take stay in the ranking with
//! the reason, and are never chosen.

use crate::{Error, Result};
use serde::Serialize;

/// One storage as the model or a measurement prices it.
#[derive(Clone, Debug, Serialize)]
pub struct Costed {
    /// Name of the storage (`csr`, `k1r`, `lma`, ...).
    pub storage: String,
    /// Seconds of one product in this storage, predicted or measured.
    pub product_seconds: f64,
    /// Building it from what the caller has (CSR, or the mesh).
    pub conversion_seconds: f64,
    /// Why the input cannot take this storage (then it is never chosen).
    pub unavailable: Option<String>,
}

impl Costed {
    /// Seconds of the conversion plus `products` products.
    pub fn total(&self, products: f64) -> f64 {
        self.conversion_seconds + products * self.product_seconds
    }
}

/// The chosen storage and the ranking it came from, cheapest first.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    /// Name of the chosen storage.
    pub storage: String,
    /// Expected number of products the costs were counted over.
    pub products: f64,
    /// The chosen storage's conversion plus `products` products, in seconds.
    pub total_seconds: f64,
    /// Every storage considered, available ones cheapest first, then the
    /// unavailable ones with their reasons.
    pub ranking: Vec<Costed>,
}

/// The cheapest available storage over `products` products.
pub fn choose(mut options: Vec<Costed>, products: f64) -> Result<Choice> {
    options.sort_by(|a, b| {
        (a.unavailable.is_some(), a.total(products)).partial_cmp(&(b.unavailable.is_some(), b.total(products))).expect("finite costs")
    });
    let best = options.first().filter(|o| o.unavailable.is_none()).ok_or_else(|| {
        let why: Vec<String> = options.iter().map(|o| format!("{}: {}", o.storage, o.unavailable.clone().unwrap_or_default())).collect();
        Error::InvalidArgument(format!("no storage can hold this operator ({})", why.join("; ")))
    })?;
    Ok(Choice { storage: best.storage.clone(), products, total_seconds: best.total(products), ranking: options })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str, p: f64, conv: f64, bad: bool) -> Costed {
        Costed { storage: s.into(), product_seconds: p, conversion_seconds: conv, unavailable: bad.then(|| "no".into()) }
    }

    #[test]
    fn conversion_pays_off_only_over_enough_products() {
        let opts = vec![c("csr", 2.0, 0.0, false), c("k1", 1.0, 10.0, false)];
        assert_eq!(choose(opts.clone(), 5.0).unwrap().storage, "csr");
        assert_eq!(choose(opts, 20.0).unwrap().storage, "k1");
    }

    #[test]
    fn unavailable_storages_are_never_chosen() {
        let opts = vec![c("lma", 0.1, 0.0, true), c("csr", 2.0, 0.0, false)];
        let ch = choose(opts, 100.0).unwrap();
        assert_eq!(ch.storage, "csr");
        assert_eq!(ch.ranking.last().unwrap().storage, "lma");
        assert!(choose(vec![c("lma", 0.1, 0.0, true)], 1.0).is_err());
    }
}
