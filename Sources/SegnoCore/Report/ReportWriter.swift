import Foundation

/// Writes a report file: `segno report` and the spec's `report: { path: … }` after every run.
public enum ReportWriter {
    /// Collects the report from `store` (any backend) and writes the HTML to `options.reportPath`
    /// through `OutputFile` (temporary name, sync, rename).
    public static func writeHTML(spec: JobSpec, store: any StateBackend, options: ReportData.Options) throws {
        let data = try ReportData.collect(spec: spec, store: store, options: options)
        try OutputFile.write(Array(ReportPage.html(data).utf8), to: options.reportPath)
    }

    /// After a run: the spec's `report.path`, from the run's own store. A failure here is the
    /// caller's to print; the run's outcome stands.
    static package func afterRun(spec: JobSpec, store: any StateBackend) throws {
        guard let path = spec.reportPath else { return }
        try writeHTML(spec: spec, store: store, options: ReportData.Options(reportPath: path))
    }
}
