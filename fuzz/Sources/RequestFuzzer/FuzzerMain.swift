import CFuzzerDriver
import Foundation

/// The executable's entry point hands over to libFuzzer's driver, which
/// calls `LLVMFuzzerTestOneInput` for every input.
@main
enum FuzzerMain {
    static func main() {
        exit(fuzzer_driver_main(CommandLine.argc, CommandLine.unsafeArgv))
    }
}
