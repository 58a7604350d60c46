// swift-tools-version:6.0
import PackageDescription

// Layers (each only depends on the ones above it):
//   SegnoDSP       pure math, no I/O, no dependencies (filters, pitch, peaks)
//   SegnoWaveform  audiowaveform-compatible peak data, formats and pictures (pure)
//   SegnoS3        SigV4 signing and an S3 client over URLSession (swift-crypto)
//   SegnoCore      audio I/O (libsndfile, libsoxr, libsamplerate, libebur128), stages, specs, state, runner
//   segno          the thin command line (swift-argument-parser)
//   segno-decode   a separate decoder and fingerprint program that segno starts and talks to over
//                  pipes; the only target linking FFmpeg's libraries (CAVFormat) and libchromaprint
//                  (CChromaprint), never linked into segno
//   segno-tags     the tag reader segno starts per file: TagLib in a process of its own, within limits
// `make test` sets SEGNO_WARNINGS_AS_ERRORS=1: segno's own Swift targets (not its dependencies)
// are then built with warnings as errors, so the count of warnings stays at zero.
let ownSettings: [SwiftSetting] = Context.environment["SEGNO_WARNINGS_AS_ERRORS"] == "1"
    ? [.unsafeFlags(["-warnings-as-errors"])] : []

let package = Package(
    name: "segno",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "segno", targets: ["segno"]),
        .library(name: "SegnoCore", targets: ["SegnoCore"]),
        .library(name: "SegnoKit", targets: ["SegnoKit"]),
        .executable(name: "segno-decode", targets: ["segno-decode"]),
        .executable(name: "segno-tags", targets: ["segno-tags"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile",
                       providers: [.apt(["libsndfile1-dev"])]),
        // libmpg123 (LGPL-2.1), linked dynamically: MP3 decoding with its messages silenced.
        .systemLibrary(name: "CMpg123", pkgConfig: "libmpg123",
                       providers: [.apt(["libmpg123-dev"])]),
        // libFLAC (BSD-3-Clause), linked dynamically: FLAC salvage (resynchronises on the next frame header).
        .systemLibrary(name: "CFLAC", pkgConfig: "flac",
                       providers: [.apt(["libflac-dev"])]),
        .systemLibrary(name: "CSampleRate", pkgConfig: "samplerate",
                       providers: [.apt(["libsamplerate0-dev"])]),
        // libsoxr (LGPL-2.1), linked dynamically: the default resampler.
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr",
                       providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128",
                       providers: [.apt(["libebur128-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        // libchromaprint (LGPL-2.1): acoustic fingerprints, ONLY for the segno-decode program:
        // Debian's build links libavcodec (GPL parts) for its FFT, so segno sends the samples there.
        .systemLibrary(name: "CChromaprint", pkgConfig: "libchromaprint",
                       providers: [.apt(["libchromaprint-dev"])]),
        // speexdsp (BSD-3), linked dynamically: the no-model `denoise` engine (its preprocessor).
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp",
                       providers: [.apt(["libspeexdsp-dev"])]),
        // Linux headers Glibc does not export (extended attributes: segno's mark on its files).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        // TagLib 1.13 (LGPL-2.1/MPL-1.1, C++, linked dynamically) behind segno's own C functions:
        // TagLib's C API has no property map and no pictures before v2.0, and Swift's C++ interop
        // does not import TagLib 1.13's classes (see README, Tags).
        .target(name: "CSegnoTags",
                cxxSettings: [.unsafeFlags(["-I/usr/include/taglib"])],
                linkerSettings: [.linkedLibrary("tag")]),
        // Struct layouts of the speech engines segno opens at run time (header only, links nothing).
        .systemLibrary(name: "CSpeechEngines", path: "Sources/CSpeechEngines"),
        // FFmpeg's libraries (Debian builds them with GPL parts): ONLY for the segno-decode program.
        .systemLibrary(name: "CAVFormat", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswresample-dev"])]),
        // Optimized in debug builds too: the tests run every recording's true peak, limiter and
        // filters through it, and unoptimized SIMD code is tens of times slower (decision 0101).
        .target(name: "SegnoDSP",
                swiftSettings: ownSettings + [.unsafeFlags(["-Ounchecked"], .when(configuration: .release)),
                                              .unsafeFlags(["-O"], .when(configuration: .debug))]),
        .target(name: "SegnoWaveform", dependencies: ["SegnoDSP"], swiftSettings: ownSettings),
        // The records of unfinished multipart uploads: what the S3 client resumes from and every state
        // backend keeps (pure; the core sees them without the S3 client).
        .target(name: "SegnoMultipart", swiftSettings: ownSettings),
        .target(name: "SegnoS3", dependencies: [
            "SegnoMultipart",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: ownSettings),
        // The core: spec, stage protocols, chain, planner, runner, failure model, report data, and the
        // protocols of state and sources. No system C library, no GRDB, no libpq, no S3 client (see docs/layout.md).
        .target(name: "SegnoCore", dependencies: [
            "SegnoDSP", "SegnoWaveform", "SegnoMultipart", "CLinux",
            .product(name: "Yams", package: "Yams"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: ownSettings),
        // Audio I/O: decoders, encoders, tags, salvage, the audio stages and the archive taps.
        .target(name: "SegnoAudio", dependencies: [
            "SegnoCore", "SegnoDSP", "SegnoWaveform",
            "CSndFile", "CMpg123", "CFLAC", "CSampleRate", "CSoxr", "CEbur128", "CLinux", "CSegnoTags",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: ownSettings),
        // Speech engines (denoise, voice activity, transcription), loaded at run time or run as helpers.
        .target(name: "SegnoSpeech", dependencies: [
            "SegnoCore", "SegnoAudio", "SegnoDSP", "CSpeexDSP", "CSpeechEngines",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: ownSettings),
        // State: SQLite through GRDB, PostgreSQL through libpq.
        .target(name: "SegnoState", dependencies: [
            "SegnoCore", "SegnoS3", "CLibPQ",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: ownSettings),
        // Sources (folders, S3, streams, watch) and uploads.
        .target(name: "SegnoSources", dependencies: [
            "SegnoCore", "SegnoAudio", "SegnoS3", "SegnoDSP",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: ownSettings),
        // The assembly: the runner over concrete decoders, state and uploads, the standard stage
        // registry, `state rebuild` and the one-off waveform batch. What the CLI and tests build on.
        .target(name: "SegnoKit", dependencies: [
            "SegnoCore", "SegnoAudio", "SegnoSpeech", "SegnoState", "SegnoSources", "SegnoDSP", "SegnoWaveform", "SegnoS3",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: ownSettings),
        // For the tests only (no product), in layers like the library (docs/layout.md, decision 0062):
        // the core's: in-memory source, decoder and state (`InMemoryState`), a clock the test moves
        // (`TestClock`), the stage harness (blocks of 1, 7 and 4096 frames), test signals, temp
        // folders, `Wait.until`, the process runner and tool lookup.
        // No system C library in its closure, so the core's tests build none.
        .target(name: "SegnoCoreTestSupport", dependencies: ["SegnoCore", "SegnoDSP", "SegnoMultipart"], swiftSettings: ownSettings),
        // Audio's: files written by libsndfile, sine files, sox and ffmpeg as references, the
        // test process's `AudioTools`, phone-format fixtures.
        .target(name: "SegnoAudioTestSupport", dependencies: [
            "SegnoCore", "SegnoAudio", "SegnoDSP", "SegnoCoreTestSupport",
        ], swiftSettings: ownSettings),
        // The assembly's: the standard registry with the tests' tools, the in-memory state over
        // SQLite, and the `segno` program runner the CLI tests share.
        .target(name: "SegnoTestSupport", dependencies: [
            "SegnoCore", "SegnoState", "SegnoS3", "SegnoKit", "SegnoCoreTestSupport", "SegnoAudioTestSupport",
        ], swiftSettings: ownSettings),
        .executableTarget(name: "segno", dependencies: [
            "SegnoCore", "SegnoAudio", "SegnoSpeech", "SegnoState", "SegnoSources", "SegnoKit", "SegnoDSP", "SegnoWaveform", "SegnoS3",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: ownSettings),
        // libmad (GPL-2): MP3 decoded as audiowaveform decodes it, ONLY for the segno-decode program.
        .systemLibrary(name: "CMad", pkgConfig: "mad", providers: [.apt(["libmad0-dev"])]),
        // The tag reader segno starts per file (TagLib in a process of its own, decision 0083).
        .executableTarget(name: "segno-tags", dependencies: ["CSegnoTags"]),
        .executableTarget(name: "segno-decode", dependencies: ["CAVFormat", "CChromaprint", "CMad", "CLinux"], swiftSettings: ownSettings),
        .testTarget(name: "SegnoDSPTests", dependencies: ["SegnoDSP"], swiftSettings: ownSettings),
        .testTarget(name: "SegnoWaveformTests", dependencies: ["SegnoWaveform", "SegnoDSP"], exclude: ["Fixtures"], swiftSettings: ownSettings),
        .testTarget(name: "SegnoS3Tests", dependencies: ["SegnoS3", .product(name: "Logging", package: "swift-log")], swiftSettings: ownSettings),
        // One test target per library module, each depending on its module, the ones below it it
        // uses, and the test support of its level (decision 0062).
        .testTarget(name: "SegnoCoreTests", dependencies: ["SegnoCore", "SegnoCoreTestSupport", "SegnoDSP"], swiftSettings: ownSettings),
        .testTarget(name: "SegnoAudioTests", dependencies: [
            "SegnoAudio", "CSegnoTags", "CEbur128", "SegnoCore", "SegnoDSP", "SegnoWaveform", "SegnoCoreTestSupport", "SegnoAudioTestSupport",
        ], swiftSettings: ownSettings),
        .testTarget(name: "SegnoSpeechTests", dependencies: [
            "SegnoSpeech", "SegnoAudio", "SegnoCore", "SegnoDSP", "SegnoCoreTestSupport", "SegnoAudioTestSupport",
        ], swiftSettings: ownSettings),
        .testTarget(name: "SegnoStateTests", dependencies: [
            "SegnoState", "SegnoCore", "SegnoCoreTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
        ], swiftSettings: ownSettings),
        .testTarget(name: "SegnoSourcesTests", dependencies: ["SegnoSources", "SegnoCore", "SegnoCoreTestSupport"], swiftSettings: ownSettings),
        .testTarget(name: "SegnoKitTests", dependencies: [
            "SegnoKit", "SegnoCore", "SegnoAudio", "SegnoSpeech", "SegnoState", "SegnoSources", "SegnoDSP",
            "SegnoCoreTestSupport", "SegnoAudioTestSupport", "SegnoTestSupport",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: ownSettings),
        .testTarget(name: "SegnoCLITests", dependencies: [
            "SegnoCore", "SegnoAudio", "SegnoState", "SegnoS3", "SegnoWaveform", "SegnoDSP", "SegnoSources",
            "SegnoCoreTestSupport", "SegnoAudioTestSupport", "SegnoTestSupport",
        ], swiftSettings: ownSettings),
    ]
)
