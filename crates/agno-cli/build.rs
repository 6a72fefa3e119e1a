//! Link flags of the `agno` binary.
//!
//! On Linux with glibc, relative relocations are packed (`-z pack-relative-relocs`, `DT_RELR`):
//! the binary is position independent, and its ~130,000 relative relocations took 3 MB of
//! `.rela.dyn` that the loader read at every start and that stayed in the process's resident
//! memory; packed, they take kilobytes. Used only when the system's C toolchain links a test
//! program with it (GNU ld 2.38 or lld 15, with glibc 2.36 or later); `AGNO_NO_RELR=1` turns it
//! off.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AGNO_NO_RELR");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" || !var("AGNO_NO_RELR").is_empty()
    {
        return;
    }
    if links_packed_relocations() {
        println!("cargo:rustc-link-arg-bin=agno=-Wl,-z,pack-relative-relocs");
    } else {
        println!("cargo:warning=the linker cannot pack relative relocations: agno links without them");
    }
}

/// Whether the C toolchain links a position-independent test program with packed relocations.
fn links_packed_relocations() -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return false };
    let source = out.join("relr_probe.c");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    Command::new(compiler)
        .args(["-fPIE", "-pie", "-Wl,-z,pack-relative-relocs", "-o"])
        .arg(out.join("relr_probe"))
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success())
}
