//! YCSB's CoreWorkload: its properties (read from YCSB's own property files, overridden by
//! `-p name=value`), its keys (`user` + FNV-hashed or ordered key number), its records (10 fields
//! of 100 bytes stored together as one value, as YCSB's RocksDB binding stores them), and the
//! operations of the run phase (READ, UPDATE, INSERT, SCAN, READMODIFYWRITE), chosen exactly as
//! CoreWorkload chooses them.

use super::gen::{
    fill_random_bytes, AcknowledgedCounter, DiscreteGenerator, ExponentialGenerator, HotspotIntegerGenerator,
    ScrambledZipfianGenerator, SequentialGenerator, SkewedLatestGenerator, UniformLongGenerator, ZipfianGenerator,
};
use crate::gen::Rng;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// YCSB's workload files `workloada` … `workloadf` (Apache-2.0, Yahoo! Inc.; see
/// `crates/jackdaw-bench/ycsb/NOTICE`), compiled in so that `ycsb` runs them by letter.
pub const BUILTIN: [(&str, &str); 6] = [
    ("a", include_str!("../../ycsb/workloada")),
    ("b", include_str!("../../ycsb/workloadb")),
    ("c", include_str!("../../ycsb/workloadc")),
    ("d", include_str!("../../ycsb/workloadd")),
    ("e", include_str!("../../ycsb/workloade")),
    ("f", include_str!("../../ycsb/workloadf")),
];

/// The order a run uses the loaded database in: YCSB's recommended order, D last (it inserts).
pub const RUN_ORDER: [&str; 6] = ["a", "b", "c", "f", "e", "d"];

/// Every property name this port reads (CoreWorkload's and the client's). Any other name in a
/// file or a `-p` is reported.
pub const KNOWN: &[&str] = &[
    "workload",
    "recordcount",
    "operationcount",
    "insertstart",
    "insertcount",
    "table",
    "fieldcount",
    "fieldlength",
    "fieldlengthdistribution",
    "fieldnameprefix",
    "readallfields",
    "writeallfields",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "requestdistribution",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "insertorder",
    "zeropadding",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "exponential.percentile",
    "exponential.frac",
    "zipfianconstant",
    "maxexecutiontime",
    "threadcount",
    "dataintegrity",
];

/// A set of YCSB properties, in the order of precedence YCSB uses: later sets win.
#[derive(Debug, Clone, Default)]
pub struct Props {
    map: BTreeMap<String, String>,
    /// Names neither CoreWorkload nor the client reads, with where they came from.
    pub unknown: Vec<String>,
}

impl Props {
    /// Parse a Java properties file (`name=value`, `name: value` or `name value`; `#` and `!`
    /// comments; CRLF or LF lines; a trailing `\` continues a line).
    pub fn parse(text: &str, origin: &str) -> Result<Props> {
        let mut p = Props::default();
        let mut pending = String::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim_end_matches('\r');
            let line = if pending.is_empty() { line.trim_start() } else { line.trim() };
            if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
                continue;
            }
            if let Some(cont) = line.strip_suffix('\\') {
                pending.push_str(cont);
                continue;
            }
            pending.push_str(line);
            let full = std::mem::take(&mut pending);
            let cut = full.find(['=', ':', ' ', '\t']).unwrap_or(full.len());
            let name = full[..cut].trim();
            let rest = full[cut..].trim_start();
            let value = rest.strip_prefix(['=', ':']).unwrap_or(rest).trim();
            if name.is_empty() {
                bail!("{origin}, line {}: no property name in {raw:?}", i + 1);
            }
            p.set(name, value, origin);
        }
        Ok(p)
    }

    /// Read a property file.
    pub fn read(path: &Path) -> Result<Props> {
        let text = std::fs::read_to_string(path).with_context(|| format!("read workload file {}", path.display()))?;
        Props::parse(&text, &path.display().to_string())
    }

    /// Set one property (an unknown name is kept and reported).
    pub fn set(&mut self, name: &str, value: &str, origin: &str) {
        if !KNOWN.contains(&name) {
            let note = format!("{name} (from {origin})");
            if !self.unknown.contains(&note) {
                self.unknown.push(note);
            }
        }
        self.map.insert(name.to_string(), value.to_string());
    }

    /// Apply `-p name=value` overrides.
    pub fn apply_overrides(&mut self, overrides: &[String]) -> Result<()> {
        for o in overrides {
            let Some((n, v)) = o.split_once('=').filter(|(n, _)| !n.trim().is_empty()) else {
                bail!("-p {o:?}: expected name=value (for example -p recordcount=100000)");
            };
            self.set(n.trim(), v.trim(), "-p");
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.map.get(name).map(|s| s.as_str())
    }

    fn str_or<'a>(&'a self, name: &str, default: &'a str) -> &'a str {
        self.get(name).unwrap_or(default)
    }

    fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|e| anyhow::anyhow!("property {name}={v:?}: {e}")),
        }
    }

    fn flag(&self, name: &str, default: bool) -> Result<bool> {
        match self.get(name) {
            None => Ok(default),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) => bail!("property {name}={v:?}: expected true or false"),
        }
    }
}

