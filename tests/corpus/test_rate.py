"""The progress bar's rate: sentences/s and tokens/s from the same recent window, current, not a
cumulative average."""

from __future__ import annotations

import pytest

from spacy_contextual.corpus.rate import WindowRate, describe_rate


def test_both_rates_come_from_the_same_window():
    rate = WindowRate(start=0.0, window=10.0)
    for second in range(1, 31):
        rate.add(float(second), 8, 8 * 19)  # 8 sentences of 19 tokens a second
    sentences, tokens = rate.rates()
    assert sentences == pytest.approx(8.0) and tokens == pytest.approx(8 * 19)
    assert tokens / sentences == pytest.approx(19)


def test_the_rate_follows_the_current_speed_not_the_average():
    rate = WindowRate(start=0.0, window=10.0)
    for second in range(1, 61):  # a slow first minute: 1 sentence a second
        rate.add(float(second), 1, 19)
    for second in range(61, 81):  # then 64 sentences a second
        rate.add(float(second), 64, 64 * 19)
    sentences, tokens = rate.rates()
    assert sentences == pytest.approx(64.0) and tokens == pytest.approx(64 * 19)  # the cumulative average: 16.75


def test_a_slow_step_longer_than_the_window_is_its_own_rate():
    rate = WindowRate(start=0.0, window=10.0)
    rate.add(30.0, 300, 5700)
    rate.add(60.0, 150, 2850)
    assert rate.rates() == (pytest.approx(5.0), pytest.approx(95.0))


def test_no_progress_yet_is_zero_and_no_time_left_is_known():
    rate = WindowRate(start=5.0)
    assert rate.rates() == (0.0, 0.0)
    assert describe_rate(*rate.rates(), left=300) == "0.0 sent/s, 0 tokens/s, ? left"


def test_the_postfix_shows_both_rates_and_the_time_left_at_that_rate():
    assert describe_rate(60.5, 1149.5, left=172) == "60.5 sent/s, 1,150 tokens/s, 0:00:03 left"
    assert describe_rate(2.0, 38.0, left=7200) == "2.0 sent/s, 38 tokens/s, 1:00:00 left"
