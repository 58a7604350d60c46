#!/usr/bin/env python3
"""The layering rules the compiler cannot keep by itself (docs/layout.md), checked by `make test`:

1. SegnoCore imports no system C library, GRDB, libpq or the S3 client (CLinux, libc's headers,
   is allowed; SegnoMultipart, the multipart records the S3 client and the state share, too).
2. No source file casts to (`as?`, `as!`, `is`) a concrete type of another of segno's modules
   (errors excepted: they are caught by type): what one module needs to know of another's
   values — a source, a state backend, a stage config — is a property of a protocol.
3. Every target (library, program, test) imports only what Package.swift declares as its direct
   dependencies (SwiftPM lets a module import any module built before it; this does not), and
   the toolchain's own modules.
4. The core names no stage: no SegnoCore Swift file holds a stage's key as a string literal
   ("transcribe", "waveform"…). The keys are the names of the generated reference pages
   (docs/reference/stages/NAME.md, one per stage in the registry); what the core needs to know of
   a stage is a capability in its declaration (`StageDeclaration.Capabilities`).
5. The core's tests build no C library: the dependency closure of SegnoCoreTests (and so of
   SegnoCoreTestSupport) holds no system-library target but CLinux, libc's own headers, which
   links nothing.
6. The core's file I/O stays where docs/layout.md lists it: a SegnoCore Swift file that makes a
   file-system call (open, stat, lstat, opendir, flock, rename, unlink, mkdir, FileManager, …) is
   one of the files in layout.md's table "File I/O in the core: the exceptions". A file moved out
   (RunLock and StateFolderTrust to SegnoState, InputScanner to SegnoSources) cannot come back
   unnoticed, and a new one is listed with its reason or goes behind a protocol.
7. Only test targets import Testing or XCTest: `swift build -c release` (`make release`, `make
   bench`) builds every other target, the test-support libraries too, and finds no test module there.

Exits 1 listing every breach as FILE:LINE: what. `--sources DIR` and `--tests DIR` check another
copy of the trees (the test that plants a breach); the manifest is always the package's own.
"""
import json, os, re, subprocess, sys

package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
args = sys.argv[1:]
def option(name, default):
    return args[args.index(name) + 1] if name in args else default
root = option("--sources", os.path.join(package, "Sources"))
tests_root = option("--tests", os.path.join(package, "Tests"))
own = [m for m in sorted(os.listdir(root)) if m.startswith("Segno") or m == "segno"]
decl = re.compile(r"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|final|indirect)\s+)*(struct|class|enum|actor|protocol)\s+([A-Z]\w*)([^{\n]*)", re.M)
cast = re.compile(r"\b(as[?!]?|is)\s+(?:any\s+)?([A-Z]\w*)")
allowed_core_imports = {"Foundation", "Dispatch", "Synchronization", "Glibc", "CLinux", "Logging", "Yams",
                        "Crypto", "SegnoDSP", "SegnoWaveform", "SegnoMultipart"}
# Rule 4: every stage's key, from the reference pages `make docs` writes for the registry.
stage_pages = os.path.join(package, "docs", "reference", "stages")
stage_keys = sorted(f[:-3] for f in os.listdir(stage_pages) if f.endswith(".md") and f != "README.md")
naming = re.compile(r'"(' + "|".join(map(re.escape, stage_keys)) + r')"')

# Rule 6: the core files layout.md lists as doing file I/O, and what a file-system call looks like.
layout = open(os.path.join(package, "docs", "layout.md"), encoding="utf-8").read()
section = layout.split("## File I/O in the core", 1)[1].split("\n## ", 1)[0]
io_allowed = {name for row in section.splitlines() if row.startswith("| `")
              for name in re.findall(r"`([\w/+]+\.swift)`", row.split("|")[1])}
file_io = re.compile(r"(?<!func )(?<![\w.])(?:open|openat|opendir|readdir|lstat|stat|fstat|fstatat|flock|unlink|unlinkat|"
                     r"rename|renameat|mkdir|mkdirat|rmdir|fopen|ftruncate|fsync|readlink|realpath|getxattr|setxattr|"
                     r"fgetxattr|fsetxattr)\((?!\))|FileManager\.default|contentsOfFile:|Data\(contentsOf|FileHandle\(|"
                     r"FileNameBytes\.(?:reading|isDirectory|exists)\(")

def swift_files(module):
    for d, _, files in os.walk(os.path.join(root, module)):
        for f in files:
            if f.endswith(".swift"):
                yield os.path.join(d, f)