/// How keys are chosen for reads, updates and scans (`requestdistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Uniform,
    Zipfian,
    Latest,
    Hotspot,
    Sequential,
    Exponential,
}

/// One of CoreWorkload's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl OpKind {
    pub const ALL: [OpKind; 5] = [OpKind::Read, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];
    /// YCSB's name of the operation.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "READ",
            OpKind::Update => "UPDATE",
            OpKind::Insert => "INSERT",
            OpKind::Scan => "SCAN",
            OpKind::ReadModifyWrite => "READMODIFYWRITE",
        }
    }
    /// Operations that write.
    pub fn writes(self) -> bool {
        !matches!(self, OpKind::Read | OpKind::Scan)
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

/// CoreWorkload's settings, parsed and checked.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The workload's name (`a` … `f`, or the file name).
    pub name: String,
    pub record_count: i64,
    pub operation_count: i64,
    pub insert_start: i64,
    pub insert_count: i64,
    pub field_count: usize,
    pub field_length: i64,
    pub field_length_dist: String,
    pub field_prefix: String,
    pub read_all_fields: bool,
    pub write_all_fields: bool,
    /// Proportions in YCSB's order: read, update, insert, scan, read-modify-write.
    pub proportions: [f64; 5],
    pub request: Distribution,
    pub min_scan: i64,
    pub max_scan: i64,
    pub scan_dist: String,
    pub ordered: bool,
    pub zero_padding: usize,
    pub hot_data: f64,
    pub hot_opn: f64,
    pub exp_percentile: f64,
    pub exp_frac: f64,
    pub max_execution_time: Option<f64>,
    /// Unknown property names (reported).
    pub unknown: Vec<String>,
}

