import Foundation

/// The AWS shared configuration files (`~/.aws/credentials` and `~/.aws/config`) parsed as INI:
/// `[section]` headers, `key = value` lines, `#`/`;` comment lines. Keys are lower-cased; indented
/// lines (nested sub-settings such as `s3 =` blocks) are skipped. In the config file a profile's
/// section is `[profile NAME]` (and `[default]`); in the credentials file it is `[NAME]`.
public struct AWSSharedConfig: Sendable, Equatable {
    /// Section name (as written, `profile ` prefix removed for config files) → key → value.
    public var sections: [String: [String: String]]

    public init(sections: [String: [String: String]] = [:]) { self.sections = sections }

    /// Parses INI text. `isConfigFile` strips the `profile ` prefix from section names.
    public static func parse(_ text: String, isConfigFile: Bool) -> AWSSharedConfig {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            var line = String(rawLine)
            if line.hasSuffix("\r") { line.removeLast() }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
            if line.first == " " || line.first == "\t" {
                // A continuation/nested line (e.g. under `s3 =`): not a top-level setting.
                continue
            }
            if trimmed.hasPrefix("[") {
                guard let close = trimmed.firstIndex(of: "]") else { current = nil; continue }
                var name = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
                    .trimmingCharacters(in: .whitespaces)
                if isConfigFile {
                    if name.hasPrefix("profile ") || name.hasPrefix("profile\t") {
                        name = String(name.dropFirst("profile".count)).trimmingCharacters(in: .whitespaces)
                    } else if name != "default" {
                        // `[sso-session x]`, `[services x]` and others: not profiles.
                        current = nil
                        continue
                    }
                }
                current = name
                if sections[name] == nil { sections[name] = [:] }
                continue
            }
            guard let section = current, let equals = trimmed.firstIndex(of: "=") else { continue }
            let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = trimmed[trimmed.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            // An inline comment needs white space before it: `region = eu-west-1 # main`.
            for marker in [" #", "\t#", " ;", "\t;"] {
                if let range = value.range(of: marker) {
                    value = value[..<range.lowerBound].trimmingCharacters(in: .whitespaces)
                }
            }
            if key.isEmpty { continue }
            sections[section]![key] = value
        }
        return AWSSharedConfig(sections: sections)
    }

    /// Reads and parses a file; a missing file is an empty configuration.
    public static func load(path: String, isConfigFile: Bool) throws -> AWSSharedConfig {
        guard FileManager.default.fileExists(atPath: path) else { return AWSSharedConfig() }
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return parse(text, isConfigFile: isConfigFile)
        } catch {
            throw S3Error.invalidConfiguration("cannot read AWS configuration file \(path)")
        }
    }

    public func value(_ key: String, profile: String) -> String? {
        guard let value = sections[profile]?[key.lowercased()], !value.isEmpty else { return nil }
        return value
    }
}

/// Where the S3 connection settings come from, resolved the way the AWS CLI resolves them:
/// environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
/// `AWS_REGION`/`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`, `AWS_PROFILE`) first,
/// then the profile in `~/.aws/credentials` (`aws_access_key_id`, `aws_secret_access_key`,
/// `aws_session_token`) and `~/.aws/config` (`region`, `endpoint_url`, and keys too).
/// An explicitly named profile wins over the key variables, as `--profile` does for the CLI.
public struct AWSEnvironment: Sendable, CustomStringConvertible {
    public var credentials: S3Credentials?
    public var region: String?
    public var endpoint: URL?
    /// The profile that was consulted.
    public var profile: String
    /// Where the credentials came from: `environment`, `credentials file` or `config file`.
    public var credentialsSource: String?

    public var description: String {
        "AWSEnvironment(profile: \(profile), region: \(region ?? "nil"), endpoint: \(endpoint?.absoluteString ?? "nil"), "
            + "credentials: \(credentials.map { "\($0) from \(credentialsSource ?? "?")" } ?? "none"))"
    }

