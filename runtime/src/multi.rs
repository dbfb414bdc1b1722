//! Calls split over several devices ([`Devices`]), and what a generated `run` / `run_into` takes
//! as its device ([`RunOn`]: one [`Device`], or several).
//!
//! A batch of host data is cut into one contiguous range of instances per device, in proportion
//! to the devices' speeds; the parts run at once (a host thread per device, each converting its
//! own part), and the results are joined in order. Speeds start from the hardware (a GPU's SM
//! count, the CPU backend's threads) and follow each kernel's calls: after a call, each device's
//! measured rate (instances per second of its part) moves its share for the next call of that
//! kernel at those sizes, so a batch ends up split as the devices actually run it.

use crate::column::{append, check_args, check_values, empty_like, instances_of, Arg, Column, Out};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;
use std::time::Instant;

/// Where a call from host data runs: one [`Device`], or several ([`Devices`]) that share the
/// batch. The `run` and `run_into` that `#[bigfuse::kernel]` generates take either.
pub trait RunOn {
    /// Runs `kernel` over the instances of `args`, writing each result into `outs`.
    fn run_into(
        &self,
        kernel: &Kernel,
        sizes: &[u64],
        args: &[Arg],
        outs: &mut [Out],
    ) -> Result<()>;
}

impl RunOn for Device {
    fn run_into(
        &self,
        kernel: &Kernel,
        sizes: &[u64],
        args: &[Arg],
        outs: &mut [Out],
    ) -> Result<()> {
        kernel.run_into(self, sizes, args, outs)
    }
}

/// Several devices that share each call's batch: every GPU of the host ([`Devices::gpus`]), or
/// any list of devices. `run` and `run_into` take it where they take a [`Device`]; the results
/// are the same as on one device, in the same order.
///
/// ```
/// use bigfuse_runtime::{Devices, Device};
///
/// // Two CPU backends sharing batches 1:3 (on a GPU host: `Devices::gpus()?`).
/// let devs = Devices::with_weights(vec![Device::cpu(), Device::cpu()], &[1.0, 3.0])?;
/// assert_eq!(devs.split(8), [0..2, 2..8]);
/// # Ok::<(), bigfuse_runtime::Error>(())
/// ```
///
/// Arguments are host data (big integers, limbs, plain values); a [`Batch`](crate::Batch) lives
/// on one device and is refused with an error that says so. A failed part fails the call (the
/// first failure in device order is returned, after every part has finished) and leaves the
/// destinations empty.
#[derive(Debug)]
pub struct Devices {
    devices: Vec<Device>,
    /// Relative speeds from the hardware (or the caller's fixed weights).
    initial: Vec<f64>,
    /// Fixed weights: no adapting to measured rates.
    fixed: bool,
    /// Measured speeds (instances per second) per kernel and sizes.
    measured: Mutex<HashMap<CallKey, Vec<f64>>>,
}

/// A kernel's name and the sizes of a call: what measured speeds are kept by.
type CallKey = (String, Vec<u64>);

impl Devices {
    /// These devices, sharing batches in proportion to their speeds (measured as calls run).
    pub fn new(devices: Vec<Device>) -> Result<Devices> {
        if devices.is_empty() {
            return Err(no_devices());
        }
        let initial = devices.iter().map(hardware_speed).collect();
        Ok(Devices {
            devices,
            initial,
            fixed: false,
            measured: Mutex::new(HashMap::new()),
        })
    }

    /// These devices, sharing batches in these fixed proportions (one positive weight each).
    pub fn with_weights(devices: Vec<Device>, weights: &[f64]) -> Result<Devices> {
        if devices.is_empty() {
            return Err(no_devices());
        }
        if weights.len() != devices.len() || weights.iter().any(|w| !w.is_finite() || *w <= 0.0) {
            return Err(Error::Argument {
                kernel: String::new(),
                message: format!(
                    "{} device(s) take {} positive, finite weight(s); {weights:?} were given",
                    devices.len(),
                    devices.len()
                ),
            });
        }
        Ok(Devices {
            devices,
            initial: weights.to_vec(),
            fixed: true,
            measured: Mutex::new(HashMap::new()),
        })
    }