impl Spec {
    /// CoreWorkload's reading of `p`, with YCSB's defaults.
    pub fn from_props(name: &str, p: &Props) -> Result<Spec> {
        let w = p.str_or("workload", "site.ycsb.workloads.CoreWorkload");
        if !w.ends_with(".CoreWorkload") {
            bail!("workload {name}: workload={w}: only CoreWorkload (site.ycsb.workloads.CoreWorkload) is ported");
        }
        if p.flag("dataintegrity", false)? {
            bail!("workload {name}: dataintegrity=true is not ported (values are checked against the load instead)");
        }
        let record_count: i64 = p.num("recordcount", 0)?;
        let insert_start: i64 = p.num("insertstart", 0)?;
        let insert_count: i64 = p.num("insertcount", record_count - insert_start)?;
        let operation_count: i64 = p.num("operationcount", 0)?;
        if record_count <= 0 {
            bail!("workload {name}: recordcount must be > 0 (it is {record_count})");
        }
        // YCSB's own check, and more: this port's load is one phase, so it must insert something
        // (insertstart at recordcount loaded nothing, and the run phase then never ended).
        if insert_start < 0 || insert_count <= 0 || insert_start.saturating_add(insert_count) > record_count {
            bail!(
                "workload {name}: insertstart {insert_start} and insertcount {insert_count} must lie within \
                 recordcount {record_count} (0 <= insertstart, 1 <= insertcount, insertstart + insertcount <= recordcount)"
            );
        }
        if operation_count < 0 {
            bail!("workload {name}: operationcount must be >= 0");
        }
        let request = match p.str_or("requestdistribution", "uniform") {
            "uniform" => Distribution::Uniform,
            "zipfian" => Distribution::Zipfian,
            "latest" => Distribution::Latest,
            "hotspot" => Distribution::Hotspot,
            "sequential" => Distribution::Sequential,
            "exponential" => Distribution::Exponential,
            o => bail!("workload {name}: unknown requestdistribution {o:?} (uniform, zipfian, latest, hotspot, sequential, exponential)"),
        };
        let field_length_dist = p.str_or("fieldlengthdistribution", "constant").to_string();
        if !matches!(field_length_dist.as_str(), "constant" | "uniform" | "zipfian") {
            bail!("workload {name}: fieldlengthdistribution={field_length_dist:?}: constant, uniform or zipfian");
        }
        let scan_dist = p.str_or("scanlengthdistribution", "uniform").to_string();
        if !matches!(scan_dist.as_str(), "uniform" | "zipfian") {
            bail!("workload {name}: scanlengthdistribution={scan_dist:?}: uniform or zipfian");
        }
        let ordered = match p.str_or("insertorder", "hashed") {
            "hashed" => false,
            "ordered" => true,
            o => bail!("workload {name}: insertorder={o:?}: hashed or ordered"),
        };
        let proportions = [
            p.num("readproportion", 0.95)?,
            p.num("updateproportion", 0.05)?,
            p.num("insertproportion", 0.0)?,
            p.num("scanproportion", 0.0)?,
            p.num("readmodifywriteproportion", 0.0)?,
        ];
        if proportions.iter().any(|x: &f64| *x < 0.0 || !x.is_finite()) || proportions.iter().sum::<f64>() <= 0.0 {
            bail!("workload {name}: the operation proportions must be >= 0 and not all 0: {proportions:?}");
        }
        let field_count: usize = p.num("fieldcount", 10)?;
        let field_length: i64 = p.num("fieldlength", 100)?;
        if field_count == 0 || field_length <= 0 {
            bail!("workload {name}: fieldcount and fieldlength must be > 0");
        }
        let min_scan = p.num("minscanlength", 1)?;
        let max_scan = p.num("maxscanlength", 1000)?;
        if min_scan < 1 || max_scan < min_scan {
            bail!("workload {name}: scan lengths must satisfy 1 <= minscanlength <= maxscanlength");
        }
        let max_execution_time = match p.get("maxexecutiontime") {
            None => None,
            Some(v) => {
                let s: f64 = v.parse().map_err(|e| anyhow::anyhow!("maxexecutiontime={v:?}: {e}"))?;
                (s > 0.0).then_some(s)
            }
        };
        Ok(Spec {
            name: name.to_string(),
            record_count,
            operation_count,
            insert_start,
            insert_count,
            field_count,
            field_length,
            field_length_dist,
            field_prefix: p.str_or("fieldnameprefix", "field").to_string(),
            read_all_fields: p.flag("readallfields", true)?,
            write_all_fields: p.flag("writeallfields", false)?,
            proportions,
            request,
            min_scan,
            max_scan,
            scan_dist,
            ordered,
            zero_padding: p.num("zeropadding", 1)?,
            hot_data: p.num("hotspotdatafraction", 0.2)?,
            hot_opn: p.num("hotspotopnfraction", 0.8)?,
            exp_percentile: p.num("exponential.percentile", 95.0)?,
            exp_frac: p.num("exponential.frac", 0.8571428571)?,
            max_execution_time,
            unknown: p.unknown.clone(),
        })
    }

