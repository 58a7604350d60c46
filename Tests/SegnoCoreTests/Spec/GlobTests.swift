import SegnoCore
import Testing

/// Input patterns: `*`, `?`, `[abc]`, `**` (any folders), `{a,b}` (nested), case-insensitive,
/// and `*` never takes a leading dot.
@Suite struct GlobTests {
    func glob(_ text: String) throws -> Glob { try Glob(text) }

    @Test func starMatchesWithinOneName() throws {
        let g = try glob("*.wav")
        #expect(g.matches("memo.wav"))
        #expect(g.matches(".wav") == false)
        #expect(g.matches("memo.wav.part") == false)
        #expect(g.matches("2024/memo.wav") == false, "* does not cross folders")
        #expect(try glob("2024/*.wav").matches("2024/memo.wav"))
        #expect(try glob("memo-?.wav").matches("memo-1.wav"))
        #expect(try glob("memo-?.wav").matches("memo-12.wav") == false)
        #expect(try glob("memo-[0-9].wav").matches("memo-7.wav"))
        #expect(try glob("memo-[0-9].wav").matches("memo-x.wav") == false)
    }

    @Test func doubleStarMatchesAnyNumberOfFolders() throws {
        let g = try glob("**/*.wav")
        #expect(g.matches("a.wav"), "** matches zero folders")
        #expect(g.matches("x/a.wav"))
        #expect(g.matches("x/y/z/a.wav"))
        #expect(g.matches("x/y/z/a.flac") == false)
        let mid = try glob("field/**/raw/*.wav")
        #expect(mid.matches("field/raw/a.wav"))
        #expect(mid.matches("field/2024/06/raw/a.wav"))
        #expect(mid.matches("field/2024/06/cooked/a.wav") == false)
        #expect(mid.matches("other/raw/a.wav") == false)
        let tail = try glob("**/tmp/**")
        #expect(tail.matches("a/tmp/b.wav"))
        #expect(tail.matches("tmp/x/y.wav"))
        #expect(tail.matches("a/tmpx/b.wav") == false)
    }

    @Test func bracesGiveAlternatives() throws {
        let g = try glob("**/*.{wav,flac,caf}")
        for name in ["a.wav", "b/a.flac", "c/d/a.caf"] { #expect(g.matches(name), "\(name)") }
        #expect(g.matches("a.mp3") == false)
        let dirs = try glob("{2023,2024}/**/*.wav")
        #expect(dirs.matches("2024/06/a.wav"))
        #expect(dirs.matches("2022/06/a.wav") == false)
        let empty = try glob("memo{,-edit}.wav")
        #expect(empty.matches("memo.wav"))
        #expect(empty.matches("memo-edit.wav"))
    }

    @Test func bracesNest() throws {
        let g = try glob("*.{wav,fl{ac,oat},a{if{,f,c},u}}")
        for ext in ["wav", "flac", "float", "aif", "aiff", "aifc", "au"] { #expect(g.matches("x.\(ext)"), "\(ext)") }
        for ext in ["fl", "a", "aifx", "wa"] { #expect(g.matches("x.\(ext)") == false, "\(ext)") }
        let inner = try glob("a{b,c{d,e}}f.wav")
        for name in ["abf.wav", "acdf.wav", "acef.wav"] { #expect(inner.matches(name), "\(name)") }
        for name in ["acf.wav", "af.wav", "abdf.wav"] { #expect(inner.matches(name) == false, "\(name)") }
    }

    @Test func malformedBracesAreErrors() throws {
        #expect(throws: TemplateError.self) { try Glob("*.{wav,flac") }
        #expect(throws: TemplateError.self) { try Glob("*.wav}") }
        #expect(throws: TemplateError.self) { try Glob("/abs/*.wav") }
        let many = String(repeating: "{a,b}", count: 11) // 2^11 alternatives
        #expect(throws: TemplateError.self) { try Glob(many) }
    }

    @Test func matchingIgnoresCase() throws {
        let g = try glob("**/*.{wav,m4a}")
        #expect(g.matches("MEMO.WAV"))
        #expect(g.matches("Phone/Memo.M4A"))
        #expect(try glob("Field/*.wav").matches("FIELD/x.wav"))
        #expect(try glob("Field/*.wav").matches("field/X.Wav"))
    }

    @Test func hiddenNamesNeedAnExplicitDot() throws {
        let star = try glob("**/*.wav")
        #expect(star.matches(".hidden.wav") == false)
        #expect(star.matches("a/.hidden.wav") == false)
        #expect(try glob("*").matches(".DS_Store") == false)
        let hidden = try glob("**/.*")
        #expect(hidden.matches(".DS_Store"))
        #expect(hidden.matches("a/b/.hidden.wav"))
        #expect(hidden.matches(".git"))
        #expect(hidden.matches("a/visible.wav") == false)
        #expect(try glob("**/.*.wav").matches("x/.hidden.wav"))
    }

    @Test func foldersThatCannotHoldMatchesArePruned() throws {
        let g = try glob("2024/**/*.wav")
        #expect(g.mayMatchBelow("2024"))
        #expect(g.mayMatchBelow("2024/06/01"))
        #expect(g.mayMatchBelow("2023") == false)
        let flat = try glob("*.wav")
        #expect(flat.mayMatchBelow("sub") == false)
        #expect(try glob("**/*.wav").mayMatchBelow("any/depth/at/all"))
        #expect(try glob("{a,b}/*.wav").mayMatchBelow("b"))
        #expect(try glob("{a,b}/*.wav").mayMatchBelow("c") == false)
    }

    @Test func theDefaultPatternsTakeEveryDecodableExtensionAndSkipHiddenFiles() throws {
        let include = try JobSpec.defaultInclude.map(Glob.init)
        let exclude = try JobSpec.defaultExclude.map(Glob.init)
        func taken(_ p: String) -> Bool { include.contains { $0.matches(p) } && !exclude.contains { $0.matches(p) } }
        for p in ["a.wav", "b/c.FLAC", "x/y/z.m4a", "m.mp3", "o.opus", "k.caf", "a.aiff",
                  "v.amr", "w.awb", "p.3gp", "q.3g2", "r.aac", "s.webm", "t.weba", "u.mka", "V.WEBM"] { #expect(taken(p), "\(p)") }
        for p in ["a.txt", ".a.wav", "b/.c.flac", "notes.wav.txt"] { #expect(!taken(p), "\(p)") }
    }
}