    /// Every GPU of the host ([`Device::count`] of them), or an error when there is none.
    pub fn gpus() -> Result<Devices> {
        let count = Device::count();
        if count == 0 {
            // The error of opening GPU 0 says why (no driver, no CUDA build, ..).
            Device::gpu(0)?;
            return Err(Error::NoGpu("the driver reports no GPU".into()));
        }
        Devices::new((0..count).map(Device::gpu).collect::<Result<_>>()?)
    }

    /// The devices, in the order their parts of a batch are.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// How a batch of `n` instances is cut now (before any call has been measured): one
    /// contiguous range per device, in order, in proportion to the devices' speeds.
    pub fn split(&self, n: usize) -> Vec<Range<usize>> {
        split(n, &self.initial)
    }

    /// The current weights for `kernel` at `sizes`: measured speeds once a call has run.
    fn weights(&self, key: &CallKey) -> Vec<f64> {
        if self.fixed {
            return self.initial.clone();
        }
        let measured = self.measured.lock().unwrap_or_else(|p| p.into_inner());
        measured
            .get(key)
            .cloned()
            .unwrap_or_else(|| self.initial.clone())
    }

    /// Folds a call's rates (instances per second, `None` where a device had no part) into
    /// the speeds for `key`.
    fn learn(&self, key: CallKey, rates: &[Option<f64>]) {
        if self.fixed {
            return;
        }
        let mut measured = self.measured.lock().unwrap_or_else(|p| p.into_inner());
        let first = !measured.contains_key(&key);
        let speeds = measured.entry(key).or_insert_with(|| self.initial.clone());
        if first {
            // Hardware speeds and measured rates are in different units: rescale the former so
            // that a device without a measurement keeps its share next to the measured ones.
            let (mut hw, mut got) = (0.0, 0.0);
            for (s, r) in speeds.iter().zip(rates) {
                if let Some(r) = r {
                    hw += *s;
                    got += *r;
                }
            }
            if hw > 0.0 && got > 0.0 {
                speeds.iter_mut().for_each(|s| *s *= got / hw);
            }
        }
        for (s, r) in speeds.iter_mut().zip(rates) {
            if let Some(r) = r.filter(|r| r.is_finite() && *r > 0.0) {
                // Half old, half new: steady under noise, yet a few calls follow a change.
                *s = if first { r } else { 0.5 * *s + 0.5 * r };
            }
        }
    }
}

impl RunOn for Devices {
    fn run_into(
        &self,
        kernel: &Kernel,
        sizes: &[u64],
        args: &[Arg],
        outs: &mut [Out],
    ) -> Result<()> {
        let outcome = self.run_parts(kernel, sizes, args, outs);
        if outcome.is_err() {
            outs.iter_mut().for_each(Out::clear);
        }
        outcome
    }
}

impl Devices {
    fn run_parts(
        &self,
        kernel: &Kernel,
        sizes: &[u64],
        args: &[Arg],
        outs: &mut [Out],
    ) -> Result<()> {
        let name = kernel.name().to_string();
        let spec = kernel.specialized(sizes)?;
        let named = |e: Error| match e {
            Error::Argument { message, .. } => Error::Argument {
                kernel: name.clone(),
                message,
            },
            other => other,
        };
        let n = check_args(&name, &spec.params, args)?;
        // Every value up front, so that an error names its index in the whole batch (a part
        // would name it within the part).
        check_values(&spec.params, args).map_err(named)?;
        if outs.len() != spec.results.len() {
            return Err(Error::Argument {
                kernel: name.clone(),
                message: format!(
                    "it has {} result(s), {} destination(s) were given",
                    spec.results.len(),
                    outs.len()
                ),
            });
        }
        let key = (name.clone(), sizes.to_vec());
        let ranges = split(n, &self.weights(&key));
        // Each part's arguments (checked here, before any device starts) and destinations.
        let mut parts = Vec::with_capacity(ranges.len());
        for r in &ranges {
            let part_args = spec
                .params
                .iter()
                .zip(args)
                .map(|(p, a)| instances_of(p, a, r.clone()))
                .collect::<Result<Vec<Arg>>>()
                .map_err(named)?;
            let cols: Vec<Column> = outs.iter().map(empty_like).collect();
            parts.push((part_args, cols));
        }
        let results: Vec<(Result<()>, f64)> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .devices
                .iter()
                .zip(parts.iter_mut())
                .zip(&ranges)
                .map(|((dev, (part_args, cols)), r)| {
                    let count = r.len();
                    s.spawn(move || {
                        let start = Instant::now();
                        let mut part_outs: Vec<Out> = cols.iter_mut().map(Column::as_out).collect();
                        // Every part runs, even an empty one: its errors (a kernel that does not
                        // compile for that device, say) are the call's.
                        let r = kernel.run_into(dev, sizes, part_args, &mut part_outs);
                        let secs = start.elapsed().as_secs_f64();
                        (r, if count > 0 { count as f64 / secs } else { 0.0 })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        (
                            Err(Error::Argument {
                                kernel: name.clone(),
                                message: "internal: a device's part of the call panicked".into(),
                            }),
                            0.0,
                        )
                    })
                })
                .collect()
        });
        let mut rates = Vec::with_capacity(results.len());
        for ((r, rate), range) in results.into_iter().zip(&ranges) {
            r?;
            rates.push((!range.is_empty()).then_some(rate));
        }
        self.learn(key, &rates);
        for o in outs.iter_mut() {
            o.clear();
        }
        for (_, cols) in parts {
            for (o, c) in outs.iter_mut().zip(cols) {
                append(o, c);
            }
        }
        Ok(())
    }
}

