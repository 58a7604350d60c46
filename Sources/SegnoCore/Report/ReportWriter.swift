import Foundation
import GRDB

/// Writes a report file: `segno report` and the spec's `report: { path: … }` after every run.
public enum ReportWriter {
    /// Collects the report from `reader` and writes the HTML to `options.reportPath` through
    /// `OutputFile` (temporary name, sync, rename).
    public static func writeHTML(spec: JobSpec, reader: any DatabaseReader, options: ReportData.Options) throws {
        let data = try ReportData.collect(spec: spec, reader: reader, options: options)
        try OutputFile.write(Array(ReportPage.html(data).utf8), to: options.reportPath)
    }

    /// After a run: the spec's `report.path`, from the run's own store. A failure here is the
    /// caller's to print; the run's outcome stands.
    static func afterRun(spec: JobSpec, store: any StateBackend) throws {
        guard let path = spec.reportPath else { return }
        guard let sqlite = store as? StateStore else {
            throw RunError.state("the HTML report reads SQLite state for now; it is not written with PostgreSQL state")
        }
        try writeHTML(spec: spec, reader: sqlite.dbReader, options: ReportData.Options(reportPath: path))
    }
}