    /// A built-in workload by letter, with overrides.
    pub fn builtin(letter: &str, overrides: &[String]) -> Result<Spec> {
        let Some((_, text)) = BUILTIN.iter().find(|(l, _)| *l == letter) else {
            bail!("unknown workload {letter:?}: a, b, c, d, e or f (or --workload-file FILE)");
        };
        let mut p = Props::parse(text, &format!("workload{letter}"))?;
        p.apply_overrides(overrides)?;
        Spec::from_props(letter, &p)
    }

    /// `buildKeyName(keynum)`: `user` + the (hashed) number, zero-padded to `zeropadding` digits.
    pub fn key(&self, keynum: i64) -> String {
        let n = if self.ordered { keynum } else { super::gen::fnvhash64(keynum) };
        let digits = n.to_string();
        let fill = self.zero_padding.saturating_sub(digits.len());
        let mut k = String::with_capacity(4 + fill + digits.len());
        k.push_str("user");
        for _ in 0..fill {
            k.push('0');
        }
        k.push_str(&digits);
        k
    }

    /// The field names `field0` … `field{n-1}`.
    pub fn field_names(&self) -> Vec<String> {
        (0..self.field_count).map(|i| format!("{}{i}", self.field_prefix)).collect()
    }

    /// Bytes of key + field values of one record (what the application stores).
    pub fn live_record_bytes(&self, key_len: usize) -> f64 {
        let mean_len = match self.field_length_dist.as_str() {
            "constant" => self.field_length as f64,
            _ => (1 + self.field_length) as f64 / 2.0,
        };
        key_len as f64 + self.field_count as f64 * mean_len
    }
}

/// Encode a record's fields as one value: per field a 4-byte big-endian name length, the name,
/// a 4-byte big-endian value length, the value (the layout YCSB's RocksDB binding uses).
pub fn encode_record(fields: &[(String, Vec<u8>)], out: &mut Vec<u8>) {
    out.clear();
    for (n, v) in fields {
        out.extend_from_slice(&(n.len() as u32).to_be_bytes());
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
        out.extend_from_slice(v);
    }
}

/// Decode a record; an error names what is wrong (a broken adapter, never a panic).
pub fn decode_record(mut b: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    // Sized once: grown from empty, the list was reallocated three times a record, and what a
    // `realloc` costs depends on the heap's layout, which differs from engine to engine (YCSB E,
    // callgrind: the same decoding of the same records cost 1,308 M instructions beside one
    // engine and 1,180 M beside another).
    let mut out = Vec::with_capacity(field_count(b));
    let take = |b: &mut &[u8]| -> Result<Vec<u8>> {
        if b.len() < 4 {
            bail!("record truncated in a length");
        }
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if b.len() < 4 + n {
            bail!("record truncated: length {n}, {} bytes left", b.len() - 4);
        }
        let v = b[4..4 + n].to_vec();
        *b = &b[4 + n..];
        Ok(v)
    };
    while !b.is_empty() {
        let name = String::from_utf8(take(&mut b)?).context("field name is not UTF-8")?;
        let value = take(&mut b)?;
        out.push((name, value));
    }
    Ok(out)
}

/// The number of fields in an encoded record (name and value, each a 4-byte big-endian length
/// and its bytes), counted up to where the record stops making sense (`decode_record` reports
/// that).
fn field_count(mut b: &[u8]) -> usize {
    let mut lengths = 0;
    while b.len() >= 4 {
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let Some(rest) = b.get(4 + n..) else { break };
        b = rest;
        lengths += 1;
    }
    lengths / 2
}

/// The key chooser of the run phase (`keychooser`).
#[derive(Debug)]
enum KeyChooser {
    Uniform(UniformLongGenerator),
    Zipfian(ScrambledZipfianGenerator),
    Latest(SkewedLatestGenerator),
    Hotspot(HotspotIntegerGenerator),
    Sequential(SequentialGenerator),
    Exponential(ExponentialGenerator),
}

#[derive(Debug)]
enum LenGen {
    Constant(i64),
    Uniform(UniformLongGenerator),
    Zipfian(ZipfianGenerator),
}

