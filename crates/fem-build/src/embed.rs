//! PTX embedded in a host binary: the generated `include_str!` table and
//! the types the host reads it through.

use std::io::Write;
use std::path::Path;

/// One PTX module compiled for one virtual architecture.
#[derive(Clone, Copy, Debug)]
pub struct PtxSource {
    /// `sm_80`, `sm_90`, ...
    pub arch: &'static str,
    /// The PTX text of the whole module, as `include_str!` embedded it.
    pub ptx: &'static str,
}

/// Every architecture a kernel crate was compiled for, or why none was.
#[derive(Clone, Copy, Debug)]
pub struct PtxSet {
    /// Package name of the kernel crate.
    pub crate_name: &'static str,
    /// One module per architecture built; empty when none was.
    pub sources: &'static [PtxSource],
    /// Why the set is empty (toolchain missing, disabled), when it is.
    pub unavailable: Option<&'static str>,
}

impl PtxSource {
    /// Numeric architecture: `sm_80` → 80.
    pub fn sm(&self) -> Option<u32> {
        self.arch.strip_prefix("sm_").and_then(|s| s.trim_end_matches('a').parse().ok())
    }

    /// Names of the `.entry` kernels in the module.
    pub fn entries(&self) -> Vec<&'static str> {
        entry_names(self.ptx)
    }
}

impl PtxSet {
    /// Whether PTX was compiled for at least one architecture.
    pub fn is_built(&self) -> bool {
        !self.sources.is_empty()
    }

    /// The newest module a device of compute capability `major.minor` can
    /// JIT-compile: the highest `sm_XY` not above it.
    pub fn best_for(&self, major: u32, minor: u32) -> Option<&'static PtxSource> {
        let cc = major * 10 + minor;
        self.sources.iter().filter(|s| s.sm().is_some_and(|sm| sm <= cc)).max_by_key(|s| s.sm())
    }

    /// The architectures compiled for, in table order (for messages).
    pub fn archs(&self) -> Vec<&'static str> {
        self.sources.iter().map(|s| s.arch).collect()
    }
}

/// A PTX module cut into the part every kernel needs (header, globals,
/// helper functions) and one text per `.entry`, so a host can JIT-compile
/// only the kernels it launches: a module of all of them can take the
/// driver most of a minute to compile.
#[derive(Clone, Debug)]
pub struct SplitPtx<'a> {
    /// Everything outside the `.entry` bodies: header, globals, `.func`
    /// helpers and prototypes, in their original order.
    pub common: String,
    /// `(name, text)` of each `.entry`, text from its first line to its `}`.
    pub entries: Vec<(&'a str, &'a str)>,
}

impl<'a> SplitPtx<'a> {
    /// Splits at top-level function boundaries: a function starts at a line
    /// beginning `.entry`/`.func` (optionally `.visible`/`.weak`) and ends
    /// at the `}` in column 0 (or, for a prototype, at the `;` before any
    /// body).
    pub fn new(ptx: &'a str) -> Self {
        let mut common = String::new();
        let mut entries = Vec::new();
        let mut offset = 0;
        let lines: Vec<&str> = ptx.split_inclusive('\n').collect();
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            let head = l.trim_start_matches(".visible ").trim_start_matches(".weak ");
            if head.starts_with(".entry") || head.starts_with(".func") {
                let start = offset;
                let mut body = false;
                let mut j = i;
                let mut end = offset;
                while j < lines.len() {
                    end += lines[j].len();
                    let t = lines[j].trim();
                    if t == "{" {
                        body = true;
                    }
                    if (body && lines[j].trim_end() == "}") || (!body && t.ends_with(';')) {
                        break;
                    }
                    j += 1;
                }
                let text = &ptx[start..end];
                match (head.starts_with(".entry"), body) {
                    (true, true) => {
                        let name = head[".entry".len()..].trim_start().split(|c: char| c == '(' || c.is_whitespace()).next().unwrap_or("");
                        entries.push((name, text));
                    }
                    _ => common.push_str(text),
                }
                offset = end;
                i = j + 1;
                continue;
            }
            common.push_str(l);
            offset += l.len();
            i += 1;
        }
        Self { common, entries }
    }

    /// The text of entry `name`.
    fn entry(&self, name: &str) -> Option<&'a str> {
        self.entries.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
    }

    /// A module holding the common part and the one entry `name`.
    pub fn module(&self, name: &str) -> Option<String> {
        Some(format!("{}\n{}", self.common, self.entry(name)?))
    }

    /// [`Self::module`] with `.maxntid threads, 1, 1` on the entry, and
    /// `.minnctapersm blocks` when `blocks` > 0: `ptxas` then keeps the
    /// registers within what `blocks` blocks of `threads` may have, which a
    /// kernel without the bound may exceed (it assumes up to 255 per
    /// thread).
    pub fn module_for_block(&self, name: &str, threads: u32, blocks: u32) -> Option<String> {
        let text = self.entry(name)?;
        let body = text.find("\n{")?;
        let min = if blocks > 0 { format!("\n.minnctapersm {blocks}") } else { String::new() };
        Some(format!("{}\n{}\n.maxntid {threads}, 1, 1{min}{}", self.common, &text[..body], &text[body..]))
    }
}

