//! What the passes need to know about a GPU. The runtime reads these from the device; tests use
//! the presets, so every pass runs without a GPU.

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// Human-readable name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability (major, minor).
    pub arch: (u32, u32),
    pub sm_count: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_sm: u32,
    /// Shared memory a block may use once it opts in (227 KiB on Hopper).
    pub max_shared_per_block: u32,
    pub shared_per_sm: u32,
    pub regs_per_sm: u32,
    pub max_regs_per_thread: u32,
}

impl Target {
    /// An H100 SXM (compute capability 9.0, 132 SMs).
    pub fn h100() -> Target {
        Target {
            name: "NVIDIA H100 (preset)".into(),
            arch: (9, 0),
            sm_count: 132,
            max_threads_per_block: 1024,
            max_threads_per_sm: 2048,
            max_shared_per_block: 227 * 1024,
            shared_per_sm: 228 * 1024,
            regs_per_sm: 65536,
            max_regs_per_thread: 255,
        }
    }

    /// An H200 (same SM as the H100; more memory, which the passes do not use).
    pub fn h200() -> Target {
        Target {
            name: "NVIDIA H200 (preset)".into(),
            ..Target::h100()
        }
    }

    /// The NVRTC architecture option, e.g. `sm_90`.
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.arch.0, self.arch.1)
    }
}
