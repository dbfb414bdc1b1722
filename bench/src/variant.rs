//! Schedule variants given on the command line: `q=2,minb=1,width=8,block=256,ntt=32768`.

use bigfuse::Hints;

#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    pub hints: Hints,
}

/// A variant: the environment's hints with `text`'s `key=value` pairs on top (the text form of
/// `Hints`, one parser for the cache and the command line).
pub fn parse(text: &str) -> Result<Variant, String> {
    let (hints, _) = bigfuse::runtime::env_hints().with(text)?;
    Ok(Variant {
        name: text.to_string(),
        hints,
    })
}

/// The default schedule (with any BIGFUSE_* overrides from the environment).
pub fn default() -> Variant {
    Variant {
        name: "default".into(),
        hints: bigfuse::runtime::env_hints(),
    }
}