/// `.entry` names of a PTX text.
pub fn entry_names(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry "))?;
            rest.split(|c: char| c == '(' || c.is_whitespace()).next()
        })
        .collect()
}

/// Writes the Rust source of a `PtxSet` constant named `const_name`:
/// `include_str!` of each artifact, or an empty set carrying `unavailable`.
pub(crate) fn write_set(
    path: &Path,
    const_name: &str,
    crate_name: &str,
    artifacts: &[(String, std::path::PathBuf)],
    unavailable: Option<&str>,
) -> std::io::Result<()> {
    let mut src = String::new();
    src.push_str(&format!(
        "/// PTX of `{crate_name}`, compiled at build time (a `static`, so the\n/// text is in the binary once however often it is used).\npub static {const_name}: ::fem_build::PtxSet = ::fem_build::PtxSet {{\n    crate_name: {crate_name:?},\n    sources: &[\n"
    ));
    for (arch, p) in artifacts {
        src.push_str(&format!(
            "        ::fem_build::PtxSource {{ arch: {arch:?}, ptx: include_str!({:?}) }},\n",
            p.display().to_string()
        ));
    }
    src.push_str(&format!("    ],\n    unavailable: {unavailable:?},\n}};\n"));
    let tmp = path.with_extension("rs.tmp");
    std::fs::File::create(&tmp)?.write_all(src.as_bytes())?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX80: &str = ".version 7.0\n.target sm_80\n.visible .entry fem_a_f64(\n\t.param .u64 p\n)\n{\n}\n.entry fem_b(\n)\n";
    const PTX90: &str = ".target sm_90\n.visible .entry fem_a_f64(\n)\n";

    #[test]
    fn entries_and_arch_choice() {
        static SOURCES: [PtxSource; 2] = [PtxSource { arch: "sm_80", ptx: PTX80 }, PtxSource { arch: "sm_90", ptx: PTX90 }];
        let set = PtxSet { crate_name: "k", sources: &SOURCES, unavailable: None };
        assert_eq!(SOURCES[0].entries(), vec!["fem_a_f64", "fem_b"]);
        assert_eq!(set.best_for(9, 0).unwrap().arch, "sm_90");
        assert_eq!(set.best_for(8, 9).unwrap().arch, "sm_80");
        assert_eq!(set.best_for(12, 0).unwrap().arch, "sm_90");
        assert!(set.best_for(7, 5).is_none());
        assert!(set.is_built());
        assert_eq!(set.archs(), vec!["sm_80", "sm_90"]);
    }

    #[test]
    fn thread_bound_goes_between_parameters_and_body() {
        let split = SplitPtx::new(PTX80);
        let m = split.module_for_block("fem_a_f64", 289, 0).unwrap();
        assert!(m.contains("\t.param .u64 p\n)\n.maxntid 289, 1, 1\n{\n}"), "{m}");
        let m = split.module_for_block("fem_a_f64", 128, 3).unwrap();
        assert!(m.contains("\t.param .u64 p\n)\n.maxntid 128, 1, 1\n.minnctapersm 3\n{\n}"), "{m}");
        assert!(split.module_for_block("fem_missing", 32, 0).is_none());
    }

    #[test]
    fn split_keeps_helpers_and_separates_entries() {
        let ptx = ".version 7.0\n.target sm_80\n.extern .shared .align 16 .b8 smem[];\n.func  (.param .b32 r) helper(\n\t.param .b32 a\n)\n;\n.visible .entry k1(\n\t.param .u64 p\n)\n{\n\tret;\n}\n\t// comment\n.func  (.param .b32 r) helper(\n\t.param .b32 a\n)\n{\n\tret;\n}\n.visible .entry k2(\n)\n{\n\tret;\n}\n";
        let s = SplitPtx::new(ptx);
        assert_eq!(s.entries.iter().map(|e| e.0).collect::<Vec<_>>(), ["k1", "k2"]);
        assert!(s.common.contains(".target sm_80") && s.common.contains("smem[]") && s.common.matches("helper(").count() == 2);
        assert!(!s.common.contains(".entry"));
        let m = s.module("k2").unwrap();
        assert!(m.contains(".visible .entry k2(") && !m.contains("k1("));
        assert!(m.ends_with("}\n"));
        assert!(s.module("k3").is_none());
        // every byte is accounted for
        let total: usize = s.common.len() + s.entries.iter().map(|e| e.1.len()).sum::<usize>();
        assert_eq!(total, ptx.len());
    }

    #[test]
    fn generated_table_names_every_artifact() {
        let dir = std::env::temp_dir().join(format!("fem-build-embed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("set.rs");
        let arts = vec![("sm_80".to_string(), dir.join("k.sm_80.ptx"))];
        write_set(&out, "K_PTX", "k", &arts, None).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("pub static K_PTX: ::fem_build::PtxSet"));
        assert!(text.contains("arch: \"sm_80\", ptx: include_str!("));
        assert!(text.contains("unavailable: None"));
        write_set(&out, "K_PTX", "k", &[], Some("no toolchain")).unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("sources: &[\n    ]") && text.contains("Some(\"no toolchain\")"), "{text}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
