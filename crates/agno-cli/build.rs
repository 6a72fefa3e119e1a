//! Link flags of the `agno` binary.
//!
//! On Linux with glibc, relative relocations are packed (`-z pack-relative-relocs`, `DT_RELR`):
//! the binary is position independent, and its ~130,000 relative relocations took 3 MB of
//! `.rela.dyn` that the loader read at every start and that stayed in the process's resident
//! memory; packed, they take kilobytes. Used only when the system's C toolchain links a test
//! program with it (GNU ld 2.38 or lld 15, with glibc 2.36 or later); `AGNO_NO_RELR=1` turns it
//! off.
//!
//! In release builds linked by LLD (rustc's default linker on x86_64 Linux), the functions a
//! server runs while it starts are placed side by side (`--symbol-ordering-file=link-order.txt`,
//! written by `scripts/build/link-order`): a start then maps a few MiB of the binary instead of
//! pages spread over all of its text (an idle `agno serve` 28 -> 12 MiB resident). Names the
//! build no longer has are skipped. `AGNO_NO_LINK_ORDER=1` turns it off.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=AGNO_NO_RELR");
    println!("cargo:rerun-if-env-changed=AGNO_NO_LINK_ORDER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    if var("AGNO_NO_RELR").is_empty() {
        if links_packed_relocations() {
            println!("cargo:rustc-link-arg-bin=agno=-Wl,-z,pack-relative-relocs");
        } else {
            println!("cargo:warning=the linker cannot pack relative relocations: agno links without them");
        }
    }
    if var("AGNO_NO_LINK_ORDER").is_empty() && var("PROFILE") == "release" {
        let order = PathBuf::from(var("CARGO_MANIFEST_DIR")).join("link-order.txt");
        let args = [format!("-Wl,--symbol-ordering-file={}", order.display()), "-Wl,--no-warn-symbol-ordering".into()];
        if order.is_file() && rustc_links_with(&args) {
            for arg in args {
                println!("cargo:rustc-link-arg-bin=agno={arg}");
            }
        }
    }
}

/// Whether the C toolchain links a position-independent test program with packed relocations.
fn links_packed_relocations() -> bool {
    let Some(out) = out_dir() else { return false };
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

/// Whether rustc, with this build's flags and target, links a test program with `args` passed
/// to its linker (the ordering flags are LLD's: GNU ld refuses them).
fn rustc_links_with(args: &[String]) -> bool {
    let Some(out) = out_dir() else { return false };
    let source = out.join("order_probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned()));
    if let Ok(target) = std::env::var("TARGET") {
        rustc.args(["--target", &target]);
    }
    if let Ok(flags) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    for arg in args {
        rustc.arg("-C").arg(format!("link-arg={arg}"));
    }
    rustc.arg("-o").arg(out.join("order_probe")).arg(&source).output().is_ok_and(|o| o.status.success())
}

fn out_dir() -> Option<PathBuf> {
    std::env::var_os("OUT_DIR").map(PathBuf::from).filter(|dir| Path::new(dir).is_dir())
}
