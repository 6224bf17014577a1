"""The progress bar's one rate: sentences/s and tokens/s over the same recent window, and the time left.

    rate = (count(now) - count(t0)) / (now - t0),   t0 = the oldest sample within ``window`` seconds
                                                    (or the one before the last, if none is)

Both rates come from the same two samples, so tokens/s ÷ sentences/s is the window's tokens per
sentence; a cumulative average would lag behind the current speed (and, shown after the bar moved,
a batch late).
"""

from __future__ import annotations

from collections import deque
from datetime import timedelta


class WindowRate:
    """Cumulative (time, sentences, tokens) samples of the last ``window`` seconds."""

    def __init__(self, start: float, window: float = 10.0):
        self.window = window
        self.samples: deque[tuple[float, int, int]] = deque([(start, 0, 0)])

    def add(self, now: float, sentences: int, tokens: int) -> None:
        _, total_sentences, total_tokens = self.samples[-1]
        self.samples.append((now, total_sentences + sentences, total_tokens + tokens))
        while len(self.samples) > 2 and self.samples[0][0] < now - self.window:
            self.samples.popleft()  # older than the window: at least the last step is kept

    def rates(self) -> tuple[float, float]:
        """(sentences/s, tokens/s) between the oldest and the newest sample; zero before any progress."""
        (t0, s0, k0), (t1, s1, k1) = self.samples[0], self.samples[-1]
        if t1 <= t0:
            return 0.0, 0.0
        return (s1 - s0) / (t1 - t0), (k1 - k0) / (t1 - t0)


def describe_rate(sentences_per_s: float, tokens_per_s: float, left: int) -> str:
    """The bar's postfix: both rates and the time the ``left`` sentences take at that rate."""
    eta = str(timedelta(seconds=round(left / sentences_per_s))) if sentences_per_s > 0 else "?"
    return f"{sentences_per_s:,.1f} sent/s, {tokens_per_s:,.0f} tokens/s, {eta} left"
