import SegnoCore

/// Steps the SQLite and PostgreSQL stores' tests share (decision 0094).
package enum VoiceStoreChecks {
    /// Called on a store just upgraded from before decision 0094: reads `stage`'s ledger, then
    /// stores one row for `stage` and for two other taps, and returns the ledger, the next label
    /// each tap was handed, and how many rows stored since position 0 they were handed in all.
    package static func labelsAfterUpgrade(_ store: any VoiceStore, stage: String) throws -> (ledger: KeptLedger, next: [String: Int], handed: Int) {
        let ledger = try store.keptLedger(stage: stage)
        var next: [String: Int] = [:]
        var handed = 0
        for tap in [stage, "speakers:other", "speakers:new"] {
            _ = try store.keep(stage: tap, after: 0) { since, n in
                handed += since.count
                next[tap] = n
                return KeptSpeakers(path: "p.wav", stage: tap, voices: [], turns: "{}", digest: "d")
            }
        }
        return (ledger, next, handed)
    }
}
