"""The recorder's window (robot_identification.nodes._recording.StampWindow, no ROS): only the
messages stamped within the excitation run are kept, whatever their arrival time - a backlog
from before the run, states after its end (also those that arrived before the end was known,
held back meanwhile) and unstamped messages outside the run are left out."""
from robot_identification.nodes._recording import StampWindow


def test_window_keeps_the_run_by_stamp_not_by_arrival():
    w = StampWindow(tolerance=0.0005, holdback=0.05)   # the end status may come 50 ms late
    written = []
    for k in range(50):                         # before the run: waits
        written += w.offer(k * 0.001, True, ("s", k))
    written += w.offer(None, False, ("c", "before"))
    assert written == []
    written += w.open(0.020)                    # the run's first reference at 0.020 s
    for k in range(50, 100):
        written += w.offer(k * 0.001, True, ("s", k))
        written += w.offer(None, False, ("c", k))
    written += w.close(0.060)                   # its end, known late (states up to 0.099 in)
    for k in range(100, 120):
        written += w.offer(k * 0.001, True, ("s", k))
        written += w.offer(None, False, ("c", k))
    written += w.finish()
    states = [i for kind, i in written if kind == "s"]
    assert states == list(range(20, 61))        # 0.020 ... 0.060 s: within one sample
    commands = [i for kind, i in written if kind == "c"]
    # unstamped: those that arrived after a kept state and before the first state past the end
    assert commands == ["before"] + list(range(50, 61))
    assert w.dropped_before == 20 and w.dropped_after == 59


def test_window_without_a_run_keeps_from_the_given_start():
    w = StampWindow(tolerance=0.0005, holdback=0.01)
    for k in range(10):
        assert w.offer(k * 0.001, True, k) == []
    assert w.finish(lower=0.005) == [5, 6, 7, 8, 9]


def test_references_bound_a_run_whose_status_never_came():
    """No status bounded the window (the recorder never heard the excitation publisher): the
    run's references do - their first and last stamps - when they lie within the states'
    stamps (the same clock); otherwise (another clock) the recording keeps from ``lower``."""
    w = StampWindow(tolerance=0.0005, holdback=0.01)
    written = []
    for k in range(100):
        written += w.offer(k * 0.001, True, ("s", k))
        if 30 <= k <= 60:
            written += w.offer(k * 0.001, False, ("r", k), reference=True)
    written += w.finish(lower=0.0)
    assert [i for kind, i in written if kind == "s"] == list(range(30, 61))
    assert [i for kind, i in written if kind == "r"] == list(range(30, 61))
    assert w.bounded_by == "references" and (w.lower, w.upper) == (0.030, 0.060)
    other = StampWindow(tolerance=0.0005, holdback=0.01)     # references on another clock
    for k in range(10):
        other.offer(k * 0.001, True, k)
        other.offer(1000.0 + k * 0.001, False, ("r", k), reference=True)
    kept = other.finish(lower=0.005)
    assert [i for i in kept if not isinstance(i, tuple)] == [5, 6, 7, 8, 9]
    assert other.bounded_by == "start"


def test_run_periods_before_the_first_and_after_the_last_recorded_state_are_missing():
    from robot_identification.nodes._recording import TopicCount
    c = TopicCount(rate_hz=100.0)
    for k in range(20, 91):                     # states of a run 0.00 ... 1.00 s: 0.20-0.90
        c.add(sequence=k, publisher=b"p", stamp=k * 0.01)
    assert c.summary()["missing"] == 0          # what the stamps alone show
    c.cover(0.0, 1.0)
    s = c.summary()
    assert (s["missing_before_first"], s["missing_after_last"], s["missing"]) == (20, 10, 30)
    assert s["expected"] == 101 and s["longest_gap_s"] == 0.2
    d = TopicCount(rate_hz=100.0)               # complete: nothing added
    for k in range(101):
        d.add(stamp=k * 0.01)
    d.cover(0.0, 1.0)
    assert d.summary()["missing"] == 0 and d.summary()["expected"] == 101
