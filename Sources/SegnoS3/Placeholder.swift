public enum SegnoS3Version { public static let value = 1 }
