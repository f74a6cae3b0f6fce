//! Rebuilds opctl when a template changes: `include_dir!` embeds templates/
//! in the binary, but cargo cannot see files a macro reads.

fn main() {
    println!("cargo::rerun-if-changed=templates");
}