    /// Resolves the settings. Called once per run (it reads two small files).
    /// - Parameters:
    ///   - environment: the process environment (tests pass their own).
    ///   - credentialsFile/configFile: paths; default `AWS_SHARED_CREDENTIALS_FILE`/`AWS_CONFIG_FILE`
    ///     or `$HOME/.aws/credentials` and `$HOME/.aws/config`.
    ///   - profile: an explicit profile; default `AWS_PROFILE` or `default`.
    /// - Throws: `S3Error.credentialsNotFound` when an explicitly named profile does not exist in
    ///   either file; `S3Error.invalidConfiguration` for an unreadable file or a bad endpoint URL.
    public static func resolve(
        environment: [String: String],
        credentialsFile: String? = nil, configFile: String? = nil, profile explicitProfile: String? = nil
    ) throws -> AWSEnvironment {
        func env(_ name: String) -> String? {
            guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }
        let home = env("HOME") ?? NSHomeDirectory()
        let credentialsPath = credentialsFile ?? env("AWS_SHARED_CREDENTIALS_FILE") ?? home + "/.aws/credentials"
        let configPath = configFile ?? env("AWS_CONFIG_FILE") ?? home + "/.aws/config"
        let profile = explicitProfile ?? env("AWS_PROFILE") ?? "default"
        let credentialsINI = try AWSSharedConfig.load(path: expandTilde(credentialsPath, home: home), isConfigFile: false)
        let configINI = try AWSSharedConfig.load(path: expandTilde(configPath, home: home), isConfigFile: true)

        if explicitProfile != nil || env("AWS_PROFILE") != nil,
           credentialsINI.sections[profile] == nil, configINI.sections[profile] == nil {
            throw S3Error.credentialsNotFound("profile '\(profile)' is in neither \(credentialsPath) nor \(configPath)")
        }

        var result = AWSEnvironment(credentials: nil, region: nil, endpoint: nil, profile: profile, credentialsSource: nil)
        let envKeys: S3Credentials? = {
            guard let id = env("AWS_ACCESS_KEY_ID"), let secret = env("AWS_SECRET_ACCESS_KEY") else { return nil }
            return S3Credentials(accessKeyId: id, secretAccessKey: secret, sessionToken: env("AWS_SESSION_TOKEN"))
        }()
        func fileKeys(_ ini: AWSSharedConfig) -> S3Credentials? {
            guard let id = ini.value("aws_access_key_id", profile: profile),
                  let secret = ini.value("aws_secret_access_key", profile: profile) else { return nil }
            return S3Credentials(accessKeyId: id, secretAccessKey: secret,
                                 sessionToken: ini.value("aws_session_token", profile: profile))
        }
        let candidates: [(S3Credentials?, String)] = explicitProfile != nil
            ? [(fileKeys(credentialsINI), "credentials file"), (fileKeys(configINI), "config file"), (envKeys, "environment")]
            : [(envKeys, "environment"), (fileKeys(credentialsINI), "credentials file"), (fileKeys(configINI), "config file")]
        if let found = candidates.first(where: { $0.0 != nil }) {
            result.credentials = found.0
            result.credentialsSource = found.1
        }
        result.region = env("AWS_REGION") ?? env("AWS_DEFAULT_REGION") ?? configINI.value("region", profile: profile)
        if let text = env("AWS_ENDPOINT_URL_S3") ?? env("AWS_ENDPOINT_URL") ?? configINI.value("endpoint_url", profile: profile) {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                  scheme == "http" || scheme == "https", url.host != nil else {
                throw S3Error.invalidConfiguration("endpoint '\(text)' is not an http(s) URL")
            }
            result.endpoint = url
        }
        return result
    }

    static func expandTilde(_ path: String, home: String) -> String {
        if path == "~" { return home }
        if path.hasPrefix("~/") { return home + path.dropFirst() }
        return path
    }
}
