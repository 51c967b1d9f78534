//! Closed sets as types (Part II §1.5): diagnostic codes, risk levels, run and step statuses,
//! catalog entry kinds.
//!
//! An engine declares each set as a Rust enum with a derive from `pilotage` (`Codes`,
//! `RiskLevels`, `Statuses`, `EntryKinds`); the derive implements the trait here. A value
//! outside the set then cannot be written, and the reserved members the specification
//! requires are always part of the set the manifest, guide check and runtime read.

use super::risk::RiskHints;

/// The reserved diagnostic codes every Language carries (Part II §5.5).
pub const RESERVED_CODES: [&str; 3] = ["constraint", "input_binding", "context_binding"];

/// The reserved run statuses (Part II §5.7), each with its `ok` value and whether side effects
/// may have occurred.
pub const RESERVED_STATUSES: [StatusMember; 6] = [
    StatusMember::new("success", true, true),
    StatusMember::new("validation_error", false, false),
    StatusMember::new("catalog_drift", false, false),
    StatusMember::new("promotion_drift", false, false),
    StatusMember::new("partial", false, true),
    StatusMember::new("error", false, true),
];

/// A Language's closed diagnostic-code set. Implemented by `#[derive(pilotage::Codes)]`.
pub trait DiagnosticCode: Copy + Send + Sync + 'static {
    /// The engine-defined members' wire names (the reserved three are added by [`all_codes`]).
    const MEMBERS: &'static [&'static str];
    /// This code's wire name.
    fn wire(self) -> &'static str;
}

/// The full code set of `C`: the engine's members followed by the reserved codes.
pub fn all_codes<C: DiagnosticCode>() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = C::MEMBERS.to_vec();
    all.extend(RESERVED_CODES.iter().filter(|r| !C::MEMBERS.contains(r)));
    all
}

/// One member of a risk-level set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RiskMember {
    /// Wire name, e.g. `"safe"`.
    pub name: &'static str,
    /// Its hints.
    pub hints: RiskHints,
}

/// A Language's engine-defined risk levels, ordered from least to most risky.
/// Implemented by `#[derive(pilotage::RiskLevels)]`.
pub trait RiskLevel: Copy + Send + Sync + 'static {
    /// Every level in declaration order (least risky first).
    const MEMBERS: &'static [RiskMember];
    /// This level's wire name.
    fn wire(self) -> &'static str;
    /// This level's hints.
    fn hints(self) -> RiskHints;
    /// Position in [`Self::MEMBERS`].
    fn rank(self) -> usize;
}

/// One member of a status set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusMember {
    /// Wire name.
    pub name: &'static str,
    /// The `ok` value of an outcome with this status.
    pub ok: bool,
    /// Whether side effects may have occurred.
    pub side_effects: bool,
}

impl StatusMember {
    /// A member.
    pub const fn new(name: &'static str, ok: bool, side_effects: bool) -> Self {
        StatusMember { name, ok, side_effects }
    }
}

/// Engine-defined failure statuses (used at run and step level) beside the reserved ones.
/// Implemented by `#[derive(pilotage::Statuses)]`; engines without their own use [`NoStatus`].
pub trait RunStatus: Copy + Send + Sync + 'static {
    /// The engine-defined members (all with `ok: false`).
    const MEMBERS: &'static [StatusMember];
    /// This status's wire name.
    fn wire(self) -> &'static str;
}

/// The full status set of `S`: reserved statuses followed by the engine's.
pub fn all_statuses<S: RunStatus>() -> Vec<StatusMember> {
    let mut all = RESERVED_STATUSES.to_vec();
    all.extend_from_slice(S::MEMBERS);
    all
}

/// The empty engine-defined status set: only the reserved statuses exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoStatus {}

impl RunStatus for NoStatus {
    const MEMBERS: &'static [StatusMember] = &[];
    fn wire(self) -> &'static str {
        match self {}
    }
}

/// One member of a catalog entry-kind set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindMember {
    /// Wire name, e.g. `"capability"`.
    pub name: &'static str,
    /// Whether steps can invoke entries of this kind (callable kinds declare `input_schema`).
    pub callable: bool,
}

/// A Language's catalog entry kinds. Implemented by `#[derive(pilotage::EntryKinds)]`.
pub trait EntryKind: Copy + Send + Sync + 'static {
    /// Every kind.
    const MEMBERS: &'static [KindMember];
    /// The kind promoted programs are exposed as (`#[kind(promoted)]`), if the Language has
    /// promoted programs. It is callable.
    const PROMOTED: Option<&'static str> = None;
    /// Wire name.
    fn wire(self) -> &'static str;
    /// Whether entries of this kind are callable.
    fn callable(self) -> bool;
}

/// The empty kind set, for Languages without a catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoKind {}

