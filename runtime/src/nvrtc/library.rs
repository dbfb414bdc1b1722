//! Finding NVRTC at run time: the library of CUDA 13 or of CUDA 12, whichever the machine has.
//!
//! bigfuse loads NVRTC itself instead of through cudarc: cudarc looks for the names its build
//! feature fixes (a CUDA 12 build never tries `libnvrtc.so.13`), takes the first one that opens
//! whatever its version, and panics on a missing symbol. Here every candidate is checked (its
//! version, its symbols) and, when a driver is present, the NVRTC whose code that driver can load
//! is preferred (CUBIN from NVRTC 13 needs a CUDA 13 driver). Failures are values that list what
//! was found. The C API used here is the same in NVRTC 12 and 13.

use super::MIN_VERSION;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;

type Program = *mut c_void;
/// `nvrtcResult`; 0 is success.
type Status = c_int;

/// The entry points bigfuse calls, with their C signatures (unchanged from NVRTC 11.2 to 13).
struct Functions {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    error_string: unsafe extern "C" fn(Status) -> *const c_char,
    create_program: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Status,
    compile_program: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    log: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    destroy_program: unsafe extern "C" fn(*mut Program) -> Status,
    num_archs: unsafe extern "C" fn(*mut c_int) -> Status,
    archs: unsafe extern "C" fn(*mut c_int) -> Status,
}

/// A loaded NVRTC library of a supported version.
pub struct Nvrtc {
    version: (i32, i32),
    path: PathBuf,
    /// The `sm_XY` architectures it compiles for, as `XY`.
    archs: Vec<i32>,
    f: Functions,
    // The function pointers above point into this library: it is kept loaded with them.
    _lib: libloading::Library,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.describe())
    }
}

/// Why a compilation failed.
pub(crate) enum Failure {
    /// NVRTC rejected the source; its log.
    Rejected(String),
    /// An NVRTC call failed for another reason.
    Call(String),
}

/// Destroys the program when dropped, however the compilation ends.
struct ProgramGuard<'a> {
    lib: &'a Nvrtc,
    prog: Program,
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created by this library and is destroyed once, here.
        unsafe { (self.lib.f.destroy_program)(&mut self.prog) };
    }
}

impl Nvrtc {
    /// Opens `name` (a library name the loader searches for, or a path) and checks that it is an
    /// NVRTC bigfuse can use; the error says what was found instead.
    pub(crate) fn open(name: &str) -> std::result::Result<Nvrtc, String> {
        // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
        let lib = unsafe { libloading::Library::new(name) }.map_err(|e| {
            // libloading's own message is only "dlopen failed"; the loader's reason is its source.
            let why = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
            if why.contains("No such file") {
                format!("{name} (not found)")
            } else {
                format!("{name} ({why})")
            }
        })?;
        // SAFETY: each symbol is given the signature of nvrtc.h, the same in NVRTC 11.2 to 13.
        let f = unsafe {
            macro_rules! sym {
                ($s:literal) => {
                    *lib.get(concat!($s, "\0").as_bytes()).map_err(|_| {
                        format!(
                            "{name} (not an NVRTC library bigfuse can use: {} is missing)",
                            $s
                        )
                    })?
                };
            }
            Functions {
                version: sym!("nvrtcVersion"),
                error_string: sym!("nvrtcGetErrorString"),
                create_program: sym!("nvrtcCreateProgram"),
                compile_program: sym!("nvrtcCompileProgram"),
                log_size: sym!("nvrtcGetProgramLogSize"),
                log: sym!("nvrtcGetProgramLog"),
                cubin_size: sym!("nvrtcGetCUBINSize"),
                cubin: sym!("nvrtcGetCUBIN"),
                destroy_program: sym!("nvrtcDestroyProgram"),
                num_archs: sym!("nvrtcGetNumSupportedArchs"),
                archs: sym!("nvrtcGetSupportedArchs"),
            }
        };
        let path = mapped_file(f.version as usize).unwrap_or_else(|| PathBuf::from(name));
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the call writes two ints.
        if unsafe { (f.version)(&mut major, &mut minor) } != 0 {
            return Err(format!("{} (nvrtcVersion failed)", path.display()));
        }
        let mut count: c_int = 0;
        // SAFETY: the first call writes one int; the second as many ints as it reported.
        let archs = unsafe {
            if (f.num_archs)(&mut count) == 0 && count > 0 {
                let mut archs = vec![0 as c_int; count as usize];
                if (f.archs)(archs.as_mut_ptr()) == 0 {
                    archs
                } else {
                    Vec::new()
                }
            } else {
                Vec::new()
            }
        };
        let nvrtc = Nvrtc {
            version: (major, minor),
            path,
            archs,
            f,
            _lib: lib,
        };
        if nvrtc.version < MIN_VERSION {
            return Err(format!(
                "{} (NVRTC {}.{}, older than {}.{})",
                nvrtc.path.display(),
                major,
                minor,
                MIN_VERSION.0,
                MIN_VERSION.1
            ));
        }
        Ok(nvrtc)
    }

