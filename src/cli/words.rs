//! Words for people: a count with its noun, singular for one (`1 tenant`, `2 tenants`).
//!
//! In: a number and a regular English noun. Out: the phrase.

/// `n` and `noun`, with an `s` unless `n` is 1.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1, "tenant"), "1 tenant");
        assert_eq!(super::count(0, "tenant"), "0 tenants");
        assert_eq!(super::count(2, "object"), "2 objects");
    }
}
