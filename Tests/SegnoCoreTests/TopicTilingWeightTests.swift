import Foundation
@testable import SegnoCore
import Testing

/// Decision 0082 as amended: TopicTiling weighs each word by its inverse sequence frequency, so a
/// word heard all through a talk ("press" on a phone line) does not make two topics look alike.
@Suite struct TopicTilingWeightTests {
    @Test func aWordInEverySequenceWeighsLittle() {
        let seqs: [[String: Int]] = [["press": 2, "apple": 1], ["press": 1, "apple": 2], ["press": 3, "cherry": 1], ["press": 1, "cherry": 1]]
        let w = TopicTiling.inverseFrequencies(seqs)
        // N = 4: press in 4 → ln(5/4); apple and cherry in 2 → ln(5/2).
        #expect(abs(w["press"]! - log(5.0 / 4)) < 1e-12)
        #expect(abs(w["apple"]! - log(5.0 / 2)) < 1e-12 && abs(w["cherry"]! - log(5.0 / 2)) < 1e-12)
    }

    @Test func sharingOnlyACommonWordIsNotSharingATopic() {
        let a = ["press": 5, "apple": 1], b = ["press": 5, "cherry": 1]
        // Counts alone: 25 / 26 ≈ 0.96. Weighted (press ln 5/4 ≈ 0.223, the others ln 5 ≈ 1.609):
        // 25 × 0.0498 / (1.245 + 2.590) ≈ 0.325.
        let plain = TopicTiling.cosine(a, b)
        let weighted = TopicTiling.cosine(a, b, weights: ["press": log(5.0 / 4), "apple": log(5.0), "cherry": log(5.0)])
        #expect(abs(plain - 25.0 / 26) < 1e-12)
        #expect(abs(weighted - 0.3246) < 1e-3, "\(weighted)")
        // Sharing the topic word itself still counts in full.
        #expect(abs(TopicTiling.cosine(["apple": 2], ["apple": 3], weights: ["apple": log(5.0)]) - 1) < 1e-12)
    }

    @Test func boundariesHoldWhenACommonWordRunsThroughTheTalk() {
        // Three topics of 60 s (as in ChapterMakingTests), every other word "press" instead of a stop word.
        let topics = [["apple", "banana", "cherry", "grape", "melon", "peach", "plum", "lemon"],
                      ["engine", "wheel", "brake", "clutch", "piston", "gear", "tyre", "axle"],
                      ["planet", "orbit", "comet", "telescope", "star", "moon", "galaxy", "rocket"]]
        var said: [Findings.Segment] = []
        for (t, words) in topics.enumerated() {
            for s in 0..<10 {
                let text = (0..<16).map { i in i % 2 == 0 ? "press" : words[(s * 3 + i) % words.count] }
                said.append(Findings.Segment(start: Double(t * 60 + s * 6), end: Double(t * 60 + s * 6 + 6), text: text.joined(separator: " ")))
            }
        }
        #expect(TopicTiling.boundaries(said, duration: 180, min: 30, stopWords: StopWords.english) == [60, 120])
    }
}
