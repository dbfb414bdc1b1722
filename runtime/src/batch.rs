//! Batches that live where kernels run: on the GPU in the kernels' own layout (host memory on the
//! CPU backend), so that kernels chain with no round trip through the host.

use crate::column::{Arg, Column, Out, Slot};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::gpu::GpuDevice;
use crate::resident::Resident;
use bigfuse_core::{Size, Type, Value};
use num_bigint::BigUint;

/// A batch of values of one type, one per instance, on a device: the arguments and results of
/// kernels launched with `launch` (which returns without waiting for the GPU).
///
/// Made from host data with [`Batch::big`], [`Batch::u64`], [`Batch::u32`], [`Batch::bool`],
/// [`Batch::zp`] or [`Batch::new`] (any type, arrays included); read back with
/// [`Batch::to_big`], [`Batch::to_limbs`], [`Batch::to_u64`], [`Batch::to_u32`],
/// [`Batch::to_bool`] or [`Batch::read_into`], which wait for the kernels that compute it.
/// A batch knows its type and device: passing it where another type or device is expected is an
/// error, never a wrong number.
///
/// ```
/// use bigfuse_runtime::{Batch, Device};
/// use num_bigint::BigUint;
///
/// let dev = Device::cpu();
/// // 128-bit values, from `BigUint`s or from little-endian limbs (two per value).
/// let x = Batch::big(&dev, 128, &[BigUint::from(1u8) << 100, BigUint::from(3u8)])?;
/// let y = Batch::big(&dev, 128, &[0, 1 << 36, 3, 0u64])?;
/// assert_eq!((x.len(), x.ty().to_string()), (2, "U<128>".to_string()));
/// assert_eq!(x.to_big()?, y.to_big()?);
/// assert_eq!(x.to_limbs()?, [0, 1 << 36, 3, 0]);
///
/// // Values are checked as they are converted: 2^128 is not a 128-bit value.
/// assert!(Batch::big(&dev, 128, &[BigUint::from(1u8) << 128]).is_err());
/// // Reading waits for the kernels computing the batch (none here; on the CPU backend a launch
/// // returns its results computed).
/// x.wait()?;
/// assert!(x.is_ready());
/// # Ok::<(), bigfuse_runtime::Error>(())
/// ```
///
/// Several threads may read one batch, or pass it to launches, at once: see [`Device`]'s section
/// on concurrency.
pub struct Batch {
    slot: Slot,
    n: usize,
    store: Store,
}

enum Store {
    Gpu(Resident),
    Host(Column),
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match &self.store {
            Store::Gpu(r) => format!("GPU {}", r.ordinal()),
            Store::Host(_) => "host".to_string(),
        };
        write!(f, "Batch({} x {} on {place})", self.n, self.slot.ty)
    }
}

