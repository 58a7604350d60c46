import ArgumentParser
import Foundation
import SegnoAudio
import SegnoCore
import SegnoKit
import SegnoSources
import SegnoSpeech
import SegnoState

/// Opens the state store of a spec read-only (SQLite or PostgreSQL); nil when nothing has run yet.
private func openState(_ specPath: String) throws -> (JobSpec, (any StateBackend)?) {
    try openStateForReading(spec: specPath)
}

private func seconds(_ x: Double) -> JSONValue { JSONValue.rounded(x, places: 2) }

/// 0.15 → "15 %".
private func percent(_ x: Double) -> String { String(format: "%g %%", (x * 1000).rounded() / 10) }

struct DuplicatesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duplicates",
        abstract: "List groups of recordings that share audio, from the fingerprints a run stored.",
        discussion: """
        Needs a fingerprint tap in the spec and a run that made the fingerprints. Whole duplicates \
        (copies, re-encodings, other rates) and partial overlaps (a cut of a memo, a song in two \
        radio captures) are found by the aligned bit error rate of the Chromaprint items; a match \
        needs a bit error rate of at most \(percent(DuplicateFinder.defaultMaxBitError)) (similarity ≥ \
        \(String(format: "%.2f", 1 - DuplicateFinder.defaultMaxBitError))). Times are in seconds.
        """)

    @Argument(help: "The job spec (YAML).") var spec: String
    @Option(help: "Shortest partial overlap reported, in seconds (default: 5); whole copies (90 % of both files) count however short, from 4 fingerprint items (about 3 s).") var minOverlap: Double = 5
    @Flag(help: "Print one JSON object.") var json = false

    func validate() throws {
        if !(minOverlap > 0 && minOverlap <= 86_400) { throw ValidationError("--min-overlap must be above 0 and at most 86400 seconds") }
    }

    func run() throws {
        let (s, store) = try openState(spec)
        guard let tap = Job(spec: s).taps.first(where: { $0.config.storesFingerprints }) else {
            printError("segno: \(spec) has no fingerprint tap; add `- fingerprint: {}` to its stages and run it")
            throw Exit.usage
        }
        let stored = try store?.fingerprints(stage: tap.identity) ?? []
        let overlaps = DuplicateFinder(minOverlap: minOverlap).find(stored.map(\.fingerprint.items))
        let groups = DuplicateFinder.groups(overlaps)
        if json {
            printJSON(JSONValue.object([
                ("recordings", .int(stored.count)),
                ("groups", .array(groups.map { g in
                    let members = Set(g)
                    return .object([
                        ("recordings", .array(g.map { .string(stored[$0].path) })),
                        ("matches", .array(overlaps.filter { members.contains($0.a) }.map { o in .object([
                            ("a", .string(stored[o.a].path)), ("b", .string(stored[o.b].path)), ("kind", .string(o.kind.rawValue)),
                            ("a_start", seconds(o.aStart)), ("b_start", seconds(o.bStart)), ("offset", seconds(o.offset)),
                            ("length", seconds(o.length)), ("similarity", JSONValue.rounded(o.similarity, places: 3)),
                        ]) })),
                    ])
                })),
            ]))
            return
        }
        guard store != nil else {
            printOut(nothingHasRun(s, spec: spec))
            return
        }
        guard !stored.isEmpty else {
            printOut("no fingerprints yet in \(AudioError.quoted(s.statePath)): run segno run \(ReportData.shellQuoted(spec))")
            return
        }
        guard !groups.isEmpty else {
            printOut("no shared audio among \(stored.count) fingerprinted recordings")
            return
        }
        for (n, g) in groups.enumerated() {
            let members = Set(g)
            printOut("group \(n + 1): \(g.count) recordings")
            for o in overlaps where members.contains(o.a) {
                printOut(String(format: "  %@ %@ at %.2f s ~ %@ at %.2f s: %.2f s, offset %+.2f s, similarity %.3f",
                                o.kind.rawValue, AudioError.quoted(stored[o.a].path), o.aStart, AudioError.quoted(stored[o.b].path),
                                o.bStart, o.length, o.offset, o.similarity))
            }
        }
    }
}