concrete = {}  # type name -> module
for m in own:
    for path in swift_files(m):
        for kind, name, rest in decl.findall(open(path, encoding="utf-8").read()):
            # Errors are caught by type everywhere; the rule is about sources, state and stages.
            if kind != "protocol" and "Error" not in rest:
                concrete.setdefault(name, m)

breaches = []
for m in own:
    for path in swift_files(m):
        rel = os.path.relpath(path, os.path.join(root, ".."))
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            code = line.split("//", 1)[0]
            if m == "SegnoCore":
                imp = re.match(r"\s*(?:@testable\s+)?import\s+(\w+)", code)
                if imp and imp.group(1) not in allowed_core_imports:
                    breaches.append(f"{rel}:{n}: SegnoCore imports {imp.group(1)}")
                for key in naming.findall(code):
                    breaches.append(f"{rel}:{n}: SegnoCore names the stage \"{key}\"; use a capability of its declaration")
                local = os.path.relpath(path, os.path.join(root, "SegnoCore"))
                if local not in io_allowed and file_io.search(code):
                    breaches.append(f"{rel}:{n}: file I/O in SegnoCore outside docs/layout.md's list of exceptions; "
                                    "put it behind a protocol another module implements, or list the file there with why")
            for _, name in cast.findall(code):
                owner = concrete.get(name)
                if owner and owner != m:
                    breaches.append(f"{rel}:{n}: casts to {name}, a concrete type of {owner}")

# Rule 3: imports against the manifest's declared dependencies.
toolchain = {"Foundation", "FoundationNetworking", "FoundationEssentials", "Dispatch", "Glibc", "Musl",
             "Synchronization", "XCTest", "Testing", "_Concurrency", "Darwin"}
# A scratch path of its own: `swift test` holds the package's .build lock while a test runs this.
import tempfile
with tempfile.TemporaryDirectory(prefix="segno-layers-") as scratch:
    manifest = json.loads(subprocess.run(["swift", "package", "--scratch-path", scratch, "dump-package"], cwd=package,
                                         capture_output=True, text=True, check=True, timeout=300).stdout)
# SwiftPM leaves a lock named after the scratch path in the temporary folder.
lock = os.path.join(tempfile.gettempdir(), scratch.replace(os.sep, "_") + ".lock")
if os.path.isfile(lock) and os.path.getsize(lock) == 0:
    os.unlink(lock)
declared = {}
for t in manifest["targets"]:
    deps = set()
    for d in t["dependencies"]:
        kind, value = next(iter(d.items()))
        deps.add(value[0])
    declared[t["name"]] = (t["type"], deps)
importing = re.compile(r"^\s*(?:@testable\s+|@_implementationOnly\s+|(?:public|package|internal)\s+)?import\s+(?:(?:struct|class|enum|func|protocol|var|let)\s+)?(\w+)")
for name, (kind, deps) in sorted(declared.items()):
    if kind == "system":
        continue
    folder = os.path.join(tests_root if kind == "test" else root, name)
    for d, _, files in os.walk(folder):
        for f in sorted(files):
            if not f.endswith(".swift"):
                continue
            path = os.path.join(d, f)
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                m = importing.match(line.split("//", 1)[0])
                if m and kind != "test" and m.group(1) in ("Testing", "XCTest"):
                    breaches.append(f"{os.path.relpath(path, os.path.join(root, '..'))}:{n}: {name} imports {m.group(1)}, "
                                    "but is not a test target: a release build builds it and has no test module")
                if m and m.group(1) not in deps and m.group(1) not in toolchain and m.group(1) != name:
                    breaches.append(f"{os.path.relpath(path, os.path.join(root, '..'))}:{n}: {name} imports {m.group(1)}, which Package.swift does not give it")

# Rule 4: what `swift test --filter SegnoCoreTests` builds.
def closure(name, seen=None):
    seen = set() if seen is None else seen
    for d in declared.get(name, (None, set()))[1]:
        if d in declared and d not in seen:
            seen.add(d)
            closure(d, seen)
    return seen
for t in ("SegnoCoreTests", "SegnoCoreTestSupport"):
    if t in declared:
        for d in sorted(closure(t)):
            if declared[d][0] == "system" and d != "CLinux":
                breaches.append(f"Package.swift: {t} depends on the system library {d} (through its dependencies); the core's tests build none")

for b in breaches:
    print(b)
if breaches:
    sys.exit(1)
print(f"layers: {len(own)} modules, {len(concrete)} concrete types, {len(stage_keys)} stage keys, "
      f"{len(io_allowed)} core files allowed file I/O, no breach")
