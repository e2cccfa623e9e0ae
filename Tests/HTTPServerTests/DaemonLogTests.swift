import Concurrency
import HTTPServer
import Logging
import Testing

/// What the daemon logs of libmicrohttpd's own messages.
@Suite struct DaemonLogTests {
    /// Keeps every message logged through it.
    struct Recorder: LogHandler {
        let messages: Locked<[String]>
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt)
        {
            messages.withLock { $0.append("\(level) \(message)") }
        }
    }

    /// libmicrohttpd takes the logger before any other option, so it has
    /// nothing to say about the options at start: no notice, with a pool
    /// of workers or one.
    @Test(arguments: [1, 2])
    func aDaemonStartsWithoutANoticeFromLibmicrohttpd(threads: Int) throws {
        let messages = Locked<[String]>([])
        var configuration = HTTPDaemon.Configuration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = threads
        let daemon = HTTPDaemon(configuration: configuration, responder: EchoResponder(),
                                logger: Logger(label: "test") { _ in Recorder(messages: messages) })
        try daemon.start()
        #expect(try HTTPDaemonTests.request(daemon, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n").status == 200)
        daemon.stop()
        let fromLibrary = messages.withLock { $0 }.filter { $0.contains("libmicrohttpd:") }
        #expect(fromLibrary == [], "\(fromLibrary)")
    }
}