impl Batch {
    /// Uploads host data as a batch of `ty` (sizes constant, e.g. `Type::array(Type::U32,
    /// Size::lit(8))`), one value per instance (`N` values per instance, flat, for an array type).
    /// Values are checked as they are converted (widths, residues).
    pub fn new<'a>(dev: &Device, ty: &Type, data: impl Into<Arg<'a>>) -> Result<Batch> {
        let arg = data.into();
        if !ty.is_concrete() {
            return Err(Error::Argument {
                kernel: String::new(),
                message: format!("a batch needs a type with constant sizes, not {ty}"),
            });
        }
        let slot = Slot::new("batch", ty)?;
        if let Arg::Batch(b) = arg {
            return b.copy_to(dev);
        }
        let n = slot.instances("batch", &arg)?;
        match dev {
            Device::Cpu(_) => {
                crate::column::check_values(std::slice::from_ref(&slot), &[arg])?;
                let values = (0..n * slot.per.max(1))
                    .map(|i| arg_value(&arg, &slot, i))
                    .collect();
                let elem = match ty {
                    Type::Array(e, _) => (**e).clone(),
                    t => t.clone(),
                };
                Ok(Batch {
                    n,
                    store: Store::Host(Column::from_values(&elem, values)?),
                    slot,
                })
            }
            Device::Gpu(g) => Ok(Batch {
                store: Store::Gpu(Resident::upload(g, &slot, &arg, n)?),
                slot,
                n,
            }),
        }
    }

    /// Big integers of `bits` bits (a multiple of 64): `BigUint` values or their little-endian
    /// limbs, `bits / 64` words per value.
    pub fn big<'a>(
        dev: &Device,
        bits: u64,
        data: impl crate::column::IntoArg<'a, crate::column::kind::Big>,
    ) -> Result<Batch> {
        Batch::new(dev, &Type::Big(Size::lit(bits)), data.into_arg())
    }

    /// `u64` values.
    pub fn u64(dev: &Device, values: &[u64]) -> Result<Batch> {
        Batch::new(dev, &Type::U64, values)
    }

    /// `u32` values.
    pub fn u32(dev: &Device, values: &[u32]) -> Result<Batch> {
        Batch::new(dev, &Type::U32, values)
    }

    /// `bool` values.
    pub fn bool(dev: &Device, values: &[bool]) -> Result<Batch> {
        Batch::new(dev, &Type::Bool, values)
    }

    /// Residues modulo the prime `p` (each below `p`).
    pub fn zp(dev: &Device, p: u64, residues: &[u64]) -> Result<Batch> {
        Batch::new(dev, &Type::Zp(Size::lit(p)), residues)
    }

    /// The type of one instance.
    pub fn ty(&self) -> &Type {
        &self.slot.ty
    }

    /// Instances.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the batch has no instance.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether the batch is on a GPU (else in host memory, for the CPU backend).
    pub fn is_on_gpu(&self) -> bool {
        matches!(self.store, Store::Gpu(_))
    }

    /// Waits until the kernels computing this batch have finished (and reports their errors).
    pub fn wait(&self) -> Result<()> {
        match &self.store {
            Store::Gpu(r) => r.wait(),
            Store::Host(_) => Ok(()),
        }
    }

    /// Whether the kernels computing this batch have finished.
    pub fn is_ready(&self) -> bool {
        match &self.store {
            Store::Gpu(r) => r.is_ready(),
            Store::Host(_) => true,
        }
    }

    /// The values as big integers (a batch of `U<BITS>` or of arrays of it).
    pub fn to_big(&self) -> Result<Vec<BigUint>> {
        self.read_vec(|v| Out::Big(v))
    }

    /// The values as little-endian 64-bit limbs, `BITS / 64` per value (big integers), or as
    /// `u64` values and residues.
    pub fn to_limbs(&self) -> Result<Vec<u64>> {
        self.read_vec(|v| Out::U64(v))
    }

    /// The values of a batch of `u64` or `Zp<P>` (the same as [`Batch::to_limbs`]).
    pub fn to_u64(&self) -> Result<Vec<u64>> {
        self.to_limbs()
    }

    /// The values of a batch of `u32`.
    pub fn to_u32(&self) -> Result<Vec<u32>> {
        self.read_vec(|v| Out::U32(v))
    }

    /// The values of a batch of `bool`.
    pub fn to_bool(&self) -> Result<Vec<bool>> {
        self.read_vec(|v| Out::Bool(v))
    }

    /// The values in a new vector, read through the `Out` variant `out`.
    fn read_vec<T>(&self, out: fn(&mut Vec<T>) -> Out<'_>) -> Result<Vec<T>> {
        let mut v = Vec::new();
        self.read_into(out(&mut v))?;
        Ok(v)
    }

    /// The values as an owned column (big integers as `BigUint`).
    pub fn to_column(&self) -> Result<Column> {
        let mut c = Column::empty(&self.slot.ty);
        self.read_into(c.as_out())?;
        Ok(c)
    }

    /// Reads the values into `out` (resized; its allocations reused), after the kernels that
    /// compute them.
    pub fn read_into(&self, mut out: Out) -> Result<()> {
        self.slot.check_out("batch", &out)?;
        match &self.store {
            Store::Host(col) => col.clone().write_to(&self.slot.ty, &mut out),
            Store::Gpu(resident) => {
                let r = resident.read(&self.slot, self.n, &mut out);
                if r.is_err() {
                    out.clear();
                }
                r
            }
        }
    }

    /// A copy of this batch on `dev` (through the host when the devices differ).
    pub fn copy_to(&self, dev: &Device) -> Result<Batch> {
        let col = self.to_column()?;
        Batch::new(dev, &self.slot.ty, col.as_arg())
    }

    /// The device address of the batch on `gpu`, or an error when it lives elsewhere.
    pub(crate) fn device_ptr(&self, gpu: &GpuDevice) -> Result<u64> {
        match &self.store {
            Store::Gpu(r) => r.ptr_on(gpu).ok_or_else(|| Error::Argument {
                kernel: String::new(),
                message: format!(
                    "the batch lives on GPU {}, but the call runs on GPU {}: copy it with `Batch::copy_to`",
                    r.ordinal(),
                    gpu.ordinal()
                ),
            }),
            Store::Host(_) => Err(Error::Argument {
                kernel: String::new(),
                message: "the batch lives in host memory (it was made on the CPU backend), but the call runs on a GPU: copy it with `Batch::copy_to`".into(),
            }),
        }
    }

    /// Instance `i`'s value for the evaluator (CPU backend only).
    pub(crate) fn host_value(&self, i: usize) -> Value {
        let Store::Host(col) = &self.store else {
            unreachable!("the CPU backend checks that its batches are on the host")
        };
        let arg = col.as_arg();
        match &self.slot.ty {
            Type::Array(..) => arg.value_of(&self.slot.ty, i),
            _ => arg.value(i),
        }
    }

    /// Checks that the batch can feed a call on `dev`.
    pub(crate) fn check_device(&self, dev: &Device) -> Result<()> {
        match (dev, &self.store) {
            (Device::Gpu(g), _) => self.device_ptr(g).map(|_| ()),
            (Device::Cpu(_), Store::Host(_)) => Ok(()),
            (Device::Cpu(_), Store::Gpu(r)) => Err(Error::Argument {
                kernel: String::new(),
                message: format!(
                    "the batch lives on GPU {}, but the call runs on the CPU backend: copy it with `Batch::copy_to`",
                    r.ordinal()
                ),
            }),
        }
    }

    /// A batch of results on the device (being computed there).
    #[cfg(feature = "cuda")]
    pub(crate) fn on_gpu(slot: Slot, n: usize, resident: Resident) -> Batch {
        Batch {
            slot,
            n,
            store: Store::Gpu(resident),
        }
    }

    /// A batch of results computed on the host.
    pub(crate) fn on_host(slot: Slot, n: usize, col: Column) -> Batch {
        Batch {
            slot,
            n,
            store: Store::Host(col),
        }
    }
}

/// Value `i` (flat) of a checked host argument, as the evaluator holds it.
fn arg_value(arg: &Arg, slot: &Slot, i: usize) -> Value {
    let elem = match &slot.ty {
        Type::Array(e, _) => (**e).clone(),
        t => t.clone(),
    };
    // A one-element array view, so that limbs are grouped by the element's width.
    match arg.value_of(&Type::array(elem, Size::lit(1)), i) {
        Value::Array(mut v) if v.len() == 1 => v.pop().unwrap_or(Value::Bool(false)),
        other => other,
    }
}
