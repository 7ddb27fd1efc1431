//! Text bounds shared by the crates: the one truncation at a character boundary that error
//! summaries, job failure details and Kubernetes Event fields use (written here because it is
//! four lines that `String::truncate` leaves to the caller: it panics off a char boundary).

/// Cuts `text` to at most `max_bytes` bytes, at the last character boundary at or before it;
/// returns whether anything was cut (so the caller can mark the cut).
///
/// ```
/// use provkit_core::text::truncate_to_bytes;
/// let mut s = String::from("héllo");
/// assert!(truncate_to_bytes(&mut s, 2)); // 'é' is two bytes: the cut falls before it
/// assert_eq!(s, "h");
/// let mut short = String::from("ok");
/// assert!(!truncate_to_bytes(&mut short, 2));
/// assert_eq!(short, "ok");
/// ```
pub fn truncate_to_bytes(text: &mut String, max_bytes: usize) -> bool {
    if text.len() <= max_bytes {
        return false;
    }
    let cut = (0..=max_bytes)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text.truncate(cut);
    true
}

#[cfg(test)]
mod tests {
    use super::truncate_to_bytes;

    #[test]
    fn cuts_never_split_a_character_and_never_exceed_the_bound() {
        let text = "aé€😀b".repeat(7);
        for max in 0..=text.len() + 1 {
            let mut s = text.clone();
            let cut = truncate_to_bytes(&mut s, max);
            assert!(s.len() <= max, "{max}");
            assert!(text.starts_with(&s));
            assert_eq!(cut, max < text.len());
            // The cut keeps as much as fits: one more character would not.
            if cut {
                let next = text[s.len()..].chars().next().unwrap();
                assert!(s.len() + next.len_utf8() > max, "{max}");
            }
        }
    }
}
