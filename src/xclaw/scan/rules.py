"""Every rule the scanner knows: a stable id, its default severity, and why that severity.

HIGH refuses an install unless ``--force``: code that runs something nobody reviewed, hides
itself, or reaches for credentials. MEDIUM is worth a human look but has honest uses. LOW is
context for the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from xclaw.scan.report import Severity

H, M, L = Severity.HIGH, Severity.MEDIUM, Severity.LOW


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    message: str
    why: str


_ALL = [
    Rule(
        "shell.pipe_to_shell",
        H,
        "Downloaded content is run by a shell or interpreter.",
        "what runs is fetched at run time, so this scan never saw it",
    ),
    Rule(
        "exec.download",
        H,
        "Code fetched from the network is executed.",
        "same as a pipe to shell, written in Python or JavaScript",
    ),
    Rule(
        "exec.decoded_payload",
        H,
        "A decoded (base64, hex, rot13, zlib, char codes) payload is executed.",
        "encoding code before running it only serves to hide it from review",
    ),
    Rule(
        "exec.inline_deserialize",
        H,
        "An inline blob is loaded with marshal or pickle.",
        "loading a pickle or marshal blob runs code that cannot be read as source",
    ),
    Rule(
        "exec.dynamic_code",
        M,
        "Code is built at run time and executed (exec/eval/compile).",
        "has honest uses (calculators, templating), so a look rather than a refusal",
    ),
    Rule(
        "python.obfuscated_call",
        H,
        "A dangerous function is reached through a computed name.",
        "getattr/__import__ with assembled strings exists to defeat reading and grep",
    ),
    Rule(
        "obfuscation.escaped_strings",
        M,
        "A long line is mostly escaped characters.",
        "typical of obfuscators, but also of generated tables; the exec rules catch the use",
    ),
    Rule(
        "obfuscation.char_codes",
        M,
        "A string is assembled from character codes.",
        "String.fromCharCode/chr chains hide text from review; high only when executed",
    ),
    Rule(
        "obfuscation.js_identifiers",
        M,
        "The file uses obfuscator-style _0x identifiers.",
        "javascript-obfuscator output; minifiers do not produce it",
    ),
    Rule(
        "obfuscation.encoded_blob",
        L,
        "A long base64 or hex literal is embedded.",
        "data (icons, test vectors) is often embedded; only its execution is high",
    ),
    Rule(
        "unicode.bidi",
        H,
        "Bidirectional control characters can reorder what a reader sees (Trojan Source).",
        "the text a reviewer reads is not the text that runs",
    ),
    Rule(
        "unicode.tag_chars",
        H,
        "Unicode tag characters hide text that renders as nothing.",
        "invisible ASCII smuggling aimed at the model; emoji flags are exempt",
    ),
    Rule(
        "unicode.variation_smuggling",
        H,
        "A run of variation selectors hides data.",
        "emoji use one selector, never a run; a run encodes bytes out of sight",
    ),
    Rule(
        "unicode.zero_width",
        H,
        "Zero-width characters hide or split text.",
        "inside a word or between visible characters they split text past review and hide "
        "instructions aimed at the model; joiners in other scripts and emoji are exempt, and "
        "a stray one at a line end or beside a space is medium",
    ),
    Rule(
        "unicode.homoglyph",
        M,
        "An identifier mixes Latin with look-alike Cyrillic or Greek letters.",
        "a spoofing signal, but one mixed word is not code execution",
    ),
    Rule(
        "credentials.read",
        H,
        "The content reads a credential store.",
        "skills have no business reading SSH keys, cloud credentials or cookies",
    ),
    Rule(
        "credentials.exfiltrate",
        H,
        "A credential (key file, .env file, cookies) is read and sent over the network.",
        "that is theft, not configuration",
    ),
    Rule(
        "exfil.environment",
        H,
        "The whole environment is sent over the network.",
        "it holds every key the user exported; a skill needs one named variable, not all",
    ),
    Rule(
        "exfil.dns",
        H,
        "A secret or a command's output is carried out in a DNS name.",
        "lookups pass firewalls and proxies, so a label such as $(cat key).host is a covert "
        "channel; looking up a plain host name is not",
    ),
    Rule(
        "shell.reverse_shell",
        H,
        "A shell is wired to a network connection (a reverse or bind shell).",
        "it hands this machine to whoever is at the other end",
    ),
    Rule(
        "python.patches_xclaw",
        H,
        "Code rebinds an attribute of xclaw itself (monkey-patching).",
        "plugin code runs in xclaw's process: rebinding xclaw can switch off its policy, "
        "redaction or sandbox, so no plugin may do it",
    ),
    Rule(
        "install.network",
        H,
        "An install-time hook reaches the network.",
        "it runs unattended at install and installs what this scan never saw",
    ),
    Rule(
        "binary.executable",
        H,
        "A compiled executable or native library is shipped.",
        "machine code cannot be reviewed as source",
    ),
    Rule(
        "binary.archive",
        M,
        "An archive is shipped; its contents were not scanned.",
        "may hold anything, but is also how assets ship",
    ),
    Rule(
        "binary.opaque",
        L,
        "A binary file of unknown type is shipped.",
        "not executable, not a known media type",
    ),
    Rule(
        "prompt.override_instructions",
        H,
        "Text tells the agent to ignore its instructions.",
        "a skill steering the agent against its user is hostile by definition",
    ),
    Rule(
        "prompt.conceal_from_user",
        H,
        "Text tells the agent to hide something from the user.",
        "concealment from the user has no honest use in a skill",
    ),
    Rule(
        "prompt.exfiltrate",
        M,
        "Text asks the agent to send data elsewhere.",
        "high when it names credentials or a destination, medium alone",
    ),
    Rule(
        "symlink.outside",
        H,
        "A symbolic link points outside the scanned folder.",
        "installed, it would expose or overwrite files elsewhere; never followed",
    ),
    Rule(
        "file.special",
        M,
        "A device, socket or pipe sits in the folder; it was not read.",
        "no skill needs one, and reading it could block",
    ),
    Rule(
        "limit.files",
        H,
        "The folder holds more files than the scan limit; the rest was not scanned.",
        "an incomplete scan cannot vouch for what it skipped",
    ),
    Rule(
        "limit.file_size",
        M,
        "The file is larger than the scan limit; only its head was scanned.",
        "large data files are normal; the head still got every rule",
    ),
    Rule(
        "scan.incomplete",
        H,
        "The scanner could not finish this file.",
        "what was not scanned cannot be vouched for; the message says why",
    ),
    Rule(
        "python.unparsable",
        L,
        "The Python file does not parse; only text rules ran.",
        "old Python 2 files are common and harmless",
    ),
]

RULES: dict[str, Rule] = {r.id: r for r in _ALL}