impl LenGen {
    fn next(&self, r: &mut Rng) -> i64 {
        match self {
            LenGen::Constant(n) => *n,
            LenGen::Uniform(g) => g.next_value(r),
            LenGen::Zipfian(g) => g.next_value(r),
        }
    }
}

/// One operation of the run phase, as generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Read {
        key: String,
    },
    /// `field`: the field an update writes (`writeallfields=false`), or None for all.
    Update {
        key: String,
        field: Option<usize>,
    },
    Insert {
        key: String,
        keynum: i64,
    },
    Scan {
        key: String,
        len: usize,
    },
    ReadModifyWrite {
        key: String,
        field: Option<usize>,
    },
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Read { .. } => OpKind::Read,
            Op::Update { .. } => OpKind::Update,
            Op::Insert { .. } => OpKind::Insert,
            Op::Scan { .. } => OpKind::Scan,
            Op::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
        }
    }
    /// The `--trace-ops` line: `READ key`, `SCAN key len`, ...
    pub fn trace(&self) -> String {
        match self {
            Op::Read { key } | Op::Update { key, .. } | Op::Insert { key, .. } | Op::ReadModifyWrite { key, .. } => {
                format!("{} {key}", self.kind().name())
            }
            Op::Scan { key, len } => format!("SCAN {key} {len}"),
        }
    }
}

/// CoreWorkload's run-phase state, shared by every client thread (the generators that carry
/// state across threads are atomic or locked, as in YCSB).
#[derive(Debug)]
pub struct Core {
    pub spec: Spec,
    ops: DiscreteGenerator<OpKind>,
    keys: KeyChooser,
    field_len: LenGen,
    field_chooser: UniformLongGenerator,
    scan_len: LenGen,
    /// `transactioninsertkeysequence`.
    pub inserts: AcknowledgedCounter,
}

impl Core {
    /// CoreWorkload.init for the run phase.
    pub fn new(spec: Spec) -> Result<Core> {
        let mut ops = DiscreteGenerator::new();
        for (k, p) in OpKind::ALL.iter().zip(spec.proportions) {
            if p > 0.0 {
                ops.add(p, *k);
            }
        }
        let inserts = AcknowledgedCounter::new(spec.record_count);
        let (lo, n) = (spec.insert_start, spec.insert_count);
        let keys = match spec.request {
            Distribution::Uniform => KeyChooser::Uniform(UniformLongGenerator::new(lo, lo + n - 1)),
            Distribution::Sequential => KeyChooser::Sequential(SequentialGenerator::new(lo, lo + n - 1)),
            Distribution::Zipfian => {
                // Sized for the inserts the run will make (× 2, YCSB's fudge factor), so that the
                // popular keys stay put as the key count grows.
                let expected_new = (spec.operation_count as f64 * spec.proportions[2] * 2.0) as i32 as i64;
                KeyChooser::Zipfian(ScrambledZipfianGenerator::new(lo, lo + n + expected_new))
            }
            Distribution::Latest => KeyChooser::Latest(SkewedLatestGenerator::new(&inserts)),
            Distribution::Hotspot => {
                KeyChooser::Hotspot(HotspotIntegerGenerator::new(lo, lo + n - 1, spec.hot_data, spec.hot_opn))
            }
            Distribution::Exponential => KeyChooser::Exponential(ExponentialGenerator::new(
                spec.exp_percentile,
                spec.record_count as f64 * spec.exp_frac,
            )),
        };
        let field_len = match spec.field_length_dist.as_str() {
            "uniform" => LenGen::Uniform(UniformLongGenerator::new(1, spec.field_length)),
            "zipfian" => LenGen::Zipfian(ZipfianGenerator::new(1, spec.field_length)),
            _ => LenGen::Constant(spec.field_length),
        };
        let scan_len = match spec.scan_dist.as_str() {
            "zipfian" => LenGen::Zipfian(ZipfianGenerator::new(spec.min_scan, spec.max_scan)),
            _ => LenGen::Uniform(UniformLongGenerator::new(spec.min_scan, spec.max_scan)),
        };
        let field_chooser = UniformLongGenerator::new(0, spec.field_count as i64 - 1);
        Ok(Core { spec, ops, keys, field_len, field_chooser, scan_len, inserts })
    }

