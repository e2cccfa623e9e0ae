#ifndef CFUZZERDRIVER_H
#define CFUZZERDRIVER_H

#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer's driver (flags, corpus, mutation loop) with
/// `LLVMFuzzerTestOneInput`. SwiftPM renames the entry point of a debug
/// executable so tests can link it, which keeps libFuzzer's own `main` out of
/// the link; the Swift `@main` calls this instead.
int fuzzer_driver_main(int argc, char **argv);

#endif