impl EntryKind for NoKind {
    const MEMBERS: &'static [KindMember] = &[];
    fn wire(self) -> &'static str {
        match self {}
    }
    fn callable(self) -> bool {
        match self {}
    }
}

/// The declared closed sets of one Language, as the manifest builder and guide check read them.
#[derive(Clone, Debug, Default)]
pub struct ClosedSets {
    /// Diagnostic codes, reserved included.
    pub codes: Vec<&'static str>,
    /// Risk levels, least risky first.
    pub risks: Vec<RiskMember>,
    /// Statuses, reserved included.
    pub statuses: Vec<StatusMember>,
    /// Entry kinds.
    pub kinds: Vec<KindMember>,
    /// The promoted-program kind, when the Language has promoted programs.
    pub promoted: Option<&'static str>,
}

impl ClosedSets {
    /// The sets of the four types.
    pub fn of<C: DiagnosticCode, R: RiskLevel, S: RunStatus, K: EntryKind>() -> Self {
        ClosedSets {
            codes: all_codes::<C>(),
            risks: R::MEMBERS.to_vec(),
            statuses: all_statuses::<S>(),
            kinds: K::MEMBERS.to_vec(),
            promoted: K::PROMOTED,
        }
    }

    /// Whether `code` is a member.
    pub fn has_code(&self, code: &str) -> bool {
        self.codes.contains(&code)
    }

    /// The status member named `name`.
    pub fn status(&self, name: &str) -> Option<StatusMember> {
        self.statuses.iter().copied().find(|s| s.name == name)
    }
}

/// The members of one declared closed set that its Language's closed-sets guide must name
/// (Part II §5.2), checked at compile time: `#[pilotage::language(...)]` evaluates
/// [`GuideSet::message_len`] and [`GuideSet::message`] in a `const` for each set the declared
/// capabilities require, and the build fails with the message when the guide omits a member.
///
/// A member is named when its wire name occurs as a whole word: the characters right before
/// and after the occurrence are not ASCII letters, digits or `_`.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct GuideSet {
    /// The set's member noun, singular and plural (`"diagnostic code"`, `"diagnostic codes"`).
    what: (&'static str, &'static str),
    /// The engine-defined members.
    members: Members,
    /// The reserved members, after them.
    reserved: Members,
}

/// A slice of wire names of one closed set, whatever the member type.
#[derive(Clone, Copy, Debug)]
enum Members {
    Names(&'static [&'static str]),
    Risks(&'static [RiskMember]),
    Statuses(&'static [StatusMember]),
    Kinds(&'static [KindMember]),
}

impl Members {
    const fn len(self) -> usize {
        match self {
            Members::Names(m) => m.len(),
            Members::Risks(m) => m.len(),
            Members::Statuses(m) => m.len(),
            Members::Kinds(m) => m.len(),
        }
    }

    const fn name(self, i: usize) -> &'static str {
        match self {
            Members::Names(m) => m[i],
            Members::Risks(m) => m[i].name,
            Members::Statuses(m) => m[i].name,
            Members::Kinds(m) => m[i].name,
        }
    }
}

const fn is_word_byte(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'_')
}