struct FindCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Search the recordings a run processed by words (title, tags, file name, what was said), recording date and place.",
        discussion: """
        Words match at the start of words in titles, tags, file names and transcripts (the transcribe \
        stage; each place they were said is printed with its time), ignoring case and accents \
        ("cafe" finds "Café", "서울" finds "서울에서"); all words must match; results are ranked (title \
        first, then tags, then names). Dates are YYYY-MM-DD or ISO 8601 date-times, inclusive. SQLite \
        and PostgreSQL state alike. Speaker labels and enrolled names (the speakers stage) are search \
        words too; --speaker NAME lists only the recordings where NAME (a name or a label such as \
        speaker-1) spoke, with the times of their turns in seconds of the source.
        """)

    @Argument(help: "The job spec (YAML).") var spec: String
    @Argument(help: "Words to look for.") var words: [String] = []
    @Option(help: "Recorded on or after this date (YYYY-MM-DD or ISO 8601).") var from: String?
    @Option(help: "Recorded on or before this date (YYYY-MM-DD or ISO 8601).") var to: String?
    @Option(help: ArgumentHelp("Recorded within KM kilometres (default 10) of a place, in degrees.", valueName: "lat,lon[,km]"))
    var near: String?
    @Option(help: ArgumentHelp("Only recordings with this figure from a measuring tap (stats), e.g. 'clipped>0' or 'peak_dbfs>=-1'; repeat for all of several.",
                               valueName: "name<|<=|>|>=|=value"))
    var measure: [String] = []
    @Option(help: ArgumentHelp("Only recordings where this speaker spoke (an enrolled name, or a label such as speaker-1), with the times of their turns.",
                               valueName: "name"))
    var speaker: String?
    @Flag(help: "Print one JSON object.") var json = false

    func validate() throws {
        for m in measure where MeasureFilter(m) == nil {
            throw ValidationError("--measure takes NAME<VALUE (or <=, >, >=, =), e.g. 'clipped>0'; got \(m)")
        }
        if let f = from, CatalogQuery.date(f) == nil { throw ValidationError("--from takes a date such as 2024-05-01 or 2024-05-01T09:30:00Z") }
        if let t = to, CatalogQuery.date(t) == nil { throw ValidationError("--to takes a date such as 2024-05-31 or 2024-05-31T18:00:00Z") }
        if let sp = speaker, sp.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--speaker takes a name or a label such as speaker-1") }
        if let n = near, CatalogQuery.place(n) == nil {
            throw ValidationError("--near takes latitude,longitude[,km] in degrees, e.g. 37.5665,126.9780,5")
        }
    }

    func run() throws {
        let (s, store) = try openState(spec)
        var q = CatalogQuery()
        q.words = words + (speaker.map { [$0] } ?? [])
        q.from = from.flatMap(CatalogQuery.date)
        q.to = to.flatMap(CatalogQuery.date)
        q.near = near.flatMap(CatalogQuery.place)
        if store == nil && !json {
            printOut(nothingHasRun(s, spec: spec))
            return
        }
        var hits = try store?.search(q, limit: 1000) ?? []
        if !measure.isEmpty, let store {
            let filters = measure.compactMap(MeasureFilter.init)
            let known = MeasureFilter.names(s.tapDeclarations)
            if let bad = filters.first(where: { !known.contains($0.name) }) {
                printError("segno: --measure \(bad.name): not a figure a measuring tap keeps; one of \(known.joined(separator: ", "))")
                throw Exit.usage
            }
            // The hits' recordings only (at most the search's 1,000), not the whole state.
            let found = try store.recordings(hits.map(\.path))
            hits = hits.filter { h in found[h.path].map { r in filters.allSatisfy { $0.matches(r, s.tapDeclarations) } } ?? false }
        }
        func output(_ text: String) -> String {
            if case .relative(let r) = StoredOutput(text) { return s.outputRoot + "/" + r }
            return text
        }
        // --speaker: the hits whose turn files say that speaker spoke, with those turns.
        var turns: [String: [SpeakerTurnsFile.Turn]] = [:]
        if let speaker {
            let job = Job(spec: s)
            guard job.taps.contains(where: { s.tapDeclarations[StepIdentity(stored: $0.identity).kind]?.capabilities.contains(.findsSpeakers) == true }) else {
                printError("segno: \(spec) has no speakers stage; add `- speakers: true` to its stages and run it")
                throw Exit.usage
            }
            for h in hits {
                let spoke = h.outputs.map(output).compactMap(SpeakerTurnsFile.read).flatMap { $0 }.filter { $0.isSpoken(by: speaker) }
                if !spoke.isEmpty { turns[h.path] = spoke.sorted { $0.start < $1.start } }
            }
            hits = hits.filter { turns[$0.path] != nil }
        }
        if json {
            printJSON(JSONValue.object([("results", .array(hits.map { h in
                var o: [(String, JSONValue)] = [("path", .string(h.path)), ("title", .string(h.title)), ("recorded", .string(h.recorded))]
                if let lat = h.latitude, let lon = h.longitude {
                    o += [("latitude", JSONValue.rounded(lat, places: 6)), ("longitude", JSONValue.rounded(lon, places: 6))]
                }
                if let d = h.distanceKm { o.append(("distance_km", JSONValue.rounded(d, places: 3))) }
                if let d = h.duration { o.append(("duration", JSONValue.rounded(d, places: 3))) }
                o.append(("outputs", .array(h.outputs.map { .string(output($0)) })))
                let said = SpokenSearch.hits(words: words, in: h.outputs.map(output))
                if !said.isEmpty {
                    o.append(("spoken", .array(said.map { .object([("time", JSONValue.rounded($0.time, places: 3)), ("text", .string($0.text))]) })))
                }
                let chapters = ChapterSearch.hits(words: words, stored: h.chapters, root: s.input.root, path: h.path)
                if !chapters.isEmpty {
                    o.append(("chapters", .array(chapters.map { .object([("time", JSONValue.rounded($0.start, places: 3)), ("title", .string($0.title))]) })))
                }
                if let spoke = turns[h.path] {
                    o.append(("turns", .array(spoke.map { t in
                        .object([("start", JSONValue.rounded(t.start, places: 3)), ("end", JSONValue.rounded(t.end, places: 3)), ("speaker", .string(t.label))]
                                + (t.name.map { [("name", JSONValue.string($0))] } ?? []))
                    })))
                }
                return .object(o)
            }))]))
            return
        }
        guard !hits.isEmpty else {
            printOut("no recordings match")
            return
        }
        for h in hits {
            var line = "\(AudioError.quoted(h.path))  \(AudioError.quoted(h.title))  \(AudioError.quoted(h.recorded))"
            if let lat = h.latitude, let lon = h.longitude { line += String(format: "  %.4f,%.4f", lat, lon) }
            if let d = h.distanceKm { line += String(format: " (%.1f km)", d) }
            printOut(line)
            // Where the words were said, from the recording's transcript.
            for said in SpokenSearch.hits(words: words, in: h.outputs.map(output)) {
                printOut("\(AudioError.quoted(h.path)) \(SpokenSearch.clock(said.time)) \"…\(AudioError.quoted(said.text))…\"")
            }
            for c in ChapterSearch.hits(words: words, stored: h.chapters, root: s.input.root, path: h.path) {
                printOut("\(AudioError.quoted(h.path)) \(ChapterTime.text(c.start)) chapter \"\(AudioError.quoted(c.title))\"")
            }
            if let spoke = turns[h.path] {
                let total = spoke.reduce(0) { $0 + max(0, $1.end - $1.start) }
                printOut(String(format: "%@ %@ spoke %.1f s in %d turn%@", AudioError.quoted(h.path), AudioError.quoted(spoke[0].shown), total, spoke.count, spoke.count == 1 ? "" : "s"))
                for t in spoke {
                    printOut("\(AudioError.quoted(h.path)) \(ChapterTime.text(t.start))–\(ChapterTime.text(t.end)) \(AudioError.quoted(t.shown))")
                }
            }
            for o in h.outputs { printOut("  \(output(o))") }
        }
    }
}
