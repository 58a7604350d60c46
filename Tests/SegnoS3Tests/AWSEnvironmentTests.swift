import Foundation
@testable import SegnoS3
import Testing

@Suite struct AWSEnvironmentTests {
    /// Writes the two files into a fresh folder and returns their paths.
    static func files(credentials: String, config: String) throws -> (String, String, URL) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("segno-aws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let c = dir.appendingPathComponent("credentials"), k = dir.appendingPathComponent("config")
        try credentials.write(to: c, atomically: true, encoding: .utf8)
        try config.write(to: k, atomically: true, encoding: .utf8)
        return (c.path, k.path, dir)
    }

    static let credentialsText = """
        # comment
        [default]
        aws_access_key_id = DEFAULTKEY
        aws_secret_access_key = defaultsecret

        [r2]
        aws_access_key_id=R2KEY
        aws_secret_access_key=r2/secret+x
        aws_session_token = tok   ; trailing comment
        """

    static let configText = """
        [default]
        region = eu-west-1
        [profile r2]
        region = auto
        endpoint_url = https://account.r2.cloudflarestorage.com
        s3 =
          addressing_style = path
        [profile only-config]
        aws_access_key_id = CONFIGKEY
        aws_secret_access_key = configsecret
        [sso-session corp]
        region = nowhere
        """

    @Test func parsesINISectionsCommentsAndNestedLines() {
        let config = AWSSharedConfig.parse(Self.configText, isConfigFile: true)
        #expect(config.value("region", profile: "r2") == "auto")
        #expect(config.value("addressing_style", profile: "r2") == nil)
        #expect(config.sections["corp"] == nil && config.sections["sso-session corp"] == nil)
        let credentials = AWSSharedConfig.parse(Self.credentialsText, isConfigFile: false)
        #expect(credentials.value("aws_session_token", profile: "r2") == "tok")
        #expect(credentials.value("aws_secret_access_key", profile: "r2") == "r2/secret+x")
    }

    @Test func environmentKeysWinOverTheDefaultProfile() throws {
        let (c, k, dir) = try Self.files(credentials: Self.credentialsText, config: Self.configText)
        defer { try? FileManager.default.removeItem(at: dir) }
        let env = ["AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "envsecret", "AWS_SESSION_TOKEN": "envtoken",
                   "AWS_REGION": "us-west-2", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"]
        let resolved = try AWSEnvironment.resolve(environment: env, credentialsFile: c, configFile: k)
        #expect(resolved.credentials == S3Credentials(accessKeyId: "ENVKEY", secretAccessKey: "envsecret", sessionToken: "envtoken"))
        #expect(resolved.region == "us-west-2")
        #expect(resolved.endpoint?.absoluteString == "http://127.0.0.1:9000")
        #expect(resolved.credentialsSource == "environment")
        #expect(!resolved.description.contains("envsecret") && !resolved.description.contains("envtoken"))
    }

    @Test func profileFromTheFiles() throws {
        let (c, k, dir) = try Self.files(credentials: Self.credentialsText, config: Self.configText)
        defer { try? FileManager.default.removeItem(at: dir) }
        let viaEnv = try AWSEnvironment.resolve(environment: ["AWS_PROFILE": "r2"], credentialsFile: c, configFile: k)
        #expect(viaEnv.credentials == S3Credentials(accessKeyId: "R2KEY", secretAccessKey: "r2/secret+x", sessionToken: "tok"))
        #expect(viaEnv.region == "auto")
        #expect(viaEnv.endpoint?.host == "account.r2.cloudflarestorage.com")
        let defaults = try AWSEnvironment.resolve(environment: [:], credentialsFile: c, configFile: k)
        #expect(defaults.credentials?.accessKeyId == "DEFAULTKEY")
        #expect(defaults.region == "eu-west-1")
        let configOnly = try AWSEnvironment.resolve(environment: ["AWS_ACCESS_KEY_ID": "E", "AWS_SECRET_ACCESS_KEY": "e"],
                                                    credentialsFile: c, configFile: k, profile: "only-config")
        #expect(configOnly.credentials?.accessKeyId == "CONFIGKEY")
        #expect(configOnly.credentialsSource == "config file")
    }

    @Test func missingNamedProfileIsAnErrorAndNoFilesIsNoCredentials() throws {
        let (c, k, dir) = try Self.files(credentials: Self.credentialsText, config: Self.configText)
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(throws: S3Error.self) {
            try AWSEnvironment.resolve(environment: [:], credentialsFile: c, configFile: k, profile: "nope")
        }
        let none = try AWSEnvironment.resolve(environment: ["HOME": dir.appendingPathComponent("empty").path])
        #expect(none.credentials == nil)
        #expect(none.region == nil)
    }

    @Test func badEndpointIsRejected() {
        #expect(throws: S3Error.self) {
            try AWSEnvironment.resolve(environment: ["AWS_ENDPOINT_URL": "ftp://x", "HOME": "/nonexistent"])
        }
    }
}