    /// The version, e.g. (13, 0).
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// The file the library was loaded from (the name it was found by where the platform does not
    /// tell).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The architectures it compiles for (`90` for `sm_90`); empty if it does not say.
    pub fn architectures(&self) -> &[i32] {
        &self.archs
    }

    /// "NVRTC 12.9 (/path/to/libnvrtc.so.12)".
    pub fn describe(&self) -> String {
        format!(
            "NVRTC {}.{} ({})",
            self.version.0,
            self.version.1,
            self.path.display()
        )
    }

    /// Whether it can compile for `arch` (`sm_90`, `sm_90a`); unknown architectures and a library
    /// that does not list its own are left to the compile to judge.
    pub fn supports(&self, arch: &str) -> bool {
        let digits: String = arch
            .strip_prefix("sm_")
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        match digits.parse::<i32>() {
            Ok(a) if !self.archs.is_empty() => self.archs.contains(&a),
            _ => true,
        }
    }

    fn error_text(&self, status: Status) -> String {
        // SAFETY: NVRTC returns a static NUL-terminated string (or null) for any status.
        let p = unsafe { (self.f.error_string)(status) };
        if p.is_null() {
            format!("NVRTC error {status}")
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }

    fn check(&self, status: Status, during: &str) -> std::result::Result<(), Failure> {
        if status == 0 {
            Ok(())
        } else {
            Err(Failure::Call(format!(
                "{during}: {} ({})",
                self.error_text(status),
                self.describe()
            )))
        }
    }

    /// Compiles `source` (file name `name`) with `options` to CUBIN.
    pub(crate) fn compile(
        &self,
        source: &CStr,
        name: &CStr,
        options: &[String],
    ) -> std::result::Result<Vec<u8>, Failure> {
        let options: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Failure::Call("an option contains a NUL byte".into()))?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: the strings are NUL-terminated and outlive the call; no headers are passed.
        let status = unsafe {
            (self.f.create_program)(
                &mut prog,
                source.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        self.check(status, "creating an NVRTC program")?;
        let guard = ProgramGuard { lib: self, prog };
        // SAFETY: a live program; `option_ptrs` holds as many valid strings as passed.
        let status = unsafe {
            (self.f.compile_program)(guard.prog, option_ptrs.len() as c_int, option_ptrs.as_ptr())
        };
        if status != 0 {
            let log = self.log(guard.prog);
            return Err(Failure::Rejected(if log.trim().is_empty() {
                self.error_text(status)
            } else {
                log
            }));
        }
        let mut size = 0usize;
        // SAFETY: a compiled program; the size is written to `size`.
        self.check(
            unsafe { (self.f.cubin_size)(guard.prog, &mut size) },
            "reading the CUBIN size",
        )?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` holds the `size` bytes NVRTC reported.
        self.check(
            unsafe { (self.f.cubin)(guard.prog, cubin.as_mut_ptr() as *mut c_char) },
            "reading the CUBIN",
        )?;
        Ok(cubin)
    }

    /// The program's log (empty if it cannot be read).
    fn log(&self, prog: Program) -> String {
        let mut size = 0usize;
        // SAFETY: a live program; the size is written to `size`.
        if unsafe { (self.f.log_size)(prog, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut log = vec![0u8; size];
        // SAFETY: `log` holds the `size` bytes NVRTC reported, the NUL included.
        if unsafe { (self.f.log)(prog, log.as_mut_ptr() as *mut c_char) } != 0 {
            return String::new();
        }
        let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
        String::from_utf8_lossy(&log[..end]).into_owned()
    }
}

/// The names tried, newest first, or the one `BIGFUSE_NVRTC` names (a file name or path).
pub(crate) fn candidates() -> Vec<String> {
    if let Some(p) = std::env::var_os("BIGFUSE_NVRTC").filter(|p| !p.is_empty()) {
        return vec![p.to_string_lossy().into_owned()];
    }
    if cfg!(windows) {
        vec!["nvrtc64_130_0.dll".into(), "nvrtc64_120_0.dll".into()]
    } else {
        // The unversioned name last: it is a development symlink to any version.
        vec![
            "libnvrtc.so.13".into(),
            "libnvrtc.so.12".into(),
            "libnvrtc.so".into(),
        ]
    }
}

/// The first candidate that works, preferring one whose code `driver` (the CUDA version the
/// driver supports, when there is one) can load: the newest NVRTC of the driver's major version or
/// older. An NVRTC too new for the driver is still returned when it is the only one (it compiles;
/// loading its code on that GPU is refused later, saying why). The error lists every candidate
/// and what was wrong with it.
pub(crate) fn choose(
    candidates: &[String],
    driver: Option<(i32, i32)>,
) -> std::result::Result<Nvrtc, String> {
    let mut tried = Vec::new();
    let mut too_new = None;
    for name in candidates {
        match Nvrtc::open(name) {
            Ok(lib) if driver.is_some_and(|(major, _)| lib.version.0 > major) => {
                if let Some((major, minor)) = driver {
                    tried.push(format!(
                        "{} (NVRTC {}.{}, newer than the driver's CUDA {major}.{minor})",
                        lib.path.display(),
                        lib.version.0,
                        lib.version.1
                    ));
                }
                too_new.get_or_insert(lib);
            }
            Ok(lib) => return Ok(lib),
            Err(why) => tried.push(why),
        }
    }
    too_new.ok_or_else(|| format!("tried {}", tried.join("; ")))
}

/// The file mapped at `addr` in this process (Linux: from /proc/self/maps).
fn mapped_file(addr: usize) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        let path = fields.nth(4)?;
        (start <= addr && addr < end && path.starts_with('/')).then(|| PathBuf::from(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_foreign_library_is_described() {
        let e = choose(&["/nonexistent/libnvrtc.so.12".into()], None).unwrap_err();
        assert!(e.contains("/nonexistent/libnvrtc.so.12"), "{e}");
        // A library that is not NVRTC: its symbols are missing, and that is said.
        if std::path::Path::new("/proc/self/maps").exists() {
            let e = choose(&["libc.so.6".into()], None).unwrap_err();
            assert!(e.contains("nvrtcVersion is missing"), "{e}");
        }
    }

    #[test]
    fn the_nvrtc_found_has_a_supported_version() {
        let Ok(lib) = choose(&candidates(), None) else {
            eprintln!("no NVRTC library: nothing to check");
            return;
        };
        assert!(lib.version() >= MIN_VERSION, "{lib:?}");
        assert!(lib.supports("sm_90"), "{lib:?} {:?}", lib.architectures());
        assert!(!lib.supports("sm_7"), "{lib:?}");
        // A driver older than every candidate still gets a library (compiling needs no driver).
        assert!(choose(&candidates(), Some((11, 0))).is_ok());
        let src = CString::new("extern \"C\" __global__ void k(int *x) { *x = 1; }").unwrap();
        let cubin = lib
            .compile(&src, c"k.cu", &["--gpu-architecture=sm_90".to_string()])
            .ok()
            .unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF");
    }

    #[test]
    fn the_driver_chooses_between_major_versions() {
        let majors: Vec<i32> = candidates()
            .iter()
            .filter_map(|c| Nvrtc::open(c).ok())
            .map(|l| l.version().0)
            .collect();
        let Some(&newest) = majors.iter().max() else {
            eprintln!("no NVRTC library: nothing to choose");
            return;
        };
        assert_eq!(choose(&candidates(), None).unwrap().version().0, newest);
        // A driver of the major version below the newest NVRTC: a library it can run wins.
        let driver = newest - 1;
        let chosen = choose(&candidates(), Some((driver, 9)))
            .unwrap()
            .version()
            .0;
        if majors.iter().any(|m| *m <= driver) {
            assert!(
                chosen <= driver,
                "NVRTC {chosen} for a CUDA {driver} driver"
            );
        } else {
            assert_eq!(chosen, newest, "the only NVRTC still compiles");
        }
    }
}