/// Whether `name` occurs in `text` at byte `at`, not followed by a word byte (the caller
/// checks the byte before).
const fn occurs_at(text: &[u8], at: usize, name: &[u8]) -> bool {
    let end = at + name.len();
    if end > text.len() || (end < text.len() && is_word_byte(text[end])) {
        return false;
    }
    let mut i = 0;
    while i < name.len() {
        if text[at + i] != name[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// How many members one pass over the guide checks.
const CHUNK: usize = 128;

/// Append `s` to `out` at `*len` (as far as `out` reaches) and advance `*len` by its length.
const fn put(out: &mut [u8], len: &mut usize, s: &str) {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if *len + i < out.len() {
            out[*len + i] = bytes[i];
        }
        i += 1;
    }
    *len += bytes.len();
}

impl GuideSet {
    /// The diagnostic codes of `C`, the reserved ones included.
    pub const fn codes<C: DiagnosticCode>() -> Self {
        GuideSet {
            what: ("diagnostic code", "diagnostic codes"),
            members: Members::Names(C::MEMBERS),
            reserved: Members::Names(&RESERVED_CODES),
        }
    }

    /// The risk levels of `R`.
    pub const fn risk_levels<R: RiskLevel>() -> Self {
        GuideSet {
            what: ("risk level", "risk levels"),
            members: Members::Risks(R::MEMBERS),
            reserved: Members::Names(&[]),
        }
    }

    /// The statuses of `S`, the reserved ones included.
    pub const fn statuses<S: RunStatus>() -> Self {
        GuideSet {
            what: ("status", "statuses"),
            members: Members::Statuses(S::MEMBERS),
            reserved: Members::Statuses(&RESERVED_STATUSES),
        }
    }

    /// The entry kinds of `K`.
    pub const fn kinds<K: EntryKind>() -> Self {
        GuideSet {
            what: ("entry kind", "entry kinds"),
            members: Members::Kinds(K::MEMBERS),
            reserved: Members::Names(&[]),
        }
    }

    /// Engine-defined and reserved members together.
    const fn len(self) -> usize {
        self.members.len() + self.reserved.len()
    }

    /// Member `i` of [`Self::len`], and whether it is reserved.
    const fn member(self, i: usize) -> (&'static str, bool) {
        if i < self.members.len() {
            (self.members.name(i), false)
        } else {
            (self.reserved.name(i - self.members.len()), true)
        }
    }

    /// Bit `i` set when member `start + i` (for `i < CHUNK`) is named in `text` (empty names
    /// count as named). One pass over the text, trying at each position only the members whose
    /// name starts with its byte, and stopping once every member of the chunk is found.
    const fn named(self, text: &[u8], start: usize) -> u128 {
        let end = if self.len() - start > CHUNK { start + CHUNK } else { self.len() };
        let all: u128 = if end - start == CHUNK { u128::MAX } else { (1u128 << (end - start)) - 1 };
        let mut found = 0u128;
        // `by_first[b]`: the members whose name starts with byte `b`. A name that starts with
        // a word byte can only begin where a word begins, the others after any non-word byte.
        let mut by_first = [0u128; 256];
        let mut m = start;
        while m < end {
            let name = self.member(m).0.as_bytes();
            if name.is_empty() {
                found |= 1u128 << (m - start);
            } else {
                by_first[name[0] as usize] |= 1u128 << (m - start);
            }
            m += 1;
        }
        let mut at = 0;
        let mut after_word = false;
        while at < text.len() && found != all {
            let byte = text[at];
            if !after_word {
                let mut candidates = by_first[byte as usize] & !found;
                while candidates != 0 {
                    let i = candidates.trailing_zeros() as usize;
                    candidates &= candidates - 1;
                    if occurs_at(text, at, self.member(start + i).0.as_bytes()) {
                        found |= 1u128 << i;
                    }
                }
            }
            after_word = is_word_byte(byte);
            at += 1;
        }
        found
    }

    /// Write the members of this set that `text` does not name to `out` (as far as it
    /// reaches) at `*len`, as `` `a`, `b` (reserved) ``; returns how many there are.
    const fn put_missing(self, text: &[u8], out: &mut [u8], len: &mut usize) -> usize {
        let mut missing = 0;
        let mut start = 0;
        while start < self.len() {
            let found = self.named(text, start);
            let mut m = start;
            while m < self.len() && m < start + CHUNK {
                if found & (1u128 << (m - start)) == 0 {
                    let (name, reserved) = self.member(m);
                    put(out, len, if missing == 0 { "`" } else { ", `" });
                    put(out, len, name);
                    put(out, len, if reserved { "` (reserved)" } else { "`" });
                    missing += 1;
                }
                m += 1;
            }
            start += CHUNK;
        }
        missing
    }

    /// Write the message for `guide` (the closed-sets guide's body, shown as `file`) to `out`,
    /// as far as it reaches; returns its full length, 0 when every member is named.
    const fn render(self, file: &str, guide: &str, out: &mut [u8]) -> usize {
        let text = guide.as_bytes();
        let missing = self.put_missing(text, &mut [], &mut 0);
        if missing == 0 {
            return 0;
        }
        let mut len = 0;
        put(out, &mut len, "the closed-sets guide `");
        put(out, &mut len, file);
        put(out, &mut len, "` never mentions the ");
        put(out, &mut len, if missing == 1 { self.what.0 } else { self.what.1 });
        put(out, &mut len, " ");
        self.put_missing(text, out, &mut len);
        put(
            out,
            &mut len,
            ": Part II §5.2 requires it to enumerate every member of every declared closed set; add ",
        );
        put(out, &mut len, if missing == 1 { "it" } else { "each" });
        put(out, &mut len, " to the guide as a whole word, e.g. in a `code` span");
        len
    }

    /// The length of the message for a closed-sets guide body `guide` shown as `file`; 0 when
    /// the guide names every member.
    pub const fn message_len(self, file: &str, guide: &str) -> usize {
        self.render(file, guide, &mut [])
    }

    /// The message itself, `N` being [`Self::message_len`] (nothing is scanned when `N` is 0).
    pub const fn message<const N: usize>(self, file: &str, guide: &str) -> [u8; N] {
        let mut out = [0u8; N];
        if N > 0 {
            self.render(file, guide, &mut out);
        }
        out
    }

    /// The message bytes as text.
    pub const fn text(message: &[u8]) -> &str {
        match core::str::from_utf8(message) {
            Ok(text) => text,
            Err(_) => "the closed-sets guide does not name every member of the declared closed sets",
        }
    }
}
