public enum SegnoWaveformVersion { public static let value = 1 }
