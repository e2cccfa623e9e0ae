import FoundationEssentials

/// Wall-clock seconds, for observers' last use and TTL.
enum Clock {
    static var now: Double { Date().timeIntervalSince1970 }
}