    /// `nextKeynum()`: a key number at most the acknowledged insert limit.
    pub fn next_keynum(&self, r: &mut Rng) -> i64 {
        if let KeyChooser::Exponential(g) = &self.keys {
            loop {
                let k = self.inserts.last_value() - g.next_value(r) as i32 as i64;
                if k >= 0 {
                    return k;
                }
            }
        }
        loop {
            let k = match &self.keys {
                KeyChooser::Uniform(g) => g.next_value(r),
                KeyChooser::Zipfian(g) => g.next_value(r),
                KeyChooser::Latest(g) => g.next_value(&self.inserts, r),
                KeyChooser::Hotspot(g) => g.next_value(r),
                KeyChooser::Sequential(g) => g.next_value(),
                KeyChooser::Exponential(_) => unreachable!("handled above"),
            } as i32 as i64;
            if k <= self.inserts.last_value() {
                return k;
            }
        }
    }

    /// The next operation (`doTransaction`'s choice and arguments). An INSERT must be
    /// acknowledged with [`Core::acknowledge`] once done.
    pub fn next_op(&self, r: &mut Rng) -> Op {
        let field = |r: &mut Rng| (!self.spec.write_all_fields).then(|| self.field_chooser.next_value(r) as usize);
        match self.ops.next(r) {
            OpKind::Read => Op::Read { key: self.spec.key(self.next_keynum(r)) },
            OpKind::Update => {
                let key = self.spec.key(self.next_keynum(r));
                Op::Update { key, field: field(r) }
            }
            OpKind::Insert => {
                let keynum = self.inserts.next_value();
                Op::Insert { key: self.spec.key(keynum), keynum }
            }
            OpKind::Scan => {
                let key = self.spec.key(self.next_keynum(r));
                let len = self.scan_len.next(r).max(1) as usize;
                Op::Scan { key, len }
            }
            OpKind::ReadModifyWrite => {
                let key = self.spec.key(self.next_keynum(r));
                Op::ReadModifyWrite { key, field: field(r) }
            }
        }
    }

    /// Acknowledge a finished insert (done or failed, as YCSB's `finally` does).
    pub fn acknowledge(&self, keynum: i64) -> Result<()> {
        Ok(self.inserts.acknowledge(keynum)?)
    }

    /// One field value of YCSB's length distribution, random bytes as YCSB's.
    pub fn field_value(&self, r: &mut Rng) -> Vec<u8> {
        let mut v = vec![0u8; self.field_len.next(r).max(0) as usize];
        fill_random_bytes(r, &mut v);
        v
    }

    /// A whole record (`buildValues`).
    pub fn record(&self, names: &[String], r: &mut Rng) -> Vec<(String, Vec<u8>)> {
        names.iter().map(|n| (n.clone(), self.field_value(r))).collect()
    }
}

