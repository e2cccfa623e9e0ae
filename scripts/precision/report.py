"""The tally of failures: each counted by category, the first few printed."""

import collections
import threading

CATEGORIES = [
    "missed", "spurious", "repeated", "wrong-value", "out-of-order",
    "split-transaction", "lost-write", "wrong-state", "wrong-reads",
    "wrong-cursor", "wrong-status", "late-wake", "early-wake", "stream", "query-copy", "query-text", "query-old", "query-noop",
    "query-order", "crash",
]


class Report:
    def __init__(self, max_print=25):
        self.counts = collections.Counter()
        self.printed = collections.Counter()
        self.max_print = max_print
        self.lock = threading.Lock()

    def fail(self, category, message, n=1):
        with self.lock:
            self.counts[category] += n
            if self.printed[category] < self.max_print:
                self.printed[category] += 1
                print(f"FAIL [{category}] x{n}: {message}", flush=True)
            elif self.printed[category] == self.max_print:
                self.printed[category] += 1
                print(f"FAIL [{category}]: more failures of this kind are counted, not printed", flush=True)

    def total(self):
        return sum(self.counts.values())

    def table(self, title=""):
        lines = [f"counts{(' (' + title + ')') if title else ''}:"]
        for c in CATEGORIES:
            lines.append(f"  {c:<18} {self.counts.get(c, 0)}")
        lines.append(f"  {'TOTAL':<18} {self.total()}")
        return "\n".join(lines)
