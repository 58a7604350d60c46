import Foundation
import Yams

/// Reads a YAML job spec, checks every key and option, and returns a `JobSpec` — or the first
/// `SpecError` with file, line, column and key path. Nothing touches audio or the state here.
public enum SpecLoader {
    /// Largest spec accepted, in bytes.
    public static let maxBytes = 1 << 20

    /// Loads and checks `path`. Relative paths inside the spec are relative to the spec's folder.
    public static func load(path: String, registry: StageRegistry, environment: [String: String]) throws(SpecError) -> JobSpec {
        // Read with the system calls, so every failure is one line with its cause.
        var st = stat()
        guard stat(path, &st) == 0 else { throw SpecError(file: path, message: "cannot read spec: \(String(cString: strerror(errno)))") }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw SpecError(file: path, message: "is a folder; give the spec file (YAML)") }
        if (st.st_mode & S_IFMT) != S_IFREG { throw SpecError(file: path, message: "is not a regular file; give the spec file (YAML)") }
        if Int(st.st_size) > maxBytes {
            throw SpecError(file: path, message: "spec is \(st.st_size) bytes; the limit is \(maxBytes) (1 MB)")
        }
        guard let handle = FileNameBytes.reading(path), let data = try? handle.readToEnd() ?? Data() else {
            throw SpecError(file: path, message: "cannot read spec: \(String(cString: strerror(errno)))")
        }
        try? handle.close()
        guard let text = String(data: data, encoding: .utf8) else { throw SpecError(file: path, message: "spec is not UTF-8 text") }
        let base = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent().path
        return try parse(text, file: path, baseDirectory: base, registry: registry, environment: environment)
    }

    /// Parses spec text; `baseDirectory` anchors relative paths.
    public static func parse(_ text: String, file: String, baseDirectory: String, registry: StageRegistry, environment: [String: String] = [:]) throws(SpecError) -> JobSpec {
        if text.utf8.count > maxBytes { throw SpecError(file: file, message: "spec is larger than 1 MB") }
        let root: Node
        do {
            guard let n = try Yams.compose(yaml: text) else { throw SpecError(file: file, message: "the spec is empty") }
            root = n
        } catch let e as SpecError {
            throw e
        } catch let e as YamlError {
            throw yamlError(e, file: file)
        } catch {
            throw SpecError(file: file, message: "\(error)")
        }
        let context = SpecContext(file: file, environment: environment)
        try checkTags(root, file: file, budget: 200_000)
        let doc = SpecValue(node: root, path: "", context: context)
        let o = try doc.options(allowed: ["version", "name", "input", "output", "state", "lease", "parallel", "split", "checkpoints", "retries", "stages", "report"],
                                required: ["version", "input", "output", "stages"])
        let version = try o["version"]!.int()
        guard version == 1 else { throw o["version"]!.error("unsupported spec version \(version); this segno reads version 1") }
        let name = try o["name"]?.string() ?? URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent

        let input = try parseInput(o["input"]!, base: baseDirectory, environment: environment)
        let out = try o["output"]!.options(allowed: ["root"], required: ["root"])
        let outputRoot = absolute(try out["root"]!.string(), base: baseDirectory, environment: environment)
        if outputRoot == "/" { throw out["root"]!.error("output.root cannot be /") }
        var statePath = outputRoot + "/.segno/state.sqlite"
        var sharedStateFolder = false
        if var s = o["state"] {
            // `state: PATH`, or `state: { path: PATH, shared_folder: true }` for a SQLite store in a
            // folder a team shares on purpose (docs/decisions/33-shared-state-folders.md).
            if s.isMapping {
                let so = try s.options(allowed: ["path", "shared_folder"], required: ["path"])
                s = so["path"]!
                if let f = so["shared_folder"] {
                    sharedStateFolder = try f.bool()
                    let text = try s.string()
                    if sharedStateFolder && (text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")) {
                        throw f.error("shared_folder is for a SQLite file; PostgreSQL state is shared already")
                    }
                }
            }
            let text = try s.string()
            if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
                guard let url = URLComponents(string: text), url.host != nil else { throw s.error("\"\(text)\" is not a postgres://user@host/db URL") }
                if url.password != nil { throw s.error("no password in the spec: set PGPASSWORD or use ~/.pgpass") }
                statePath = text
            } else {
                statePath = absolute(text, base: baseDirectory, environment: environment)
            }
        }
        var lease = 60.0
        if let l = o["lease"] {
            lease = try l.duration()
            if !(1...3600).contains(lease) { throw l.error("lease must be 1 s … 1 h") }
        }

        var parallel: Int? = nil
        if let p = o["parallel"] {
            let s = try p.string()
            if s != "auto" { parallel = try p.int(in: JobSpec.parallelRange, unit: "workers") }
        }
        // `split: off` keeps every recording on one thread (decision 0085); `auto` lets `SplitRule` decide.
        let split = try o["split"]?.choice(SplitMode.self) ?? .auto
        // `checkpoints: off` lets an interrupted long recording start again from its beginning (decision 0095).
        let checkpoints = try o["checkpoints"]?.choice(CheckpointMode.self) ?? .auto
        let retries = try o["retries"]?.int(in: 0...10) ?? 2
        var reportPath: String? = nil
        if let r = o["report"] {
            // `report: { path: report.html }`: the HTML report, rewritten at the end of every run.
            let ro = try r.options(allowed: ["path"], required: ["path"])
            let p = try ro["path"]!.string()
            if p.isEmpty || p.hasSuffix("/") { throw ro["path"]!.error("report.path names a file such as report.html") }
            reportPath = absolute(p, base: baseDirectory, environment: environment)
        }

        let stageList = try o["stages"]!.list()
        if stageList.isEmpty { throw o["stages"]!.error("no stages: add at least one tap such as encode or waveform") }
        var placed: [JobSpec.Placed] = []
        var parseContext = StageParseContext(baseDirectory: baseDirectory)
        parseContext.tapKinds = registry.tapKinds
        // Every stage is checked, and all their errors are reported at once (each with its line).
        var stageErrors: [SpecError] = []
        for item in stageList {
            do throws(SpecError) {
                let entries = try item.mapping()
                guard entries.count == 1, let entry = entries.first else {
                    throw item.error("each stage is a one-key mapping such as `- lowpass: { frequency: 3400 }`; found \(entries.count) keys")
                }
                guard let parser = registry.parser(for: entry.key) else {
                    let named = SpecValue(node: entry.value.node, path: entry.value.path, context: context)
                    var e = named.error(registry.unknownStageMessage(entry.key))
                    // Point at the stage's key, not its value.
                    if let m = item.node.mark { e.line = m.line; e.column = m.column }
                    throw e
                }
                let config = try parser(entry.value, parseContext)
                // A stage may bring others with it (pauses: the tap that writes its cut list).
                for c in ((config as? any CompanionStages)?.companionsBefore ?? []) + [config] {
                    parseContext.note(c, at: entry.value)
                    placed.append(JobSpec.Placed(config: c, keyPath: item.path, line: item.node.mark?.line ?? 0,
                                                 column: item.node.mark?.column ?? 0))
                }
            } catch {
                stageErrors.append(error)
            }
        }
        if let all = SpecError.combined(stageErrors) { throw all }
        // Taps that observe the source (`transcribe: { from: source }`) go to the head of the chain.
        func fromSource(_ p: JobSpec.Placed) -> Bool { (p.config as? any SourceObservingStage)?.observesSource == true }
        placed = placed.filter(fromSource) + placed.filter { !fromSource($0) }
        if !placed.contains(where: { $0.config.kind == .tap }) {
            throw o["stages"]!.error("no tap: nothing would be written (add encode, waveform or metadata)")
        }
        if let up = placed.firstIndex(where: { $0.config.kind == .upload }), placed[up...].contains(where: { $0.config.kind != .upload }) {
            throw o["stages"]!.error("upload must come after every other stage (it runs after the pass)")
        }
        // Two taps writing the same template would overwrite each other.
        var seen: [String: String] = [:]
        for p in placed {
            guard let tap = p.config as? any TapConfig else { continue }
            if let other = seen[tap.pathTemplate.text] {
                throw SpecError(file: file, line: p.line, column: p.column, keyPath: p.keyPath,
                                message: "writes \"\(tap.pathTemplate.text)\" like \(other); give each tap its own path")
            }
            seen[tap.pathTemplate.text] = p.keyPath
        }
        try checkOverlap(input: input, outputRoot: outputRoot, stages: placed, file: file)
        if input.streams != nil, input.root == outputRoot || input.root.hasPrefix(outputRoot + "/") {
            throw o["input"]!.error("record.capture \"\(input.root)\" is inside output.root, which the scan skips: give the captures their own folder")
        }
        var spec = JobSpec(file: file, name: name, input: input, outputRoot: outputRoot, statePath: statePath,
                       parallel: parallel, retries: retries, stages: placed, reportPath: reportPath)
        spec.leaseSeconds = lease
        spec.split = split
        spec.checkpoints = checkpoints
        spec.sharedStateFolder = sharedStateFolder
        spec.tapDeclarations = registry.declarationsByTapKind
        return spec
    }

    static package func parseInput(_ v: SpecValue, base: String, environment: [String: String]) throws(SpecError) -> JobSpec.Input {
        let o = try v.options(allowed: ["root", "streams", "record", "include", "exclude", "settle", "follow_links", "verify", "endpoint", "region", "damaged", "reference"], required: [])
        // `root` (a folder, or objects under s3://bucket/prefix/) and `streams` (stations recorded
        // into record.capture) are alternatives.
        let streams: JobSpec.StreamInput?
        let root: String
        var endpoint: URL? = nil
        switch (o["root"], o["streams"]) {
        case (let r?, nil):
            if let rec = o["record"] { throw rec.error("record belongs to input.streams; input.root is a folder") }
            streams = nil
            let rootText = try r.string()
            if rootText.hasPrefix("s3://") {
                let rest = rootText.dropFirst(5)
                guard let bucket = rest.split(separator: "/").first, !bucket.isEmpty else { throw r.error("\"\(rootText)\" names no bucket: s3://bucket/prefix/") }
                root = rootText.hasSuffix("/") || rest.count == bucket.count ? rootText : rootText + "/"
                if let e = o["endpoint"] {
                    let text = try e.string()
                    guard let u = URL(string: text), ["http", "https"].contains(u.scheme ?? ""), u.host != nil else { throw e.error("\"\(text)\" is not an http(s) URL") }
                    endpoint = u
                }
            } else {
                for key in ["endpoint", "region"] where o[key] != nil { throw o[key]!.error("\(key) goes with root: s3://bucket/prefix/") }
                root = absolute(rootText, base: base, environment: environment)
            }
        case (nil, let s?):
            let parsed = try StreamInputParser.parse(streams: s, record: o["record"], input: v, base: base, environment: environment)
            root = parsed.capture
            streams = parsed
        case (_?, let s?):
            throw s.error("input takes root (a folder) or streams (stations to record), not both")
        case (nil, nil):
            throw v.error("input needs root (a folder of recordings) or streams (stations to record)")
        }
        func globs(_ key: String, _ def: [String]) throws(SpecError) -> [Glob] {
            guard let list = o[key] else { return def.map { try! Glob($0) } }
            var out: [Glob] = []
            for item in try list.list(allowSingle: true) {
                do { out.append(try Glob(try item.string())) } catch let e as TemplateError { throw item.error(e.message) } catch { throw item.error("\(error)") }
            }
            return out
        }
        var reference: String? = nil
        if let r = o["reference"] {
            let path = absolute(try r.string(), base: base, environment: environment)
            var st = stat()
            guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                throw r.error("\"\(path)\" is not a file: input.reference names a healthy recording from the same recorder")
            }
            reference = path
        }
        var input = JobSpec.Input(
            root: root,
            include: try globs("include", JobSpec.defaultInclude),
            exclude: try globs("exclude", JobSpec.defaultExclude),
            // Captured segments appear by rename, whole: nothing to wait for.
            settle: try o["settle"]?.duration() ?? (streams == nil ? JobSpec.defaultSettle : 0),
            followLinks: try o["follow_links"]?.bool() ?? false,
            verify: try o["verify"]?.choice(JobSpec.Verify.self) ?? .metadata,
            endpoint: endpoint, region: try o["region"]?.string(), streams: streams)
        input.damaged = try o["damaged"]?.choice(DamagedPolicy.self) ?? .fail
        input.reference = reference
        return input
    }

    /// Refuses a layout in which the job's own outputs would be scanned as recordings: output.root
    /// equal to input.root or above it, with a tap (or a `file://` upload) writing names that
    /// `input.include` matches — run 2 would re-encode run 1's outputs over themselves. An output
    /// root inside the input root is fine: the scan skips it. Checked on sample names, as the
    /// templates would resolve them, with every symbolic link on the existing part of each root
    /// resolved: an output root that is a link to the input root is the input root.
    static package func checkOverlap(input spec: JobSpec.Input, outputRoot unresolved: String, stages: [JobSpec.Placed], file: String) throws(SpecError) {
        var input = spec
        input.root = resolvingLinks(spec.root)
        let outputRoot = resolvingLinks(unresolved)
        func inside(_ path: String, _ root: String) -> Bool { path == root || path.hasPrefix(root + "/") }
        func scanned(_ path: String) -> String? {
            guard inside(path, input.root), path != input.root else { return nil }
            let rel = String(path.dropFirst(input.root.count + 1))
            guard input.include.contains(where: { $0.matches(rel) }), !input.exclude.contains(where: { $0.matches(rel) }) else { return nil }
            return rel
        }
        let samples = ["memo.wav", "day 1/memo.m4a"].map { rel in
            RecordingContext(sourcePath: input.root + "/" + rel, relativePath: rel, modified: Date(timeIntervalSince1970: 1_700_000_000),
                             outputRoot: outputRoot)
        }
        var tapNames: [String] = []
        for p in stages {
            if let tap = p.config as? any TapConfig {
                for ctx in samples {
                    guard let path = try? tap.pathTemplate.resolve(ctx) else { continue }
                    tapNames.append((path as NSString).lastPathComponent)
                    // An output root inside the input root is skipped by the scan.
                    if inside(input.root, outputRoot), let rel = scanned(path) {
                        throw SpecError(file: file, line: p.line, column: p.column, keyPath: p.keyPath,
                                        message: "writes \"\(rel)\" inside input.root, and input.include takes it as a recording: the next run would process its own output. Give output.root a folder outside input.root or a subfolder of it (the scan skips output.root there), or exclude these names")
                    }
                }
            } else if let t = p.config.localFolder, let dir = t.fixedFolder.map(resolvingLinks),
                      inside(dir, input.root) || inside(input.root, dir) {
                for ctx in samples {
                    guard let folder = try? t.resolveRelative(ctx) else { continue }
                    let target = resolvingLinks("/" + folder.split(separator: "/").joined(separator: "/"))
                    for name in tapNames {
                        if let rel = scanned(target + "/" + name) {
                            throw SpecError(file: file, line: p.line, column: p.column, keyPath: p.keyPath + ".upload.to",
                                            message: "copies \"\(rel)\" into input.root, and input.include takes it as a recording; upload to a folder outside input.root or exclude it")
                        }
                    }
                }
            }
        }
    }

    /// `path` (absolute, normalised) with the symbolic links of its longest existing part resolved
    /// (`realpath`); the part that does not exist yet is kept as written. Anything else as given.
    static package func resolvingLinks(_ path: String) -> String {
        guard path.hasPrefix("/") else { return path }
        var head = path, tail: [String] = []
        while head != "/" {
            if let real = FileNameBytes.withCPath(head, { realpath($0, nil) }) {
                defer { free(real) }
                guard let base = FileNameBytes.string(cString: real) else { return path }
                return tail.isEmpty ? base : (base == "/" ? "" : base) + "/" + tail.reversed().joined(separator: "/")
            }
            tail.append((head as NSString).lastPathComponent)
            head = (head as NSString).deletingLastPathComponent
        }
        return path
    }

    /// `~/x` → home ($HOME, as the shell does; the password database only when it is unset),
    /// relative → against the spec's folder; the result is normalised.
    static package func absolute(_ p: String, base: String, environment: [String: String]) -> String {
        var path = p
        if path == "~" || path.hasPrefix("~/") {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? FileManager.default.homeDirectoryForCurrentUser.path
            path = home + path.dropFirst()
        }
        if !path.hasPrefix("/") { path = base + "/" + path }
        var s = URL(fileURLWithPath: path).standardizedFileURL.path
        while s.count > 1 && s.hasSuffix("/") { s.removeLast() }
        return s
    }

    /// Explicit tags (`!!python/object`, `!custom`) could smuggle types; only YAML's core tags pass.
    static package func checkTags(_ node: Node, file: String, budget: Int) throws(SpecError) {
        var remaining = budget
        var stack: [Node] = [node]
        let allowed: Set<String> = ["str", "int", "float", "bool", "null", "map", "seq", "merge", "value", "timestamp"].reduce(into: []) {
            $0.insert("tag:yaml.org,2002:" + $1)
        }
        while let n = stack.popLast() {
            remaining -= 1
            if remaining < 0 { throw SpecError(file: file, message: "the spec expands to more than \(budget) values (an alias bomb?)") }
            let tag = n.tag.rawValue
            if !tag.isEmpty && tag != "!" && tag != "?" && !allowed.contains(tag) {
                let m = n.mark
                throw SpecError(file: file, line: m?.line ?? 0, column: m?.column ?? 0, message: "tag \(tag) is not allowed in a spec")
            }
            switch n {
            case .mapping(let m): for (k, v) in m { stack.append(k); stack.append(v) }
            case .sequence(let s): stack.append(contentsOf: s)
            default: break
            }
        }
    }

    static package func yamlError(_ e: YamlError, file: String) -> SpecError {
        switch e {
        case .scanner(let ctx, let problem, let mark, _), .parser(let ctx, let problem, let mark, _), .composer(let ctx, let problem, let mark, _):
            var msg = problem
            if let ctx { msg += " (\(ctx.text))" }
            return SpecError(file: file, line: mark.line, column: mark.column, message: "YAML: " + msg)
        case .duplicatedKeysInMapping(let keys, let ctx):
            // Yams' own description quotes the whole document; keep the error on one line.
            let names = keys.map { "\"\($0)\"" }.joined(separator: ", ")
            return SpecError(file: file, line: ctx.mark.line, column: ctx.mark.column,
                             message: "YAML: duplicate key \(names) in one mapping (first here)")
        default:
            return SpecError(file: file, message: "YAML: \(e)")
        }
    }
}