fn no_devices() -> Error {
    Error::Argument {
        kernel: String::new(),
        message: "a call split over devices needs at least one device".into(),
    }
}

/// A device's speed before any call is measured: its SMs for a GPU, its threads for the CPU
/// backend (the CPU backend is orders of magnitude slower per thread than a GPU per SM; mixing
/// them is for tests, where the measured rates soon take over).
fn hardware_speed(dev: &Device) -> f64 {
    match dev {
        Device::Gpu(g) => 1000.0 * g.target().sm_count.max(1) as f64,
        Device::Cpu(_) => rayon::current_num_threads().max(1) as f64,
    }
}

/// `n` instances cut into one contiguous range per weight, in order, sizes in proportion to the
/// weights (largest remainders get the leftover instances; ties go to the earlier device).
pub(crate) fn split(n: usize, weights: &[f64]) -> Vec<Range<usize>> {
    let total: f64 = weights.iter().sum();
    let shares: Vec<f64> = weights
        .iter()
        .map(|w| {
            if total > 0.0 && total.is_finite() {
                n as f64 * w / total
            } else {
                n as f64 / weights.len().max(1) as f64
            }
        })
        .collect();
    let mut counts: Vec<usize> = shares.iter().map(|s| s.floor() as usize).collect();
    let mut left = n - counts.iter().sum::<usize>().min(n);
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (shares[a] - shares[a].floor(), shares[b] - shares[b].floor());
        fb.partial_cmp(&fa)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    for &i in order.iter().cycle().take(weights.len() * 2) {
        if left == 0 {
            break;
        }
        counts[i] += 1;
        left -= 1;
    }
    let mut start = 0;
    counts
        .into_iter()
        .map(|c| {
            let r = start..start + c;
            start += c;
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_cover_the_batch_in_order_and_in_proportion() {
        for n in [0usize, 1, 2, 3, 7, 100, 1009, 65536] {
            for weights in [
                vec![1.0],
                vec![1.0, 1.0],
                vec![1.0, 3.0],
                vec![5.0, 1.0, 2.0],
                vec![1e-9, 1.0, 1e9],
                vec![132.0, 132.0, 114.0, 132.0],
            ] {
                let parts = split(n, &weights);
                assert_eq!(parts.len(), weights.len());
                let mut next = 0;
                for p in &parts {
                    assert_eq!(p.start, next, "{n} {weights:?}: {parts:?}");
                    next = p.end;
                }
                assert_eq!(next, n, "{n} {weights:?}: {parts:?}");
                let total: f64 = weights.iter().sum();
                for (p, w) in parts.iter().zip(&weights) {
                    let want = n as f64 * w / total;
                    assert!(
                        (p.len() as f64 - want).abs() < 1.0 + 1e-9,
                        "{n} {weights:?}: {parts:?}"
                    );
                }
            }
        }
        assert_eq!(split(8, &[1.0, 3.0]), [0..2, 2..8]);
        assert_eq!(split(3, &[1.0, 1.0]), [0..2, 2..3]);
    }
}
