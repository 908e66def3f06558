//! "Did you mean": the known name nearest to a misspelt one, for every error that names an
//! unknown environment, component, value key, kind or field.
//!
//! In: a name and the candidates. Out: the nearest candidate when it is near enough to be a
//! typo. Pure.

/// The candidate nearest to `name` by edit distance (Levenshtein, over characters), if it is
/// near enough to be a typo; `None` for an exact match or when nothing is close.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .filter(|d| *d != name)
        .map(|d| (strsim::levenshtein(name, d), d))
        .filter(|(dist, d)| *dist <= 2.max(d.len() / 3))
        .min()
        .map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    use super::suggest;

    #[test]
    fn a_near_name_is_suggested_and_a_far_or_equal_one_is_not() {
        let known = ["prod", "staging", "redis"];
        assert_eq!(suggest("prd", known), Some("prod"));
        assert_eq!(suggest("rediss", known), Some("redis"));
        assert_eq!(suggest("stagin", known), Some("staging"));
        assert_eq!(suggest("postgres", known), None);
        assert_eq!(suggest("prod", known), None);
    }
}