/// The record the load phase writes for `keynum`: its own random stream, so that the run can
/// check what it reads against what was loaded, from any thread.
pub fn load_record(core: &Core, names: &[String], seed: u64, keynum: i64) -> Vec<(String, Vec<u8>)> {
    let mut r = Rng::new(seed ^ (keynum as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    core.record(names, &mut r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_files_parse_with_ycsb_proportions() {
        let want: [(&str, [f64; 5], Distribution); 6] = [
            ("a", [0.5, 0.5, 0.0, 0.0, 0.0], Distribution::Zipfian),
            ("b", [0.95, 0.05, 0.0, 0.0, 0.0], Distribution::Zipfian),
            ("c", [1.0, 0.0, 0.0, 0.0, 0.0], Distribution::Zipfian),
            ("d", [0.95, 0.0, 0.05, 0.0, 0.0], Distribution::Latest),
            ("e", [0.0, 0.0, 0.05, 0.95, 0.0], Distribution::Zipfian),
            // F's file leaves updateproportion at 0 and sets readmodifywriteproportion.
            ("f", [0.5, 0.0, 0.0, 0.0, 0.5], Distribution::Zipfian),
        ];
        for (l, props, dist) in want {
            let s = Spec::builtin(l, &[]).unwrap();
            assert_eq!(s.proportions, props, "workload {l}");
            assert_eq!(s.request, dist, "workload {l}");
            assert_eq!((s.record_count, s.operation_count), (1000, 1000));
            assert!(s.read_all_fields && !s.write_all_fields);
            assert_eq!((s.field_count, s.field_length), (10, 100));
            assert!(s.unknown.is_empty(), "{l}: {:?}", s.unknown);
        }
        let e = Spec::builtin("e", &[]).unwrap();
        assert_eq!((e.min_scan, e.max_scan, e.scan_dist.as_str()), (1, 100, "uniform"));
    }

    #[test]
    fn overrides_and_unknown_names_are_reported() {
        let s = Spec::builtin("a", &["recordcount=5000".into(), "frobnicate=1".into()]).unwrap();
        assert_eq!(s.record_count, 5000);
        assert_eq!(s.unknown, vec!["frobnicate (from -p)".to_string()]);
        let p = Props::parse("# c\nrecordcount: 7\r\nbogus = x\n", "f").unwrap();
        assert_eq!(p.get("recordcount"), Some("7"));
        assert_eq!(p.unknown, vec!["bogus (from f)".to_string()]);
        assert!(Spec::builtin("a", &["recordcount".into()]).is_err());
        assert!(Spec::builtin("a", &["requestdistribution=pareto".into()]).is_err());
        assert!(Spec::builtin("g", &[]).is_err());
    }

    #[test]
    fn keys_are_ycsbs() {
        // CoreWorkload.buildKeyName(0..5) from YCSB 0.17.0 (Java), hashed and ordered.
        let s = Spec::builtin("a", &[]).unwrap();
        let got: Vec<String> = (0..5).map(|i| s.key(i)).collect();
        assert_eq!(
            got,
            [
                "user6284781860667377211",
                "user8517097267634966620",
                "user1820151046732198393",
                "user4052466453699787802",
                "user3232700585171816769"
            ]
        );
        let o = Spec::builtin("a", &["insertorder=ordered".into()]).unwrap();
        assert_eq!((0..3).map(|i| o.key(i)).collect::<Vec<_>>(), ["user0", "user1", "user2"]);
        let z = Spec::builtin("a", &["insertorder=ordered".into(), "zeropadding=5".into()]).unwrap();
        assert_eq!(z.key(42), "user00042");
    }

    #[test]
    fn zipfian_chooser_is_sized_for_the_runs_inserts() {
        // YCSB (Java) sizes workload E's chooser (1000 records, 1000 ops, 5% inserts) at 1101.
        let core = Core::new(Spec::builtin("e", &[]).unwrap()).unwrap();
        match &core.keys {
            KeyChooser::Zipfian(g) => assert_eq!(g.item_count(), 1101),
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn records_round_trip_and_have_ycsbs_size() {
        let core = Core::new(Spec::builtin("a", &[]).unwrap()).unwrap();
        let names = core.spec.field_names();
        let rec = load_record(&core, &names, 7, 3);
        assert_eq!(rec.len(), 10);
        let mut b = Vec::new();
        encode_record(&rec, &mut b);
        assert_eq!(b.len(), 10 * (4 + 6 + 4 + 100));
        assert_eq!(decode_record(&b).unwrap(), rec);
        assert_eq!(field_count(&b), 10);
        assert_eq!(decode_record(&b).unwrap().capacity(), 10, "the field list is allocated once, at its size");
        assert_eq!(field_count(&b[..b.len() - 1]), 9, "a truncated last value: the whole fields before it");
        assert_eq!(load_record(&core, &names, 7, 3), rec, "the load record is a function of seed and keynum");
        assert!(decode_record(&b[..b.len() - 1]).is_err());
    }
}
