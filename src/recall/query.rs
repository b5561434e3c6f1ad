//! A search query: words, and "quoted phrases" kept whole, each a term
//! that must occur (ASCII case ignored). Characters mean themselves: `*`,
//! `(`, `[` or `\` are searched for, not interpreted.

/// The longest query taken, in characters.
pub const MAX_CHARS: usize = 1_000;
/// The most terms a query may have.
pub const MAX_TERMS: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    terms: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    #[error("query is empty: give words or a \"quoted phrase\" to find")]
    Empty,
    #[error("query is {0} characters long; at most {MAX_CHARS} are taken")]
    TooLong(usize),
    #[error("query has {0} terms; at most {MAX_TERMS} are taken")]
    TooManyTerms(usize),
}

impl Query {
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        let chars = text.chars().count();
        if chars > MAX_CHARS {
            return Err(QueryError::TooLong(chars));
        }
        let mut terms: Vec<String> = Vec::new();
        for (i, piece) in text.split('"').enumerate() {
            // Odd pieces were inside quotes: one term each.
            let words: Vec<&str> = match i % 2 {
                1 => vec![piece.trim()],
                _ => piece.split_whitespace().collect(),
            };
            for word in words {
                let term: String = word
                    .chars()
                    .filter(|c| *c != '\0')
                    .map(|c| c.to_ascii_lowercase())
                    .collect();
                if !term.is_empty() && !terms.contains(&term) {
                    terms.push(term);
                }
            }
        }
        if terms.is_empty() {
            return Err(QueryError::Empty);
        }
        if terms.len() > MAX_TERMS {
            return Err(QueryError::TooManyTerms(terms.len()));
        }
        // The rarest-looking (longest) term first: fewer messages to follow.
        terms.sort_by_key(|t| std::cmp::Reverse(t.len()));
        Ok(Query { terms })
    }

    pub fn terms(&self) -> &[String] {
        &self.terms
    }
}
