//! Schedule variants given on the command line: `q=2,minb=1,width=8,block=256,ntt=32768`.

use bigfuse::Hints;

#[derive(Clone, Debug)]
pub struct Variant {
    pub name: String,
    pub hints: Hints,
}

pub fn parse(text: &str) -> Result<Variant, String> {
    let mut h = bigfuse::runtime::env_hints();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}`: write key=value"))?;
        let n: u64 = v
            .parse()
            .map_err(|_| format!("`{part}`: {v} is not a number"))?;
        let small = || u32::try_from(n).map_err(|_| format!("`{part}`: too large"));
        match k {
            "q" => h.q = Some(small()?),
            "block" => h.block_threads = Some(small()?),
            "width" => h.mul_width = Some(small()?),
            "minb" => h.min_blocks = Some(small()?),
            "ntt" => h.ntt_from_bits = Some(n),
            other => {
                return Err(format!(
                    "unknown schedule key `{other}` (q, block, width, minb, ntt)"
                ))
            }
        }
    }
    Ok(Variant {
        name: text.to_string(),
        hints: h,
    })
}

/// The default schedule (with any BIGFUSE_* overrides from the environment).
pub fn default() -> Variant {
    Variant {
        name: "default".into(),
        hints: bigfuse::runtime::env_hints(),
    }
}
